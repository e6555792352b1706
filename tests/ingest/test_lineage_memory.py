"""Issue 11 item 16: `watershed lineage` on a script of thousands of statements keeps its memory bounded.

The script (a few MB of warehouse-shaped statements from the lineage benchmark's
generator) runs in a real `watershed lineage` subprocess. Its peak resident size
is read in a wrapper process whose only child it is (RUSAGE_CHILDREN), so no other
child of the test session counts. Before the fix the JSON output alone took about
1.8 GB per MB of script (3.2 GB for 1.75 MB); now it takes well under 400 MB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.lineage_bench import corpus

#: the tree this test sits in: `python -m api.cli` from there runs its own code
ROOT = Path(__file__).resolve().parents[2]
STATEMENTS = 3000
#: MB of peak RSS allowed for the whole CLI process (interpreter and libraries included)
BOUND_MB = 400

_WRAPPER = """
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    code = subprocess.run(sys.argv[2:], stdout=out).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_rss_mb(command: list[str], output: Path) -> tuple[int, float]:
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(output), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    code, kilobytes = done.stdout.split()
    return int(code), int(kilobytes) / 1024


def test_lineage_of_a_multi_megabyte_script_stays_under_the_memory_bound(tmp_path: Path) -> None:
    sqls, _tables = corpus(STATEMENTS, seed=11)
    script = tmp_path / "big.sql"
    script.write_text(";\n".join(sqls) + ";\n")
    assert script.stat().st_size > 2_000_000

    output = tmp_path / "lineage.json"
    code, peak = _peak_rss_mb(
        [sys.executable, "-m", "watershed.api.cli", "lineage", str(script), "--format", "json"], output
    )

    assert code == 0
    result = json.loads(output.read_text())
    assert len(result["statements"]) == STATEMENTS
    assert not result["errors"]
    assert result["writes"] and result["columns"]
    assert peak < BOUND_MB, f"peak RSS {peak:.0f} MB for a {script.stat().st_size / 1e6:.1f} MB script"
