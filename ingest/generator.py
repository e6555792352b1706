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
"""

from __future__ import annotations

import argparse
import json
import random
import sys
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


@dataclass
class Table:
    id: str
    layer: str
    columns: list[str]
    hourly: bool = False
    json_column: bool = False
    ttl_days: int = 90

    def catalog_entry(self) -> dict:
        partitions = ["dt", "hour"] if self.hourly else ["dt"]
        return {
            "columns": [{"name": c, "type": "string"} for c in self.columns],
            "partitioned_by": [{"name": p, "type": "string"} for p in partitions],
            "format": "orc",
            "layer": self.layer,
            "owner": f"team_{self.layer}",
            "ttl_days": self.ttl_days,
        }


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
    extra = ["payload"] if json_column else []
    fillers = [f"f{i}" for i in range(max(0, width - len(base) - len(extra)))]
    return Table(
        f"ods.src_{index}",
        "ods",
        base + extra + fillers,
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
    out: Path, tables: list[Table], catalog: dict[str, dict], partitions: int, seed: int
) -> int:
    """Small ORC partitions (`location/dt=.../part-0.orc`) for some ODS tables, so sizes can be measured."""
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
        catalog[table.id]["location"] = str(location)
    return files


def write_content(
    out: Path,
    cleaned: list[tuple[str, Table, list[tuple[str, str]]]],
    catalog: dict[str, dict],
    tables: int,
    seed: int,
    rows: int = 200,
) -> list[str]:
    """Discovery content for `tables` ODS tables with every filler of demo_content.FILLERS, and for
    the DWD tables cleaned from them (in task order); the first one's `phone` holds device models.
    Their catalog entries get the location. Returns the tables written."""
    from watershed.ingest import demo_content

    rng = random.Random(seed * 7919 + 1)
    sources: dict[str, dict[str, list]] = {}
    written: list[str] = []
    for target, source, pairs in cleaned:
        if source.id not in sources:
            if (
                source.layer != "ods"
                or len(sources) >= tables
                or not set(demo_content.FILLERS) <= set(source.columns)
            ):
                continue
            values = demo_content.source_values(source.columns, rows, rng, devices=not sources)
            sources[source.id] = values
            _write_content_table(out, source, values, catalog)
            written.append(source.id)
        if target.startswith("dwd.") and target in catalog:
            values = demo_content.derived_values(pairs, sources[source.id], rows)
            _write_content_table(out, Table(target, "dwd", list(values)), values, catalog)
            written.append(target)
    return written


def _write_content_table(out: Path, table: Table, values: dict[str, list], catalog: dict[str, dict]) -> None:
    from watershed.ingest.demo_content import write_table

    location = out / "data" / table.id.replace(".", "/")
    partitions = [f"dt={RUN_DATE}"] + (["hour=00"] if table.hourly else [])
    write_table(location, values, partitions)
    catalog[table.id]["location"] = str(location)


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
    layers = {"ods": ods, "dwd": [], "dws": [], "ads": []}
    plan = ["dwd"] * int(tasks * 0.45) + ["dws"] * int(tasks * 0.35)
    plan += ["ads"] * (tasks - len(plan))
    broken = max(1, tasks // 100) if broken is None else broken
    broken_at = set(rng.sample(range(tasks), min(broken, tasks)))
    summary = Summary()
    catalog: dict[str, dict] = {t.id: t.catalog_entry() for t in ods}
    #: (target, source, projections) of each clean task: what the content's derived values follow
    cleaned: list[tuple[str, Table, list[tuple[str, str]]]] = []
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
                    cleaned.append((target, source, pairs))
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
                table = Table(target, layer, columns, ttl_days=rng.choice([30, 60, 90, 180]))
                layers[layer].append(table)
                catalog[target] = table.catalog_entry()
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
    if data_tables:
        write_sample_data(out, ods[:data_tables], catalog, data_partitions, seed)
    if content_tables:
        write_content(out, cleaned, catalog, content_tables, seed)
    (out / "catalog.json").write_text(json.dumps({"tables": catalog}, indent=1, sort_keys=True))
    summary.tables = len(catalog)
    summary.columns = sum(len(e["columns"]) + len(e["partitioned_by"]) for e in catalog.values())
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
