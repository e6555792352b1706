"""Discovery's precision and recall per pii type on a labelled generated warehouse, beside the
column-name rules and (when it is installed) Microsoft Presidio's pattern recognizers.

    .venv/bin/python bench/discover_bench.py [--tables 60] [--columns 12] [--rows 200] [--seed 7]

Each column's truth is known (bench/pii_values.py: sensitive kinds and decoys such as identifiers
failing their check digit, hashes, amounts, order numbers); names are drawn from one pool whatever
the content (`email`, `user_phone`, `c17`, `ext_info`, ...), so a name carries no signal. Each
sensitive column also holds a few dirty values (`N/A`, `-`, `unknown`) and nulls, as real ones do.

Per type, a column counts as found when the method names that type for it:
- (a) the policy's name rules (propagation's default policy) on the column's name;
- (b) discovery: the detectors and the proposal thresholds (discovery/proposals.py) on the
  column's sampled values;
- (c) Presidio's predefined pattern recognizers (EmailRecognizer, PhoneRecognizer,
  CreditCardRecognizer, UsSsnRecognizer, IpRecognizer) on the same values, the column taking the
  entity most values match when at least the same 0.8 of them do. Presidio's AnalyzerEngine loads
  a spaCy model, which cannot be downloaded here; the recognizers run without one (no NLP
  artifacts), which is all its pattern matching needs, and tldextract is kept to the public
  suffix list it ships. presidio-analyzer (2.2, with spaCy: 393 MB) is not in the dev extras:
  `pip install presidio-analyzer` first, or the column says it is not installed. It has no
  recognizer of Chinese identity numbers.
Throughput: values judged per second on one core (every detector over every value), and the same
columns written as Parquet and ORC tables, sampled from the files and judged (CPU time per table).
The issue's target: precision >= 0.98 and recall >= 0.95 for email, phone, id_card and bank_card.
Results go to bench/results/discover_bench.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pii_values import KINDS  # noqa: E402
from watershed.discovery.detectors import detectors_for  # noqa: E402
from watershed.discovery.proposals import Thresholds, judge, level_tags, propose  # noqa: E402
from watershed.propagation.policy import default_policy  # noqa: E402

TARGET_TYPES = ("email", "phone", "id_card", "bank_card")
TARGET_PRECISION, TARGET_RECALL = 0.98, 0.95
NAMES = [
    "email",
    "contact_email",
    "phone",
    "user_phone",
    "mobile",
    "ssn",
    "id_no",
    "card_no",
    "c17",
    "ext_info",
    "k3",
    "contact",
    "info",
    "attr_1",
    "val",
    "code",
    "ref",
    "note",
]
DIRTY = ["N/A", "-", "unknown", "0", "null"]
PRESIDIO_ENTITIES = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "bank_card",
    "US_SSN": "ssn",
    "IP_ADDRESS": "ip",
}


def warehouse(tables: int, columns: int, rows: int, seed: int) -> list[tuple[str, str | None, list[str]]]:
    """(name, true pii type or None, values) per column."""
    r = random.Random(seed)
    kinds = list(KINDS)
    out = []
    for _ in range(tables * columns):
        kind = r.choice(kinds)
        make, truth = KINDS[kind]
        values = []
        for _ in range(rows):
            roll = r.random()
            if roll < 0.05:
                continue  # a null
            values.append(r.choice(DIRTY) if truth and roll < 0.07 else make(r))
        out.append((r.choice(NAMES), truth, values))
    return out


def name_rules(columns) -> list[str | None]:
    policy = default_policy()
    return [policy.seed_tags(f"db.t.{name}").get("pii_type") for name, _, _ in columns]


def discovery(columns) -> tuple[list[str | None], float, int]:
    detectors = detectors_for(["CN", "US"])
    named = {"ssn": "L4", "email": "L3", "phone": "L3"}

    def tags_of(d):
        return level_tags(d, "pii", "pii_type", ["L1", "L2", "L3", "L4"], named)

    found: list[str | None] = []
    values = 0
    began = time.process_time()
    for name, _, column in columns:
        verdict = judge(column, detectors)
        values += verdict.sampled
        proposal = propose(f"db.t.{name}", "db.t", verdict, detectors, tags_of, Thresholds(), at="")
        found.append(proposal.tags["pii_type"] if proposal else None)
    return found, time.process_time() - began, values


def presidio(columns) -> tuple[list[str | None] | None, str]:
    try:
        from presidio_analyzer.predefined_recognizers import (
            CreditCardRecognizer,
            EmailRecognizer,
            IpRecognizer,
            PhoneRecognizer,
            UsSsnRecognizer,
        )
    except ImportError as exc:
        return None, f"presidio-analyzer is not installed here ({exc})"
    import tldextract

    # EmailRecognizer asks tldextract for the public suffix list, which it would fetch from the
    # network on first use: the snapshot tldextract ships is what this machine can have
    tldextract.tldextract.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())
    recognizers = [
        EmailRecognizer(),
        PhoneRecognizer(supported_regions=("CN", "US")),
        CreditCardRecognizer(),
        UsSsnRecognizer(),
        IpRecognizer(),
    ]
    found: list[str | None] = []
    for _, _, column in columns:
        counts: dict[str, int] = {}
        for value in column:
            hits = set()
            for recognizer in recognizers:
                for result in recognizer.analyze(value, recognizer.supported_entities, None):
                    # the whole value, as discovery judges whole values; any score (the phone
                    # recognizer gives its matches 0.4)
                    if result.start == 0 and result.end == len(value) and result.score > 0:
                        hits.add(PRESIDIO_ENTITIES.get(result.entity_type))
            for hit in hits - {None}:
                counts[hit] = counts.get(hit, 0) + 1
        best = max(counts, key=counts.get) if counts else None
        found.append(best if best and column and counts[best] / len(column) >= 0.8 else None)
    return found, "pattern recognizers without an NLP engine"


def through_files(columns, tables: int, rows: int) -> dict[str, float]:
    """The same columns written as `tables` Parquet and ORC tables, then sampled from the files and
    judged as `watershed discover` does (no graph): seconds per table, values per second, both with
    the reading."""
    import tempfile

    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    from watershed.api.service.discovery import readers
    from watershed.discovery.sampling import SampleLimits, data_files, sample_files

    detectors = detectors_for(["CN", "US"])
    per_table = len(columns) // tables
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as root:
        for kind in ("parquet", "orc"):
            for t in range(tables):
                chunk = columns[t * per_table : (t + 1) * per_table]
                data = pa.table(
                    {
                        f"c{i}": pa.array((v[:rows] + [None] * rows)[:rows], pa.string())
                        for i, (_, _, v) in enumerate(chunk)
                    }
                )
                directory = Path(root) / kind / f"t{t}"
                directory.mkdir(parents=True)
                if kind == "parquet":
                    pq.write_table(data, directory / "part-0.parquet")
                else:
                    orc.write_table(data, str(directory / "000000_0"))
            began, values = time.process_time(), 0
            for t in range(tables):
                sample = sample_files(
                    data_files(Path(root) / kind / f"t{t}"), readers(), SampleLimits(rows=rows)
                )
                values += sum(judge(v, detectors).sampled for v in sample.values.values())
            seconds = time.process_time() - began
            out[f"{kind}_seconds_per_table"] = round(seconds / tables, 4)
            out[f"{kind}_values_per_second"] = round(values / seconds)
    return out


def scores(truths, found) -> dict[str, dict[str, float]]:
    out = {}
    for kind in sorted({t for t in truths if t}):
        tp = sum(1 for t, f in zip(truths, found, strict=True) if t == kind and f == kind)
        fp = sum(1 for t, f in zip(truths, found, strict=True) if t != kind and f == kind)
        fn = sum(1 for t, f in zip(truths, found, strict=True) if t == kind and f != kind)
        out[kind] = {
            "precision": round(tp / (tp + fp), 4) if tp + fp else 0.0,
            "recall": round(tp / (tp + fn), 4) if tp + fn else 0.0,
            "columns": tp + fn,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=60)
    parser.add_argument("--columns", type=int, default=12)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    columns = warehouse(args.tables, args.columns, args.rows, args.seed)
    truths = [truth for _, truth, _ in columns]
    found, seconds, values = discovery(columns)
    by_presidio, presidio_note = presidio(columns)
    result = {
        "columns": len(columns),
        "rows_per_column": args.rows,
        "name_rules": scores(truths, name_rules(columns)),
        "discovery": scores(truths, found),
        "presidio": scores(truths, by_presidio) if by_presidio is not None else None,
        "presidio_note": presidio_note,
        "values_per_second_per_core": round(values / seconds),
        "through_files": through_files(columns, args.tables, args.rows),
    }
    result["targets_met"] = all(
        result["discovery"][t]["precision"] >= TARGET_PRECISION
        and result["discovery"][t]["recall"] >= TARGET_RECALL
        for t in TARGET_TYPES
    )
    print(f"{len(columns)} columns, {args.rows} rows each; {presidio_note}")
    print(f"{'type':10} {'name rules P/R':>16} {'discovery P/R':>16} {'presidio P/R':>16}")
    for kind in result["discovery"]:
        row = [result["name_rules"].get(kind), result["discovery"][kind]]
        row.append(result["presidio"].get(kind) if result["presidio"] else None)
        cells = [f"{s['precision']:.2f}/{s['recall']:.2f}" if s else "-" for s in row]
        print(f"{kind:10} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16}")
    print(f"discovery judged {result['values_per_second_per_core']} values/s on one core")
    files = result["through_files"]
    print(
        f"through files, reading included: Parquet {files['parquet_seconds_per_table'] * 1000:.0f} ms a table "
        f"({files['parquet_values_per_second']} values/s), ORC {files['orc_seconds_per_table'] * 1000:.0f} ms "
        f"({files['orc_values_per_second']} values/s)"
    )
    print(
        f"targets (P>={TARGET_PRECISION}, R>={TARGET_RECALL} for {', '.join(TARGET_TYPES)}): {result['targets_met']}"
    )
    out = ROOT / "bench" / "results" / "discover_bench.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
