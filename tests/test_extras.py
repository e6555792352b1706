"""An install without the extras: the core commands work, the others name the extra to install.

The extras' modules are hidden from a real `watershed` process by an import hook (the
packages stay installed in the venv the tests run from).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SAMPLE = (
    Path(__file__).resolve().parent.parent / "ingest" / "samples" / "warehouse" / "01_ods_to_dwd_events.sql"
)
EXTRAS_MODULES = ("pyspark", "neo4j", "fastapi", "uvicorn", "starlette", "jks")

LAUNCHER = textwrap.dedent(
    """
    import sys

    class HideExtras:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    HIDDEN = set(sys.argv[1].split(","))
    sys.meta_path.insert(0, HideExtras())
    sys.argv = ["watershed", *sys.argv[2:]]
    from watershed.api.cli import main
    main()
    """
)


def watershed_without_extras(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", LAUNCHER, ",".join(EXTRAS_MODULES), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_core_commands_work_without_extras():
    lineage = watershed_without_extras("lineage", str(SAMPLE), "--format", "json")
    assert lineage.returncode == 0, lineage.stderr
    assert json.loads(lineage.stdout)["task_id"] == "01_ods_to_dwd_events"
    version = watershed_without_extras("--version")
    assert version.returncode == 0 and version.stdout.startswith("watershed ")


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["kms", "serve", "--keystore", "nowhere.json"], "kms"),
        (["graph", "stats"], "neo4j"),
        (["harvest", "--tasks", str(SAMPLE.parent), "--no-graph"], "spark"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(tmp_path, args, extra):
    env = {**os.environ, "WATERSHED_BACKEND": "neo4j", "WATERSHED_DATA_DIR": str(tmp_path)}
    result = watershed_without_extras(*args, env=env)
    assert result.returncode == 1, result.stderr
    assert f"pip install 'watershed-lineage[{extra}]'" in result.stderr
    assert "Traceback" not in result.stderr
