"""Re-create the vendored TPC-H/TPC-DS query files from a local clone of sqlglot (offline).

    .venv/bin/python bench/corpora/vendor_tpc.py /path/to/sqlglot/git-dir [commit]

sqlglot's optimizer fixtures hold each TPC query followed by sqlglot's optimised form of it; only
the first (the query as the TPC publishes it) is kept. The schemas come from sqlglot's
tests/helpers.py. Nothing here runs at bench time: the bench reads the written files.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

HEADER = """-- {name} queries, one statement each, as SELECTs (the benches wrap them as INSERT OVERWRITE).
-- Source: the {name} specification's query templates, (c) Transaction Processing Performance
-- Council (TPC), https://www.tpc.org. {name} is a trademark of the TPC. These texts are used as
-- parser/lineage test input only; nothing measured with them is a TPC benchmark result.
-- Transcribed from sqlglot's test fixtures (MIT licence, (c) Toby Mao),
-- github.com/tobymao/sqlglot {path} at commit {commit}.
"""


def _git_show(git_dir: str, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _queries(text: str) -> list[str]:
    # sqlglot's own fixture loader: drop "--" lines, split on ";", input/expected pairs.
    body = "\n".join(line for line in text.splitlines() if line and not line.startswith("--"))
    statements = body.split(";")
    out = []
    for i in range(0, len(statements) - 1, 2):
        lines = statements[i].strip().split("\n")
        while lines and lines[0].startswith("#"):
            lines.pop(0)
        out.append("\n".join(lines).strip())
    return out


def _schema(helpers: str, name: str) -> dict:
    for node in ast.parse(helpers).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise SystemExit(f"{name} not found in tests/helpers.py")


def main() -> None:
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    commit = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    helpers = _git_show(git_dir, commit, "tests/helpers.py")
    for key, name, path, schema_name in [
        ("tpch", "TPC-H", "tests/fixtures/optimizer/tpc-h/tpc-h.sql", "TPCH_SCHEMA"),
        ("tpcds", "TPC-DS", "tests/fixtures/optimizer/tpc-ds/tpc-ds.sql", "TPCDS_SCHEMA"),
    ]:
        queries = _queries(_git_show(git_dir, commit, path))
        parts = [HEADER.format(name=name, path=path, commit=commit)]
        for n, query in enumerate(queries, start=1):
            parts.append(f"\n-- {name} {n}\n{query};\n")
        (HERE / f"{key}.sql").write_text("".join(parts))
        (HERE / f"{key}_schema.json").write_text(json.dumps(_schema(helpers, schema_name), indent=1) + "\n")
        print(f"{key}: {len(queries)} queries")


if __name__ == "__main__":
    main()
