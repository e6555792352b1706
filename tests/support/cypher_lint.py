"""Neo4j 5's own Cypher parser on a list of statements (tests/cypher/lint.mjs: npm
@neo4j-cypher/language-support, with Neo4j 5's built-in functions and procedures), for every test
that checks its statements are Neo4j 5 Cypher."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

LINT = Path(__file__).resolve().parents[1] / "cypher" / "lint.mjs"


def lint(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lint script's answer for each {query, params} (params None: syntax and names only)."""
    if shutil.which("node") is None or not (LINT.parent / "node_modules").is_dir():
        pytest.fail("tests/cypher needs node and its npm packages: run scripts/bootstrap.sh")
    done = subprocess.run(
        ["node", str(LINT)], input=json.dumps(items), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
