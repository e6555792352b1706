"""PII discovery, the use case: sample tables' files, propose tags, and stewards' accept and reject.

`discover` samples each table's local ORC and Parquet files at the location the harvest recorded
(graph/catalog.py), bounded in rows, bytes and time (discovery/sampling.py), runs the detectors
over each text and integer column (discovery/detectors.py) and stores a proposal per column whose
content validates (discovery/proposals.py), with the table's file fingerprint and one audit entry,
in one write. ORC is read through orc_crypto's projected reads without a key provider: an
encrypted column is never decrypted, it is reported as protected. A table whose location is remote
(hdfs://, s3://...) or whose files reach `discovery_spark_min_bytes` is sampled on Spark instead
(discovery/spark_sampling.py) when the caller gives a session or a master: its ORC tails are read
first (through orc_crypto, by byte ranges) and only the plaintext columns are projected. A table
whose files did not change since its last sample is not read again (unless `force`).

Sampling a *derived* column also judges the tags propagation gave it (discovery/flags.py): content
that validates as sensitive where the column holds no tag of the family, or a lower level, is a
**leak** flag with the lineage path back to the nearest column holding the tag (else to a root) and
each function's effect on the way (an opaque UDF, a function the effect table drops); a propagated
tag whose type no sampled value validates as is an **over_tag** flag with the path back to its
seed. A table's flags are replaced with its scan, in the same write.

`accept` sets the proposal's tags as seeds with origin `discovered`, through the same statements a
steward's `tag set` sends (api/service/tag_changes.py), with the decision and its audit entry in
the same write; `reject` records the decision, and the column is not proposed again until its
content fingerprint (which kinds of value the sample holds) changes.

Sampled values live only in this process's memory, for the time one table is judged: they are never
logged, written to the graph, or put in an error message. Called by `watershed discover`
(api/cli/discover.py) and /api/v1/discovery (api/http/routers/discovery.py).
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from watershed.api.service import tag_changes
from watershed.api.service.audit import statement
from watershed.api.service.notifications import events
from watershed.api.service.pages import Page, decode_cursor, keyed_page
from watershed.discovery.detectors import Detector, detectors_for
from watershed.discovery.flags import clearly_not, is_leak, keeps_form
from watershed.discovery.proposals import ColumnVerdict, Thresholds, judge, level_tags, propose
from watershed.discovery.sampling import (
    DataFile,
    FileLayout,
    Kind,
    LocationError,
    ParquetReader,
    SampleLimits,
    TableSample,
    data_files,
    fingerprint,
    sample_files,
)
from watershed.discovery.settings import DiscoverySettings
from watershed.discovery.spark_sampling import HadoopFiles, is_remote, sample_on_spark
from watershed.graph import ids
from watershed.graph.catalog import CatalogTable
from watershed.graph.errors import WatershedError
from watershed.graph.model import (
    ColumnProposal,
    DiscoveryFlag,
    FlagKind,
    FlagStep,
    GraphEdge,
    ProposalEvidence,
    node_label,
)
from watershed.graph.store import GraphStore
from watershed.orc_crypto.codec import kinds as orc_kinds
from watershed.orc_crypto.codec.tail import column_subtree_max, read_tail
from watershed.orc_crypto.errors import OrcFormatError
from watershed.orc_crypto.files import mapped_input
from watershed.orc_crypto.read import read_orc
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy
from watershed.propagation.rules import DISCOVERED, PROPAGATED, TagValue

log = logging.getLogger(__name__)

#: who the audit names for an automatic acceptance (discovery_auto_accept)
AUTO_ACTOR = "discovery"
#: a flag's path back is looked for this many hops up, among at most this many columns
MAX_PATH_HOPS = 10
MAX_PATH_NODES = 500


class DiscoveryError(WatershedError, ValueError):
    """A discovery request that cannot be done: an unknown proposal, a decision already made."""


class UnknownProposalError(DiscoveryError, LookupError):
    """No proposal for that column."""


# ---------------------------------------------------------------- what a run answers


class TableDiscovery(BaseModel):
    """One table (or `--path`) of a discovery run."""

    table: str
    status: Literal["sampled", "unchanged", "skipped"]
    #: why a table was skipped or what went wrong reading some of its files (never a value)
    reason: str | None = None
    files: int = 0
    rows: int = 0
    bytes: int = 0
    #: non-null values the detectors judged
    values: int = 0
    #: which bound stopped the sample: rows, bytes, time (None: every row was read)
    stopped_by: str | None = None
    #: where its files were read: in this process, or on Spark (remote or large tables)
    sampled_on: Literal["local", "spark"] | None = None
    #: encrypted columns: not decrypted, not sampled
    protected: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    #: proposals made or renewed by this run (a `--path` sample's are shown, not stored)
    proposals: list[ColumnProposal] = Field(default_factory=list)
    #: leak and over-tag flags of its derived columns (they replace the table's earlier ones)
    flags: list[DiscoveryFlag] = Field(default_factory=list)


class DiscoveryRun(BaseModel):
    run: str
    tables: list[TableDiscovery] = Field(default_factory=list)
    proposed: int = 0
    auto_accepted: int = 0
    flagged: int = 0
    values: int = 0
    seconds: float = 0.0


# ---------------------------------------------------------------- ORC through orc_crypto

_ORC_KINDS: dict[int, Kind] = {
    orc_kinds.STRING: "text",
    orc_kinds.VARCHAR: "text",
    orc_kinds.CHAR: "text",
    orc_kinds.BYTE: "integer",
    orc_kinds.SHORT: "integer",
    orc_kinds.INT: "integer",
    orc_kinds.LONG: "integer",
}


class OrcFiles:
    """ORC for discovery's sampler: the tail for the layout (encrypted columns are the variants'
    roots and what lies under them), then one stripe of the chosen plaintext columns through
    orc_crypto's projected read, with no key provider: nothing is ever decrypted here."""

    def layout(self, path: str, data=None) -> FileLayout:
        """`data`: the file as sliceable bytes when it is not a local path (a remote file read by
        ranges); by default the local file, memory-mapped."""
        if data is None:
            with mapped_input(path, OrcFormatError) as mapped:
                tail = read_tail(path, mapped)
        else:
            tail = read_tail(path, data)
        types = tail.footer.types
        fields = list(zip(types[0].fieldNames, types[0].subtypes, strict=False))
        roots = [v.root for v in tail.footer.encryption.variants] if tail.is_encrypted else []
        protected = {
            name
            for name, column in fields
            for root in roots
            if column <= root <= column_subtree_max(types, column)
            or root <= column <= column_subtree_max(types, root)
        }
        return FileLayout(
            columns={name: _ORC_KINDS.get(types[column].kind, "other") for name, column in fields},
            protected=frozenset(protected),
            parts=len(tail.footer.stripes),
            rows=tail.footer.numberOfRows,
        )

    def read(self, path: str, columns: Sequence[str], part: int, rows: int):
        return read_orc(path, columns=list(columns), stripes=[part])


def readers() -> dict[str, object]:
    return {"orc": OrcFiles(), "parquet": ParquetReader()}


# ---------------------------------------------------------------- the policy's vocabulary


class PolicyTags:
    """The tags a detector proposes under the policy: the sensitivity family whose types include
    the detector's type, at the level the policy's name rules give that type (else the detector's).
    A detector whose type the policy does not know proposes nothing."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[str, dict[str, str] | None] = {}

    def family_of(self, pii_type: str) -> tuple[str, str, list[str]] | None:
        for name, family in self.policy.sensitivity.items():
            if family.types_key and (not family.types or pii_type in family.types):
                return name, family.types_key, family.levels
        return None

    def __call__(self, detector: Detector) -> dict[str, str] | None:
        if detector.name not in self._cache:
            found = self.family_of(detector.pii_type)
            if found is None:
                self._cache[detector.name] = None
            else:
                family, types_key, levels = found
                named: dict[str, str] = {}
                for rule in self.policy.seeds:
                    if rule.tags.get(types_key) and rule.tags.get(family):
                        named.setdefault(rule.tags[types_key], rule.tags[family])
                self._cache[detector.name] = level_tags(detector, family, types_key, levels, named)
        return self._cache[detector.name]

    def name_type(self, column_id: str) -> str | None:
        """The pii_type the policy's column-name rules give `column_id`, if any."""
        seeded = self.policy.seed_tags(column_id)
        for family in self.policy.sensitivity.values():
            if family.types_key and family.types_key in seeded:
                return seeded[family.types_key]
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _run_id() -> str:
    return f"discovery-{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


_HIVE_POSITIONAL = re.compile(r"^_col(\d+)$")


def _catalog_names(entry: CatalogTable | None, names: Sequence[str]) -> dict[str, str]:
    """File column -> catalog column: Hive's ORC writer names columns `_col0, _col1, ...`, which
    are the catalog's columns in order when the catalog knows the order."""
    if entry is None or not entry.columns_ordered:
        return {n: n for n in names}
    ordered = [c.name for c in entry.columns]
    renamed: dict[str, str] = {}
    for name in names:
        match = _HIVE_POSITIONAL.match(name)
        position = int(match.group(1)) if match else None
        renamed[name] = ordered[position] if position is not None and position < len(ordered) else name
    return renamed


# ---------------------------------------------------------------- discover


class Discovery:
    """One discovery run's settings, detectors and policy; `table` and `path` sample one each."""

    def __init__(
        self,
        graph: GraphStore,
        policy: Policy,
        settings: DiscoverySettings | None = None,
        *,
        sample_rows: int | None = None,
        file_readers: dict[str, object] | None = None,
        spark=None,
        master: str | None = None,
    ) -> None:
        settings = settings or DiscoverySettings()
        self.spark, self.master = spark, master
        self.graph = graph
        self.policy = policy
        self.settings = settings
        self.tags = PolicyTags(policy)
        # only the detectors whose type the policy knows: the others could propose nothing
        self.detectors = [d for d in detectors_for(settings.discovery_regions) if self.tags(d)]
        self.limits = SampleLimits(
            rows=sample_rows or settings.discovery_sample_rows,
            bytes=settings.discovery_sample_bytes,
            seconds=settings.discovery_sample_seconds,
        )
        self.thresholds = Thresholds(
            min_confidence=settings.discovery_min_confidence,
            min_confidence_named=settings.discovery_min_confidence_named,
            min_sampled=settings.discovery_min_sampled,
        )
        self.readers = file_readers or readers()
        self.run = _run_id()
        self.tag_store = GraphTagStore(graph, policy)

    # ------------------------------------------------------------ where the files are read

    def can_use_spark(self) -> bool:
        return self.spark is not None or self.master is not None

    def session(self):
        """The Spark session given, else one on the master given, started on first need only."""
        if self.spark is None:
            from watershed.ingest.harvest import spark_session

            self.spark = spark_session(self.master, app_name="watershed-discover")
        return self.spark

    def _files(self, location: str) -> tuple[list[DataFile], bool]:
        """The data files at `location` and whether to read them on Spark: a remote location is
        listed and read there; a local one there when its files reach discovery_spark_min_bytes
        and a session or master is given."""
        if is_remote(location):
            if not self.can_use_spark():
                scheme = location.split(":", 1)[0]
                raise LocationError(
                    f"{location}: a {scheme}:// location is sampled on Spark: give a Spark master "
                    "(watershed discover --master) or run discovery in the nightly chain with its session"
                )
            return HadoopFiles(self.session()).data_files(location), True
        files = data_files(location)
        large = sum(f.size for f in files) >= self.settings.discovery_spark_min_bytes
        return files, large and self.can_use_spark()

    def _layout(self, item: DataFile) -> FileLayout:
        reader = self.readers[item.format]
        if is_remote(item.path):
            return reader.layout(item.path, HadoopFiles(self.session()).open(item))
        return reader.layout(item.path)

    def _sample(self, files: Sequence[DataFile], on_spark: bool) -> TableSample:
        if on_spark:
            return sample_on_spark(self.session(), files, self._layout, self.limits)
        return sample_files(files, self.readers, self.limits)

    def _judge(
        self,
        report: TableDiscovery,
        files: Sequence[DataFile],
        names: Callable[[list[str]], dict[str, str]],
        column_id: Callable[[str], str],
        on_spark: bool = False,
    ) -> tuple[list[ColumnProposal], dict[str, ColumnVerdict]]:
        """Sample `files` into `report`; the proposals of its columns and the verdict (counts, no
        value) of every column sampled, by column id. The values are dropped when this returns."""
        sample = self._sample(files, on_spark)
        report.sampled_on = "spark" if on_spark else "local"
        report.files, report.rows, report.bytes = sample.files, sample.rows, sample.bytes
        report.stopped_by, report.errors = sample.stopped_by, sample.errors
        report.protected = sorted(sample.protected)
        renamed = names(sorted(sample.values))
        at = _now()
        found: list[ColumnProposal] = []
        sampled: dict[str, ColumnVerdict] = {}
        for file_name, values in sorted(sample.values.items()):
            column = column_id(renamed[file_name])
            verdict = sampled[column] = judge(values, self.detectors)
            report.values += verdict.sampled
            proposal = propose(
                column,
                report.table,
                verdict,
                self.detectors,
                self.tags,
                self.thresholds,
                at=at,
                run=self.run,
                name_type=self.tags.name_type(column),
            )
            if proposal is not None:
                found.append(proposal)
        return found, sampled

    def path(self, path: str) -> TableDiscovery:
        """Sample files outside the catalog: the proposals are shown, not stored (no column in the
        graph to seed); they name `path` as their table and the file's column as their column."""
        report = TableDiscovery(table=path, status="sampled")
        try:
            files, on_spark = self._files(path)
        except LocationError as exc:
            return report.model_copy(update={"status": "skipped", "reason": str(exc)})
        report.proposals, _ = self._judge(
            report, files, lambda names: {n: n for n in names}, lambda n: n, on_spark
        )
        return report

    def table(self, table_id: str, entry: CatalogTable | None, *, force: bool = False) -> TableDiscovery:
        report = TableDiscovery(table=table_id, status="sampled")
        if entry is None:
            return report.model_copy(update={"status": "skipped", "reason": "no such table in the graph"})
        if not entry.location:
            return report.model_copy(
                update={"status": "skipped", "reason": "the harvest recorded no location for it"}
            )
        try:
            files, on_spark = self._files(entry.location)
        except LocationError as exc:
            return report.model_copy(update={"status": "skipped", "reason": str(exc)})
        files_now = fingerprint(files)
        if not force and self.graph.discovery_fingerprints([table_id]).get(table_id) == files_now:
            return report.model_copy(update={"status": "unchanged", "reason": "its files did not change"})
        if not files:
            report.reason = f"no ORC or Parquet file under {entry.location}"
        known = set(entry.all_columns)
        found, verdicts = self._judge(
            report,
            files,
            lambda names: _catalog_names(entry, names),
            lambda n: ids.child(table_id, n),
            on_spark,
        )
        proposals = [p for p in found if ids.name(p.column) in known]
        kept, withdrawn = self._merge(proposals, list(verdicts))
        report.proposals = kept
        report.flags = self._flags(
            table_id, proposals, {c: v for c, v in verdicts.items() if ids.name(c) in known}
        )
        scan = {
            "id": table_id,
            "fingerprint": files_now,
            "at": _now(),
            "run": self.run,
            "protected": report.protected,
        }
        summary = {
            "run": self.run,
            "files": report.files,
            "rows": report.rows,
            "values": report.values,
            "proposed": sorted(p.column for p in kept),
            "withdrawn": sorted(withdrawn),
            "protected": report.protected,
            "flags": {f.column: f.kind for f in report.flags},
        }
        self.graph.write_all(
            [
                *self.graph.discovery_statements([scan], kept, withdrawn, {table_id: report.flags}),
                statement(AUTO_ACTOR, "discovery.sample", table_id, None, summary),
                *([_waiting(table_id, self.run, kept)] if kept else []),
            ]
        )
        log.info(
            "discovery %s: %s sampled (%d files, %d rows, %d values): %d proposed, %d withdrawn, "
            "%d protected, %d flagged",
            self.run,
            table_id,
            report.files,
            report.rows,
            report.values,
            len(kept),
            len(withdrawn),
            len(report.protected),
            len(report.flags),
        )
        return report

    def _merge(
        self, proposals: list[ColumnProposal], sampled: list[str]
    ) -> tuple[list[ColumnProposal], list[str]]:
        """Which proposals to store, and which open ones of the `sampled` columns to withdraw. A
        decided proposal stays decided while the content fingerprint holds (a rejection is
        remembered; an accepted one is a seed already); a column tagged with the type at that level
        or higher, or with the family blocked, is not proposed."""
        existing = self.graph.discovery_proposals_of(sampled)
        current = self.tag_store.current_tags([p.column for p in proposals])
        kept: list[ColumnProposal] = []
        for proposal in proposals:
            before = existing.get(proposal.column)
            if before is not None and before.status == "accepted":
                continue
            if before is not None and before.status == "rejected" and before.content == proposal.content:
                continue
            if self._tagged(proposal, current.get(proposal.column, {})) or self._blocked(proposal):
                continue
            kept.append(proposal)
        kept_ids = {p.column for p in kept}
        withdrawn = [c for c, before in existing.items() if before.status == "open" and c not in kept_ids]
        return kept, withdrawn

    def _tagged(self, proposal: ColumnProposal, tags: dict) -> bool:
        """Whether the column already holds the proposal's type at its level or a higher one."""
        for family, spec in self.policy.sensitivity.items():
            if family not in proposal.tags or spec.types_key not in proposal.tags:
                continue
            have_types, have_level = tags.get(spec.types_key), tags.get(family)
            if have_types is None or have_level is None:
                return False
            if proposal.tags[spec.types_key] not in have_types.values:
                return False
            wanted = spec.levels.index(proposal.tags[family])
            return any(v in spec.levels and spec.levels.index(v) >= wanted for v in have_level.values)
        return False

    # ------------------------------------------------------------ leak and over-tag flags

    def _flags(
        self, table_id: str, proposals: list[ColumnProposal], verdicts: dict[str, ColumnVerdict]
    ) -> list[DiscoveryFlag]:
        """The flags of the table's derived columns: a column with a lineage edge into it, or any
        column of a table another table flows into."""
        columns = sorted(verdicts)
        upstream = self.graph.neighbours([table_id, *columns], "upstream")
        table_fed = any(e.type == "FLOWS_TO" for e in upstream.get(table_id, []))
        derived = [c for c in columns if table_fed or _column_edges(upstream.get(c, []))]
        if not derived:
            return []
        current = self.tag_store.current_tags(derived)
        supported = {p.column: p for p in proposals}
        at = _now()
        flags: list[DiscoveryFlag] = []
        for column in derived:
            held = current.get(column, {})
            proposal = supported.get(column)
            found = (
                self._leak(column, table_id, proposal, held, at)
                if proposal is not None
                else self._over_tag(column, table_id, verdicts[column], held, at)
            )
            if found is not None:
                flags.append(found)
        return flags

    def _family(self, tags: dict[str, str]) -> tuple[str, str]:
        """The sensitivity family (and its types key) of a proposal's tags."""
        for family, spec in self.policy.sensitivity.items():
            if family in tags and spec.types_key in tags:
                return family, spec.types_key
        raise DiscoveryError(f"{sorted(tags)}: no sensitivity family of the policy")

    def _leak(
        self, column: str, table: str, proposal: ColumnProposal, held: dict[str, TagValue], at: str
    ) -> DiscoveryFlag | None:
        family, types_key = self._family(proposal.tags)
        spec = self.policy.sensitivity[family]
        level = proposal.tags[family]
        have = held.get(family)
        have_level = max(have.values, key=spec.rank) if have is not None else None
        if not is_leak(level, have_level, spec.levels):
            return None
        root, tagged, path = self._path_back(column, family, level)
        if root is None:
            reason = (
                "no column lineage leads into it: its values come from a source the lineage does not show"
            )
        elif not tagged:
            reason = (
                f"nothing upstream holds {family}={level} or higher: the path ends at {root}, untagged "
                "(no name rule or seed on it); tag it or accept its proposal"
            )
        else:
            lost = [f"{f} ({e})" for step in path for f, e in step.effects.items() if e != "keep"]
            reason = f"{root} holds {family}={level} or higher and the tag does not reach it: " + (
                ", ".join(lost) if lost else "every function keeps it (has propagation run since?)"
            )
        return DiscoveryFlag(
            column=column,
            table=table,
            kind="leak",
            tags=proposal.tags,
            held=_held(held, family, types_key),
            confidence=proposal.confidence,
            sampled=proposal.sampled,
            evidence=proposal.evidence,
            root=root,
            root_tagged=tagged,
            path=path,
            reason=reason,
            at=at,
            run=self.run,
        )

    def _over_tag(
        self, column: str, table: str, verdict: ColumnVerdict, held: dict[str, TagValue], at: str
    ) -> DiscoveryFlag | None:
        for family, spec in self.policy.sensitivity.items():
            tag, types = held.get(family), held.get(spec.types_key or "")
            if tag is None or types is None or tag.origin != PROPAGATED:
                continue
            share = clearly_not(
                verdict,
                self.detectors,
                types.values,
                self.thresholds,
                self.settings.discovery_overtag_max_share,
            )
            if share is None:
                continue
            root, path = self._tag_path(column, family)
            if not keeps_form(f for step in path for f in step.functions):
                continue  # a hash or a part of the value may rightly look like nothing known
            level = max(tag.values, key=spec.rank)
            kinds = ",".join(sorted(types.values))
            return DiscoveryFlag(
                column=column,
                table=table,
                kind="over_tag",
                tags={family: level, spec.types_key: kinds},
                held=_held(held, family, spec.types_key),
                confidence=round(share, 4),
                sampled=verdict.sampled,
                evidence=ProposalEvidence(detectors=dict(sorted(verdict.counts.items()))),
                root=root,
                root_tagged=True,
                path=path,
                reason=(
                    f"{family}={level} {spec.types_key}={kinds} came by propagation from {root}, and "
                    f"{share:.0%} of {verdict.sampled} sampled values validate as {kinds}"
                ),
                at=at,
                run=self.run,
            )
        return None

    def _step(self, edge: GraphEdge, family: str) -> FlagStep:
        spec = self.policy.sensitivity[family]
        functions = list(edge.properties.get("functions") or [])
        effects: dict[str, str] = {}
        for function in functions:
            effect = self.policy.effect(function, spec)
            effects[function] = effect if self.policy.names_function(function) else f"opaque:{effect}"
        kind = edge.properties.get("kind")
        if kind == "conditional-value":
            effects["(conditional value)"] = self.policy.conditional_value
        return FlagStep(
            source=edge.source,
            target=edge.target,
            task=edge.properties.get("task"),
            kind=kind,
            functions=functions,
            effects=effects,
        )

    def _path_back(self, column: str, family: str, level: str) -> tuple[str | None, bool, list[FlagStep]]:
        """Breadth first up the column lineage: the nearest column holding `family` at `level` or
        higher (True), else the nearest root (False), and the path from it to `column`; (None,
        False, []) when no column edge leads into `column`."""
        spec = self.policy.sensitivity[family]
        parents: dict[str, GraphEdge] = {}
        frontier = [column]
        root: str | None = None
        for _ in range(MAX_PATH_HOPS):
            if not frontier or len(parents) >= MAX_PATH_NODES:
                break
            incoming = self.graph.neighbours(frontier, "upstream")
            following: list[str] = []
            for node in frontier:
                edges = _column_edges(incoming.get(node, []))
                if not edges and node != column and root is None:
                    root = node
                for edge in edges:
                    if edge.source != column and edge.source not in parents:
                        parents[edge.source] = edge
                        following.append(edge.source)
            held = self.tag_store.current_tags(following)
            for node in following:
                tag = held.get(node, {}).get(family)
                if tag is not None and not is_leak(level, max(tag.values, key=spec.rank), spec.levels):
                    return node, True, self._steps(node, column, parents, family)
            frontier = following
        if root is None and frontier and frontier != [column]:
            root = frontier[0]  # the bounds stopped the walk: the farthest column reached
        if root is None:
            return None, False, []
        return root, False, self._steps(root, column, parents, family)

    def _steps(self, start: str, column: str, parents: dict[str, GraphEdge], family: str) -> list[FlagStep]:
        steps: list[FlagStep] = []
        node = start
        while node != column:
            edge = parents[node]
            steps.append(self._step(edge, family))
            node = edge.target
        return steps

    def _tag_path(self, column: str, family: str) -> tuple[str, list[FlagStep]]:
        """The path a propagated tag came along, by its provenance, back to its seed."""
        steps: list[FlagStep] = []
        node, seen = column, {column}
        for _ in range(MAX_PATH_HOPS):
            tag = self.tag_store.current_tags([node]).get(node, {}).get(family)
            if tag is None or tag.origin != PROPAGATED or not tag.provenance:
                break
            source = min(p.source for p in tag.provenance)
            edges = [
                e
                for e in _column_edges(self.graph.neighbours([node], "upstream")[node])
                if e.source == source
            ]
            if not edges or source in seen:
                break
            steps.insert(0, self._step(min(edges, key=lambda e: str(e.properties.get("task"))), family))
            seen.add(source)
            node = source
        return node, steps

    def _blocked(self, proposal: ColumnProposal) -> bool:
        """A steward blocked the family on the column: they said it holds no such tag."""
        own = self.tag_store.own_tags(proposal.column)
        return any(e["type"] == "BLOCKS" and e["key"] in proposal.tags for e in own)


def _waiting(table_id: str, run: str, kept: list[ColumnProposal]) -> tuple[str, dict]:
    """The `proposal.waiting` webhook event of a sampled table, in the write that stores its proposals."""
    columns = [{"column": p.column, "tags": p.tags, "confidence": p.confidence} for p in kept]
    return events.statement("proposal.waiting", {"table": table_id, "run": run, "proposals": columns})


def _column_edges(edges: Sequence[GraphEdge]) -> list[GraphEdge]:
    """The value edges from columns among a column's incoming edges, in a fixed order."""
    found = [e for e in edges if e.type == "FLOWS_TO" and node_label(e.source) == "Column"]
    return sorted(found, key=lambda e: (e.source, str(e.properties.get("task"))))


def _held(held: dict[str, TagValue], *keys: str | None) -> dict[str, list[str]]:
    return {key: sorted(held[key].values) for key in keys if key and key in held}


def discover(
    graph: GraphStore,
    policy: Policy,
    settings: DiscoverySettings | None = None,
    *,
    tables: Sequence[str] | None = None,
    paths: Sequence[str] = (),
    sample_rows: int | None = None,
    force: bool = False,
    derived: bool | None = None,
    file_readers: dict[str, object] | None = None,
    spark=None,
    master: str | None = None,
) -> DiscoveryRun:
    """Sample `tables` (default, when no `paths` are given: every root table with a location, and
    with `derived` (default: the discovery_derived setting) every other table with one too) and
    `paths`; store the tables' proposals and flags, and accept the proposals at or above the
    auto-accept setting. Remote and large tables are sampled on `spark`, else on a session started
    on `master` when the first one needs it; with neither, a remote table is skipped."""
    began = time.monotonic()
    discovery = Discovery(
        graph,
        policy,
        settings,
        sample_rows=sample_rows,
        file_readers=file_readers,
        spark=spark,
        master=master,
    )
    chosen = list(dict.fromkeys(t.strip().lower() for t in tables)) if tables else []
    if not chosen and not paths:
        everywhere = discovery.settings.discovery_derived if derived is None else derived
        chosen = graph.located_table_ids() if everywhere else graph.root_table_ids()
    entries = graph.catalog_entries(chosen)
    run = DiscoveryRun(run=discovery.run)
    threshold = discovery.settings.discovery_auto_accept
    for table_id in chosen:
        report = discovery.table(table_id, entries.get(table_id), force=force)
        run.tables.append(report)
        run.proposed += len(report.proposals)
        for proposal in report.proposals:
            if threshold is not None and proposal.confidence >= threshold:
                accepted = accept(graph, policy, proposal.column, actor=AUTO_ACTOR)
                proposal.status, proposal.by, proposal.at = accepted.status, accepted.by, accepted.at
                run.auto_accepted += 1
        run.flagged += len(report.flags)
    run.tables += [discovery.path(path) for path in paths]
    run.values = sum(report.values for report in run.tables)
    run.seconds = round(time.monotonic() - began, 3)
    return run


# ---------------------------------------------------------------- proposals and decisions


def proposals(
    graph: GraphStore,
    *,
    status: str | None = None,
    table: str | None = None,
    column: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Page[ColumnProposal]:
    """A page of proposals in column id order (`status`: open, accepted, rejected); `column`: that
    column's proposal only (a page of one or none)."""
    after = decode_cursor(cursor).get("after")
    if column is not None:
        found = graph.discovery_proposals_of([column]).get(column)
        keep = found is not None and (status is None or found.status == status) and (after or "") < column
        return Page(items=[found] if keep else [], next_cursor=None)
    return _column_page(
        graph.discovery_proposals(status=status, table=table, after=after, limit=limit + 1), limit
    )


def flags(
    graph: GraphStore,
    *,
    kind: FlagKind | None = None,
    table: str | None = None,
    column: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Page[DiscoveryFlag]:
    """A page of leak and over-tag flags in column id order, as the last scan of each table left them."""
    after = decode_cursor(cursor).get("after")
    rows = graph.discovery_flags(kind=kind, table=table, column=column, after=after, limit=limit + 1)
    return _column_page(rows, limit)


def _column_page(rows: list, limit: int) -> Page:
    """A page of `limit` of `rows` (fetched `limit + 1`, in column order); the cursor is the
    page's last column."""
    return keyed_page(rows, limit, lambda row: row.column)


def _proposal(graph: GraphStore, column: str) -> ColumnProposal:
    found = graph.discovery_proposals_of([column]).get(column)
    if found is None:
        raise UnknownProposalError(f"{column}: no discovery proposal for this column")
    return found


def accept(
    graph: GraphStore, policy: Policy, column: str, *, actor: str, by: str | None = None
) -> ColumnProposal:
    """Set the proposal's tags on the column as seeds with origin `discovered`, the decision and
    its audit entries in one write. An accepted proposal cannot be accepted again."""
    proposal = _proposal(graph, column)
    if proposal.status == "accepted":
        raise DiscoveryError(f"{column}: the proposal is already accepted")
    store = GraphTagStore(graph, policy)
    at = _now()
    writes = tag_changes.set_statements(
        store,
        column,
        {key: [value] for key, value in proposal.tags.items()},
        by=by or actor,
        actor=actor,
        origin=DISCOVERED,
    )
    writes.append(graph.decide_proposal_statement(column, "accepted", by or actor, at))
    writes.append(
        statement(
            actor,
            "discovery.accept",
            column,
            {"status": proposal.status},
            {"status": "accepted", "tags": proposal.tags, "confidence": proposal.confidence},
        )
    )
    graph.write_all(writes)
    return proposal.model_copy(update={"status": "accepted", "by": by or actor, "at": at})


def reject(graph: GraphStore, policy: Policy, column: str, *, actor: str) -> ColumnProposal:
    """Remember that the column holds no such tag: it is not proposed again until its content
    fingerprint changes. Rejecting an accepted proposal also takes back the seeds it set, in the
    same write."""
    proposal = _proposal(graph, column)
    if proposal.status == "rejected":
        raise DiscoveryError(f"{column}: the proposal is already rejected")
    writes: list[tuple[str, dict]] = []
    if proposal.status == "accepted":
        _, writes = tag_changes.unset_statements(
            GraphTagStore(graph, policy), column, list(proposal.tags), actor=actor, origin=DISCOVERED
        )
    at = _now()
    writes.append(graph.decide_proposal_statement(column, "rejected", actor, at))
    writes.append(
        statement(
            actor,
            "discovery.reject",
            column,
            {"status": proposal.status},
            {"status": "rejected", "tags": proposal.tags, "confidence": proposal.confidence},
        )
    )
    graph.write_all(writes)
    return proposal.model_copy(update={"status": "rejected", "by": actor, "at": at})


__all__ = [
    "AUTO_ACTOR",
    "DISCOVERED",
    "Discovery",
    "DiscoveryError",
    "DiscoveryRun",
    "OrcFiles",
    "PolicyTags",
    "TableDiscovery",
    "UnknownProposalError",
    "accept",
    "discover",
    "flags",
    "proposals",
    "readers",
    "reject",
]
