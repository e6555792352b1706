"""A synthetic warehouse: layered tables, a catalog and warehouse-shaped Hive tasks.

    watershed generate OUT_DIR [--tasks 500] [--seed 7]   (or python -m watershed.ingest.generator)

Deterministic from the seed (the same seed gives byte-identical files). ODS
tables are sources; every DWD, DWS and ADS table is written by one task that
reads the layer below: cleaning through a temporary view, joins on ids,
aggregates with CASE and windows, UNION ALL of per-app tables, CTEs, JSON
keys, filters on business dimensions, partition windows of 1, 7, 30 and 90
days or none. A few tasks overwrite their own table (lineage cycles) and a
few are deliberately broken. Written: `tasks/<layer>/<task>.sql` with header
comments, `tasks.jsonl` (the same tasks as an export), and `catalog.json`.

Memory is bounded by the tables, not their catalog: each task is written as it is made, a table is
kept as one compact record (its column names interned, ODS column lists shared), and catalog.json
is streamed from the records table by table at the end (the same bytes `json.dumps(indent=1,
sort_keys=True)` of the whole catalog gives).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watershed.graph.catalog import Catalog

APPS = ["douyin", "toutiao", "xigua", "lark", "pipixia"]
APP_IDS = {"douyin": 1128, "toutiao": 13, "xigua": 32, "lark": 1}
REGIONS = ["cn", "sg", "us", "eu"]
WINDOWS = [
    ("1", "{a}dt = '${{date}}'"),
    ("7", "{a}dt >= date_sub('${{date}}', 6)"),
    ("30", "{a}dt BETWEEN date_add('${{date}}', -29) AND '${{date}}'"),
    ("90", "datediff('${{date}}', {a}dt) < 90"),
    ("none", ""),
]
RUN_DATE = "2024-01-31"


@dataclass(slots=True)
class Table:
    """One table as the generator keeps it for every later task: a few hundred bytes at most
    (slots, and `columns` a tuple of interned names), since 10M columns means 330,000 of them."""

    id: str
    layer: str
    columns: tuple[str, ...]
    hourly: bool = False
    json_column: bool = False
    ttl_days: int = 90

    @property
    def column_count(self) -> int:
        """Its columns with the partition columns, as the catalog lists them."""
        return len(self.columns) + (2 if self.hourly else 1)


def _names(columns: Iterable[str]) -> tuple[str, ...]:
    # Derived tables repeat a few thousand names (`f3_norm`, `r_email`) millions of times.
    return tuple(sys.intern(c) for c in columns)


#: (JSON column, width) -> the ODS column names: 142 tuples shared by every ODS table
_ODS_COLUMNS: dict[tuple[bool, int], tuple[str, ...]] = {}


@dataclass
class Summary:
    tables: int = 0
    columns: int = 0
    tasks: int = 0
    broken: int = 0
    cycles: int = 0
    layers: dict[str, int] = field(default_factory=dict)


def _ods_table(rng: random.Random, index: int) -> Table:
    width = rng.randint(10, 80)
    base = ["uid", "item_id", "app", "app_id", "region", "event", "amount", "duration_ms", "email", "phone"]
    json_column = rng.random() < 0.4
    columns = _ODS_COLUMNS.get((json_column, width))
    if columns is None:
        extra = ["payload"] if json_column else []
        fillers = [f"f{i}" for i in range(max(0, width - len(base) - len(extra)))]
        columns = _ODS_COLUMNS.setdefault((json_column, width), _names(base + extra + fillers))
    return Table(
        f"ods.src_{index}",
        "ods",
        columns,
        hourly=rng.random() < 0.2,
        json_column=json_column,
        ttl_days=rng.choice([90, 180, 365]),
    )


def _window(rng: random.Random, alias: str) -> str:
    _days, template = rng.choices(WINDOWS, weights=[40, 25, 15, 10, 10])[0]
    return template.format(a=alias)


def _app_filter(rng: random.Random, alias: str, source: Table) -> str:
    roll = rng.random()
    if roll < 0.45 and "app_id" not in source.columns:
        roll = 0.0
    if 0.45 <= roll < 0.55 and "region" not in source.columns:
        return ""
    if roll < 0.3:
        apps = rng.sample(APPS, rng.randint(1, 3))
        return f"{alias}app IN ({', '.join(repr(a) for a in apps)})"
    if roll < 0.45:
        return f"{alias}app_id = {APP_IDS[rng.choice(list(APP_IDS))]}"
    if roll < 0.55:
        return f"{alias}region = '{rng.choice(REGIONS)}'"
    return ""


def _where(*conditions: str) -> str:
    kept = [c for c in conditions if c]
    return f"WHERE {' AND '.join(kept)}" if kept else ""


def _projections(rng: random.Random, source: Table, alias: str, width: int) -> list[tuple[str, str]]:
    """(expression, output name) pairs: ids and dimensions first, then a mix of shapes."""
    out = [(f"{alias}{c}", c) for c in ("uid", "app", "region") if c in source.columns]
    candidates = [c for c in source.columns if c not in ("uid", "app", "region")]
    rng.shuffle(candidates)
    for column in candidates[: max(0, width - len(out))]:
        shape = rng.random()
        if shape < 0.45:
            out.append((f"{alias}{column}", column))
        elif shape < 0.6:
            out.append((f"upper(trim({alias}{column}))", f"{column}_norm"))
        elif shape < 0.7:
            condition = "amount" if "amount" in source.columns else "uid"
            out.append(
                (f"CASE WHEN {alias}{condition} > 100 THEN {alias}{column} ELSE NULL END", f"{column}_big")
            )
        elif shape < 0.8:
            out.append((f"md5({alias}{column})", f"{column}_hash"))
        elif shape < 0.9:
            out.append((f"coalesce({alias}{column}, '')", f"{column}_nn"))
        else:
            out.append((f"cast({alias}{column} AS string)", f"{column}_s"))
    if source.json_column and "payload" not in {name for _, name in out}:
        out.append((f"get_json_object({alias}payload, '$.page.name')", "page"))
    seen: set[str] = set()
    unique = []
    for expression, name in out:
        if name not in seen:
            seen.add(name)
            unique.append((expression, name))
    return unique


def _select_list(pairs: list[tuple[str, str]]) -> str:
    return ",\n       ".join(
        expression if expression.endswith(f".{name}") or expression == name else f"{expression} AS {name}"
        for expression, name in pairs
    )


def _task_clean(rng, task_id, target, source) -> tuple[str, list[str], list[tuple[str, str]]]:
    pairs = _projections(rng, source, "", rng.randint(10, 60))
    view = f"v_{task_id}"
    sql = (
        f"CREATE TEMPORARY VIEW {view} AS\nSELECT {_select_list(pairs)}\nFROM {source.id}\n"
        f"{_where(_window(rng, ''), _app_filter(rng, '', source))};\n\n"
        f"INSERT OVERWRITE TABLE {target} PARTITION (dt = '${{date}}')\n"
        f"SELECT {', '.join(name for _, name in pairs)}\nFROM {view};\n"
    )
    return sql, [name for _, name in pairs], pairs


def _task_join(rng, task_id, target, left, right) -> tuple[str, list[str]]:
    pairs = _projections(rng, left, "a.", rng.randint(8, 40))
    right_columns = [c for c in right.columns if c not in ("uid", "app", "region", "app_id")][
        : rng.randint(2, 12)
    ]
    names = {name for _, name in pairs}
    pairs += [(f"b.{c}", f"r_{c}") for c in right_columns if f"r_{c}" not in names]
    join = rng.choice(["JOIN", "LEFT JOIN"])
    sql = (
        f"INSERT OVERWRITE TABLE {target} PARTITION (dt = '${{date}}')\n"
        f"SELECT {_select_list(pairs)}\nFROM {left.id} a\n{join} {right.id} b ON a.uid = b.uid AND {_window(rng, 'b.') or 'b.dt = ' + repr('${date}')}\n"
        f"{_where(_window(rng, 'a.'), _app_filter(rng, 'a.', left))};\n"
    )
    return sql, [name for _, name in pairs]


def _task_aggregate(rng, task_id, target, source) -> tuple[str, list[str]]:
    measures = [c for c in source.columns if c not in ("uid", "app", "region", "app_id")][
        : rng.randint(4, 30)
    ]
    if not measures:
        measures = ["region"] if "region" in source.columns else ["app"]
    aggregates = []
    for column in measures:
        function = rng.choice(["sum", "max", "min", "count", "count(DISTINCT", "collect_set"])
        if function == "count(DISTINCT":
            aggregates.append((f"count(DISTINCT {column})", f"{column}_ucnt"))
        else:
            aggregates.append((f"{function}({column})", f"{column}_{function}"))
    outputs = ["uid", "app", *[name for _, name in aggregates], "rk"]
    sql = (
        f"WITH base AS (\n  SELECT uid, app, {', '.join(measures)}\n  FROM {source.id}\n  "
        f"{_where(_window(rng, ''), _app_filter(rng, '', source))}\n), agg AS (\n"
        f"  SELECT uid, app, {', '.join(f'{e} AS {n}' for e, n in aggregates)}\n  FROM base GROUP BY uid, app\n)\n"
        f"INSERT OVERWRITE TABLE {target} PARTITION (dt = '${{date}}')\n"
        f"SELECT uid, app, {', '.join(n for _, n in aggregates)},\n"
        f"       row_number() OVER (PARTITION BY app ORDER BY {aggregates[0][1]} DESC) AS rk\nFROM agg;\n"
    )
    return sql, outputs


def _task_union(rng, task_id, target, sources) -> tuple[str, list[str]]:
    shared = set.intersection(*(set(s.columns) for s in sources)) - {"app"}
    common = ["uid", *sorted(c for c in shared if c != "uid")[:24]]
    branches = []
    for source, app in zip(sources, rng.sample(APPS, len(sources)), strict=False):
        branches.append(
            f"SELECT '{app}' AS app, {', '.join(common)} FROM {source.id} {_where(_window(rng, ''), f'app = {app!r}')}"
        )
    sql = (
        f"INSERT OVERWRITE TABLE {target} PARTITION (dt = '${{date}}')\n"
        + "\nUNION ALL\n".join(branches)
        + ";\n"
    )
    return sql, ["app", *common]


def _task_self_overwrite(rng, task_id, target_table: Table, source) -> str:
    columns = target_table.columns
    return (
        f"INSERT OVERWRITE TABLE {target_table.id} PARTITION (dt = '${{date}}')\n"
        f"SELECT {', '.join(columns)} FROM {target_table.id} WHERE dt = date_sub('${{date}}', 1)\n"
        f"UNION ALL\nSELECT {', '.join(c if c in source.columns else 'NULL' for c in columns)} "
        f"FROM {source.id} WHERE dt = '${{date}}';\n"
    )


BROKEN = [
    "INSERT OVERWRITE TABLE {t} SELECT uid, FROM {s} WHERE;",
    "INSERT OVERWRITE TABLE {t} SELECT (uid FROM {s};",
    "INSERT OVERWRITE TABLE {t} SELECT 'unterminated FROM {s};",
]


def write_sample_data(
    out: Path, tables: Sequence[Table], locations: dict[str, str], partitions: int, seed: int
) -> int:
    """Small ORC partitions (`location/dt=.../part-0.orc`) for some ODS tables, so sizes can be
    measured; each table's location goes into `locations` (table id -> directory)."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.orc as orc

    rng = random.Random(seed)
    run_date = dt.date.fromisoformat(RUN_DATE)
    files = 0
    for table in tables:
        location = out / "data" / table.id.replace(".", "/")
        rows = rng.randint(100, 400)
        # Column widths differ a lot in a real table: a JSON payload dwarfs an id.
        columns = {
            name: pa.array(
                [
                    ("x" * rng.randint(50, 400))
                    if name in ("payload", "email")
                    else str(rng.randrange(10**6))
                    for _ in range(rows)
                ]
            )
            for name in table.columns
        }
        data = pa.table(columns)
        for day in range(partitions):
            partition = location / f"dt={(run_date - dt.timedelta(days=day)).isoformat()}"
            partition.mkdir(parents=True, exist_ok=True)
            orc.write_table(data, str(partition / "part-0.orc"))
            files += 1
        locations[table.id] = str(location)
    return files


class ContentPlan:
    """The clean tasks whose tables get discovery content: the first `tables` ODS sources (in task
    order) with every filler of demo_content.FILLERS, and the tasks cleaning them. Chosen as the
    tasks are made, so only these are kept (not every clean task's projections)."""

    def __init__(self, tables: int) -> None:
        self.tables = tables
        self.sources: set[str] = set()
        self.cleaned: list[tuple[str, Table, list[tuple[str, str]]]] = []

    def add(self, target: str, source: Table, pairs: list[tuple[str, str]]) -> None:
        if source.id not in self.sources:
            if source.layer != "ods" or len(self.sources) >= self.tables:
                return
            # demo_content (and its stdnum) only when content is asked for
            from watershed.ingest.demo_content import FILLERS

            if not set(FILLERS) <= set(source.columns):
                return
            self.sources.add(source.id)
        self.cleaned.append((target, source, pairs))


def write_content(
    out: Path, plan: ContentPlan, locations: dict[str, str], seed: int, rows: int = 200
) -> list[str]:
    """Discovery content for the plan's ODS tables, and for the DWD tables cleaned from them (in
    task order); the first one's `phone` holds device models. Their locations go into
    `locations`. Returns the tables written."""
    from watershed.ingest import demo_content

    rng = random.Random(seed * 7919 + 1)
    sources: dict[str, dict[str, list]] = {}
    written: list[str] = []
    for target, source, pairs in plan.cleaned:
        if source.id not in sources:
            values = demo_content.source_values(source.columns, rows, rng, devices=not sources)
            sources[source.id] = values
            _write_content_table(out, source, values, locations)
            written.append(source.id)
        if target.startswith("dwd."):
            values = demo_content.derived_values(pairs, sources[source.id], rows)
            _write_content_table(out, Table(target, "dwd", tuple(values)), values, locations)
            written.append(target)
    return written


def _write_content_table(out: Path, table: Table, values: dict[str, list], locations: dict[str, str]) -> None:
    from watershed.ingest.demo_content import write_table

    location = out / "data" / table.id.replace(".", "/")
    partitions = [f"dt={RUN_DATE}"] + (["hour=00"] if table.hourly else [])
    write_table(location, values, partitions)
    locations[table.id] = str(location)


def write_catalog(path: Path, tables: Iterable[Table], locations: dict[str, str]) -> None:
    """catalog.json, one table's entry at a time in sorted id order: byte for byte what
    `json.dumps({"tables": catalog}, indent=1, sort_keys=True)` writes, without holding it (and
    without json's pure-Python indenting encoder, three quarters of the generator's time)."""
    by_id = sorted(tables, key=lambda t: t.id)
    #: column name -> its object's text: a few thousand names repeat over millions of columns
    blocks: dict[str, str] = {}
    with path.open("w") as out:
        out.write('{\n "tables": {')
        separator = "\n  "
        for table in by_id:
            out.write(
                f"{separator}{json.dumps(table.id)}: {_entry_text(table, locations.get(table.id), blocks)}"
            )
            separator = ",\n  "
        out.write("\n }\n}" if by_id else "}\n}")


def _entry_text(table: Table, location: str | None, blocks: dict[str, str]) -> str:
    """A table's catalog entry as json.dumps(indent=1, sort_keys=True) lays it out two levels
    down: its keys in sorted order, every column a {"name", "type": "string"} object."""
    located = f'   "location": {json.dumps(location)},\n' if location is not None else ""
    return (
        f'{{\n   "columns": {_columns_text(table.columns, blocks)},\n   "format": "orc",\n'
        f'   "layer": {json.dumps(table.layer)},\n{located}   "owner": {json.dumps(f"team_{table.layer}")},\n'
        f'   "partitioned_by": {_columns_text(("dt", "hour") if table.hourly else ("dt",), blocks)},\n'
        f'   "ttl_days": {table.ttl_days}\n  }}'
    )


def _columns_text(names: Sequence[str], blocks: dict[str, str]) -> str:
    if not names:
        return "[]"
    texts = []
    for name in names:
        text = blocks.get(name)
        if text is None:
            text = blocks[name] = f'    {{\n     "name": {json.dumps(name)},\n     "type": "string"\n    }}'
        texts.append(text)
    return "[\n" + ",\n".join(texts) + "\n   ]"


def generate_warehouse(
    out_dir: str | Path,
    tasks: int = 500,
    seed: int = 7,
    broken: int | None = None,
    data_tables: int = 0,
    data_partitions: int = 30,
    content_tables: int = 0,
) -> Summary:
    """Write the warehouse; with `data_tables`, that many ODS tables also get ORC partitions; with
    `content_tables`, that many ODS tables and the DWD tables cleaned from them get an ORC file of
    discovery content (ingest/demo_content.py). Neither changes the tables, columns or tasks."""
    rng = random.Random(seed)
    out = Path(out_dir)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    n_ods = max(3, tasks // 2)
    ods = [_ods_table(rng, i) for i in range(n_ods)]
    layers: dict[str, list[Table]] = {"ods": ods, "dwd": [], "dws": [], "ads": []}
    plan = ["dwd"] * int(tasks * 0.45) + ["dws"] * int(tasks * 0.35)
    plan += ["ads"] * (tasks - len(plan))
    broken = max(1, tasks // 100) if broken is None else broken
    broken_at = set(rng.sample(range(tasks), min(broken, tasks)))
    summary = Summary()
    #: the clean tasks the content's derived values follow
    content = ContentPlan(content_tables)
    with (out / "tasks.jsonl").open("w") as export:
        for index, layer in enumerate(plan):
            below = {
                "dwd": layers["ods"],
                "dws": layers["dwd"] or layers["ods"],
                "ads": layers["dws"] or layers["dwd"],
            }[layer]
            task_id = f"{layer}_task_{index}"
            target = f"{layer}.t_{index}"
            if index in broken_at:
                sql = rng.choice(BROKEN).format(t=target, s=rng.choice(below).id)
                summary.broken += 1
            elif layers[layer] and rng.random() < 0.02:
                table = rng.choice(layers[layer])
                sql = _task_self_overwrite(rng, task_id, table, rng.choice(below))
                target = table.id
                summary.cycles += 1
            else:
                shape = rng.random()
                if layer == "dwd" or shape < 0.2:
                    source = rng.choice(below)
                    sql, columns, pairs = _task_clean(rng, task_id, target, source)
                    content.add(target, source, pairs)
                elif shape < 0.5:
                    sql, columns = _task_join(
                        rng,
                        task_id,
                        target,
                        *rng.sample(below, 2) if len(below) > 1 else (below[0], below[0]),
                    )
                elif shape < 0.8:
                    sql, columns = _task_aggregate(rng, task_id, target, rng.choice(below))
                else:
                    sql, columns = _task_union(rng, task_id, target, rng.sample(below, min(3, len(below))))
                table = Table(target, layer, _names(columns), ttl_days=rng.choice([30, 60, 90, 180]))
                layers[layer].append(table)
            header = f"-- task: {task_id}\n-- owner: team_{layer}\n-- dialect: hive\n-- schedule: daily\n-- vars: date={RUN_DATE}\n"
            path = out / "tasks" / layer / f"{task_id}.sql"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header + sql)
            export.write(
                json.dumps(
                    {
                        "task_id": task_id,
                        "version": None,
                        "sql": sql,
                        "dialect": "hive",
                        "owner": f"team_{layer}",
                        "schedule": "daily",
                        "vars": {"date": RUN_DATE},
                    },
                    sort_keys=True,
                )
                + "\n"
            )
            summary.tasks += 1
    locations: dict[str, str] = {}
    if data_tables:
        write_sample_data(out, ods[:data_tables], locations, data_partitions, seed)
    if content_tables:
        write_content(out, content, locations, seed)
    every_table = [table for tables in layers.values() for table in tables]
    write_catalog(out / "catalog.json", every_table, locations)
    summary.tables = len(every_table)
    summary.columns = sum(table.column_count for table in every_table)
    summary.layers = {name: len(tables) for name, tables in layers.items()}
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out_dir")
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-tables", type=int, default=0, help="ODS tables that also get ORC data files")
    parser.add_argument("--data-partitions", type=int, default=30, help="daily partitions per such table")
    parser.add_argument(
        "--content-tables",
        type=int,
        default=0,
        help="ODS tables (and their DWD copies) with discovery content",
    )
    args = parser.parse_args(argv)
    summary = generate_warehouse(
        args.out_dir,
        args.tasks,
        args.seed,
        data_tables=args.data_tables,
        data_partitions=args.data_partitions,
        content_tables=args.content_tables,
    )
    print(json.dumps(summary.__dict__))


#: the stewards' values `seed_apps` sets (the demo's and the propagation tests' seeds)
SEEDED_APPS = ["douyin", "toutiao", "xigua", "lark"]


def seed_apps(tags, catalog: Catalog) -> int:
    # duck-typed `tags` (propagation's tag stores): ingest sits below propagation
    """Stewards' app values on every ODS table that has an `app` column, and on that column."""
    seeded = 0
    for table_id, entry in sorted(catalog.tables.items()):
        if table_id.startswith("ods.") and "app" in entry.all_columns:
            values = SEEDED_APPS[: 2 + seeded % 3]
            tags.set_tag(table_id, "app", values, by="demo")
            tags.set_tag(f"{table_id}.app", "app", values, by="demo")
            seeded += 1
    return seeded


if __name__ == "__main__":
    sys.exit(main())
