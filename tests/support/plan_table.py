"""The one table of the protection plan tests (tests/orc_crypto/test_protect_plan.py,
test_plan_batches.py, test_protect_plan_fixes.py): its tags, a policy over them, the table put in
the graph by hand, its ORC files, and an apply done by hand; the table's fixtures (`provider`,
`warehouse`) are tests/orc_crypto/conftest.py's."""

from __future__ import annotations

import json

from watershed.graph.protection import ProtectionPolicy, ProtectionRule, TableProtection
from watershed.orc_crypto.encrypt import encrypt_file
from watershed.orc_crypto.protect import records

TABLE = "dw.users"
PROVENANCE = [["ods.src.ssn", "task_7", "direct", "identity", 1]]


def tags(level: str, origin: str = "propagated") -> str:
    return json.dumps({"pii": {"v": [level], "o": origin, "p": PROVENANCE if origin == "propagated" else []}})


def policy(**changes) -> ProtectionPolicy:
    rules = [
        ProtectionRule(tag="pii", levels=["L4", "L3"], key="pii", mask="nullify"),
        ProtectionRule(tag="pii", levels=["L2"], key="fin", mask="sha256"),
    ]
    return ProtectionPolicy(rules=changes.pop("rules", rules), **changes)


def set_table(store, table: str, location: str | None, columns: dict[str, str | None], fmt="orc") -> None:
    store.write_all(
        [
            # the catalog's column order, as a harvest records it (the planner lists columns so);
            # a column named again keeps its place
            ("MERGE (t:Table {id: $id}) SET t.location = $location, t.format = $format, "
             "t.column_order = coalesce(t.column_order, []) "
             "+ [n IN $order WHERE NOT n IN coalesce(t.column_order, [])]",
             {"id": table, "location": location, "format": fmt, "order": list(columns)}),
            *[
                ("MATCH (t:Table {id: $t}) MERGE (t)-[:HAS_COLUMN]->(c:Column {id: $id}) "
                 "SET c.name = $name, c.type = 'string', c.tags = $tags",
                 {"t": table, "id": f"{table}.{name}", "name": name, "tags": text})
                for name, text in columns.items()
            ],
        ]
    )  # fmt: skip


def files(location):
    return sorted(str(p) for p in location.rglob("part-0.orc"))


def apply(store, plan, provider) -> None:
    """What an apply does, by hand: rewrite each planned file, record the table's options."""
    for table in plan.tables:
        for item in table.files:
            encrypt = {}
            for name, key in item.columns.items():
                encrypt.setdefault(key.key, []).append(name)
            masks = {name: key.mask for name, key in item.columns.items()}
            encrypt_file(item.path, item.path, provider, encrypt, masks, in_place=True)
        wanted = {c.name: c.want for c in table.columns if c.want}
        records.save_table(
            store, TableProtection(table=table.table, columns=wanted, ddl=table.ddl, at="t", run="r1")
        )
