"""The warehouse generator's peak memory, old code against new in one run (issue 41).

    .venv/bin/python bench/generator_memory_bench.py [--tasks 20000,100000] [--old REV] [--new-only]

For each size (tasks; the generator makes about 45 columns per task) each generator runs
`generate_warehouse(out, tasks, seed)` in a child process of its own, whose peak resident set
(VmHWM) is the generator's peak: `peak_mib`. `base_mib` is the child's resident set just before
the call (Python and the module), `generate_mib` the peak above it. "old" is
`git show REV:ingest/generator.py` (default: the commit before the generator streamed its
catalog) loaded from a temporary file, "new" the working tree's ingest/generator.py, loaded
the same way.
Both write under the same relative path (`wh`, in a directory of their own), so their files can
be compared byte for byte: `same_files` is whether every file's bytes came out the same
(`files` counts them). The exponents are log(m_big/m_small)/log(n_big/n_small) over the
warehouse's columns. `--new-only` skips the old code (for a size it would not fit).

Results merge into bench/results/generator_memory_bench.json under the run's command. Nothing
here asserts anything; the machine may be shared with other work.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.harvest_memory_bench import exponent, status_mib  # noqa: E402

RESULTS = REPO / "bench" / "results" / "generator_memory_bench.json"
#: the last commit whose generator held the whole catalog (the baseline)
OLD_REV = "33faae3"


def child(config: dict) -> dict:
    """One generation in this process: its memory, time and summary."""
    # Both generators load the same way (from a file), so their base memory is the same.
    spec = importlib.util.spec_from_file_location("generator_under_bench", config["module"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    os.chdir(config["cwd"])
    base = status_mib("VmRSS")
    began = time.monotonic()
    summary = module.generate_warehouse("wh", tasks=config["tasks"], seed=config["seed"])
    seconds = time.monotonic() - began
    peak = status_mib("VmHWM")
    return {
        "peak_mib": peak,
        "base_mib": base,
        "generate_mib": round(peak - base, 1),
        "seconds": round(seconds, 1),
        "warehouse": {"tables": summary.tables, "columns": summary.columns, "tasks": summary.tasks},
    }


def digest(root: Path) -> tuple[str, int]:
    """One sha256 over every file's relative path and bytes, and the number of files."""
    total = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        total.update(str(path.relative_to(root)).encode() + b"\0")
        total.update(hashlib.sha256(path.read_bytes()).digest())
    return total.hexdigest(), len(files)


def run_one(module: str, tasks: int, seed: int, here: Path) -> dict:
    here.mkdir(parents=True)
    config = {"module": module, "tasks": tasks, "seed": seed, "cwd": str(here)}
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(config)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        },
    )
    found = [line for line in done.stdout.splitlines() if line.startswith("CHILD-RESULT ")]
    if done.returncode != 0 or not found:
        raise RuntimeError(f"generating {tasks} tasks failed: {done.stderr[-2000:]}")
    result = json.loads(found[-1].removeprefix("CHILD-RESULT "))
    result["digest"], result["files"] = digest(here / "wh")
    return result


def run_size(tasks: int, seed: int, old_module: str | None, work: Path) -> dict:
    out = {}
    for name, module in (("old", old_module), ("new", str(REPO / "ingest" / "generator.py"))):
        if name == "old" and old_module is None:
            continue
        here = work / f"{name}_{tasks}"
        out[name] = run_one(module, tasks, seed, here)
        shutil.rmtree(here)
        print(f"  {tasks} tasks, {name}: {json.dumps(out[name])}", flush=True)
    if "old" in out:
        out["same_files"] = out["old"]["digest"] == out["new"]["digest"]
        out["peak_ratio_old_to_new"] = round(out["old"]["peak_mib"] / out["new"]["peak_mib"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="20000,100000", help="generated tasks per size, comma-separated")
    parser.add_argument("--old", default=OLD_REV, help="the git revision whose generator is the baseline")
    parser.add_argument("--new-only", action="store_true", help="measure only the working tree's generator")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("CHILD-RESULT " + json.dumps(child(json.loads(args.child))), flush=True)
        return
    sizes = [int(size) for size in args.tasks.split(",")]
    with tempfile.TemporaryDirectory(prefix="generator-memory-bench-") as scratch:
        work = Path(scratch)
        old_module = None
        if not args.new_only:
            source = subprocess.run(
                ["git", "show", f"{args.old}:ingest/generator.py"],
                capture_output=True,
                text=True,
                cwd=REPO,
                check=True,
            ).stdout
            old_module = str(work / "old_generator.py")
            Path(old_module).write_text(source)
        results = {str(size): run_size(size, args.seed, old_module, work) for size in sizes}
    run = {
        "command": "bench/generator_memory_bench.py " + " ".join(sys.argv[1:]),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "old": None if args.new_only else args.old,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared with other work)",
        "sizes": results,
    }
    if len(sizes) >= 2:
        small, big = results[str(sizes[0])], results[str(sizes[-1])]
        run["exponents"] = {
            name: {
                key: exponent(small[name], big[name], key) for key in ("peak_mib", "generate_mib", "seconds")
            }
            for name in ("old", "new")
            if name in small
        }
    print(json.dumps({k: v for k, v in run.items() if k != "sizes"}), flush=True)
    merged = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    merged[run["command"]] = run
    RESULTS.write_text(json.dumps(merged, indent=2) + "\n")


if __name__ == "__main__":
    main()
