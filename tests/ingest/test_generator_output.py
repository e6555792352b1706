"""The generator's files, byte for byte, against the digests the generator wrote before it streamed.

The generator keeps compact table records and streams catalog.json (issue 41: 10M columns in
bounded memory); the promise is that the same seed still gives the same bytes. The expected
digests in generator_output_digests.json were written by this file run as a script with the
generator of commit 33faae3 (the last that held the whole catalog and wrote it with one
`json.dumps`):

    git show 33faae3:ingest/generator.py > /tmp/old_generator.py
    .venv/bin/python tests/ingest/test_generator_output.py --write --generator /tmp/old_generator.py

Each case generates into the relative path `wh` (catalog locations are paths as given, so the
digests do not depend on the temporary directory). The ORC sample and content files are pyarrow's
bytes: a pyarrow upgrade that changes its ORC writer changes `data`, and only that part.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest

DIGESTS = Path(__file__).with_name("generator_output_digests.json")
#: sizes and options: plain, larger, and with sample data and discovery content (another seed)
CASES = {
    "tasks300": {"tasks": 300},
    "tasks3000": {"tasks": 3000},
    "tasks400_data_content": {"tasks": 400, "data_tables": 5, "data_partitions": 3, "content_tables": 3},
    "tasks1000_seed11_data_content": {
        "tasks": 1000,
        "seed": 11,
        "data_tables": 2,
        "data_partitions": 2,
        "content_tables": 4,
    },
    "tasks5_tiny": {"tasks": 5, "data_tables": 1, "data_partitions": 1, "content_tables": 1},
}


def output_digests(root: Path, summary: object) -> dict:
    """sha256 of catalog.json and tasks.jsonl, one over the task files and one over the data files
    (each file's relative path and bytes, in path order), the file count and the summary."""
    parts = {"tasks": hashlib.sha256(), "data": hashlib.sha256()}
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        relative = path.relative_to(root).as_posix()
        group = relative.split("/", 1)[0]
        if group in parts:
            parts[group].update(relative.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return {
        "catalog.json": hashlib.sha256((root / "catalog.json").read_bytes()).hexdigest(),
        "tasks.jsonl": hashlib.sha256((root / "tasks.jsonl").read_bytes()).hexdigest(),
        "tasks/": parts["tasks"].hexdigest(),
        "data/": parts["data"].hexdigest(),
        "files": len(files),
        "summary": summary.__dict__,
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_seed_same_bytes_as_before_streaming(case, tmp_path, monkeypatch):
    from watershed.ingest.generator import generate_warehouse

    monkeypatch.chdir(tmp_path)
    summary = generate_warehouse("wh", **CASES[case])
    expected = json.loads(DIGESTS.read_text())[case]
    assert output_digests(tmp_path / "wh", summary) == expected


def test_generation_holds_less_than_its_catalog(tmp_path):
    """What the generator holds at its peak (Python's own allocations, traced) is less than the
    catalog.json it writes: it never builds the catalog's entries or text whole. The code before
    held both, 15 times the file at this size; the records it keeps now are a third of it."""
    from watershed.ingest.generator import generate_warehouse

    tracemalloc.start()
    try:
        generate_warehouse(tmp_path / "wh", tasks=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    catalog_bytes = (tmp_path / "wh" / "catalog.json").stat().st_size
    assert peak < catalog_bytes, f"peak {peak} bytes against a catalog.json of {catalog_bytes}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="write generator_output_digests.json")
    parser.add_argument("--generator", help="a generator.py to load instead of watershed.ingest.generator")
    args = parser.parse_args()
    if args.generator:
        spec = importlib.util.spec_from_file_location("generator_for_digests", args.generator)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        from watershed.ingest import generator as module
    found = {}
    for case, options in sorted(CASES.items()):
        with tempfile.TemporaryDirectory(prefix="generator-digests-") as scratch:
            os.chdir(scratch)
            found[case] = output_digests(Path(scratch) / "wh", module.generate_warehouse("wh", **options))
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    if args.write:
        DIGESTS.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
