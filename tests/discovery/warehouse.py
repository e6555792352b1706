"""A labelled table for discovery tests: columns whose names say nothing, sensitive and decoys."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq

from bench.pii_values import column_values

#: column -> the kind of values it holds (bench/pii_values.KINDS)
LABELLED = {
    "c17": "cn_mobile",
    "ext_info": "email",
    "k3": "cn_ric",
    "c4": "bank_card",
    "contact": "us_phone",
    "x9": "ssn",
    "src": "ipv4",
    "c5": "ric_bad_check",
    "c6": "card_bad_check",
    "digest": "md5",
    "amt": "amount",
    "order_no": "order_number",
    "town": "city",
}
#: column -> the pii_type discovery must propose (the others must not be proposed)
EXPECTED = {
    "c17": "phone",
    "ext_info": "email",
    "k3": "id_card",
    "c4": "bank_card",
    "contact": "phone",
    "x9": "ssn",
    "src": "ip",
}


def labelled_table(rows: int = 120, seed: int = 11) -> pa.Table:
    r = random.Random(seed)
    columns = {name: column_values(kind, rows, r, nulls=0.1) for name, kind in LABELLED.items()}
    table = pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()})
    return table.append_column("amount_num", pa.array([r.random() * 1000 for _ in range(rows)], pa.float64()))


def write_parquet(directory: Path, table: pa.Table, files: int = 2) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    step = -(-table.num_rows // files)
    paths = []
    for i in range(files):
        path = directory / f"part-{i:05d}.snappy.parquet"
        pq.write_table(table.slice(i * step, step), path, row_group_size=50)
        paths.append(path)
    (directory / "_SUCCESS").write_text("")
    return paths


def write_orc(directory: Path, table: pa.Table, name: str = "000000_0") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    orc.write_table(table, str(path), stripe_size=64 * 1024)
    return path


def sampled_values(table: pa.Table) -> set[str]:
    """Every sensitive value of the table (the ones that must never leave memory)."""
    return {
        v
        for name, kind in LABELLED.items()
        if name in EXPECTED
        for v in table.column(name).to_pylist()
        if v is not None
    }
