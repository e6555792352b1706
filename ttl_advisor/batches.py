"""TTL advice for the whole graph, one batch of tables at a time, in bounded memory; a run advises
only the tables whose columns' inputs changed since the last complete run.

Nothing holds the whole warehouse's lineage at once: a run pages through the table ids in id
order (`ttl_batch_tables` at a time), reads only those tables, their columns, the FLOWS_TO and
INFLUENCES edges leaving those columns and the READS into those tables, advises that batch,
stores it and lets it go; only the counts carry over. The advice of a column depends on nothing
outside its table's batch, so the result equals the whole-graph advice (`advise` over
`catalog_from_graph` and `index_graph`) exactly, whatever the batch size.

Incremental (`store_advice`, the default): a column's advice depends on its table's catalog facts
(TTL, partitioning, location, outside readers), its columns, the uses of its columns (the edges
leaving them and their tasks' READS of the table) and, for the savings, the table's files. The
graph marks a table (`Table.uses_changed_at`, the graph server's clock) in the write that changes
any of the first three (graph/queries.py: MERGE_TABLES, CREATE_MISSING_COLUMNS, and a task's load
or deletion marks the tables it read and whose columns its old and new edges leave); the files
are compared by a listing fingerprint kept on the table with its advice (`Table.ttl_files`).
A run advises the tables marked since the last complete run began (less
`ttl_clock_margin_seconds`, for a write whose clock was read before it committed) and those whose fingerprint differs, and carries
every other column's stored advice forward untouched: an unchanged column costs nothing. A full
run (every table) is made when asked (`full`, `ttl_incremental` false), when no complete run is
recorded, or when the settings the advice depends on changed (`advice_digest`).

Reliability: each batch's recommendations are written with the run id by `store_recommendations`
(idempotent SETs), so running the same run id twice leaves the same graph. The run's record
(`TtlAdviceState`: when it began, the settings digest, the run id) is written only after its last
batch. A run that crashes part-way leaves the batches it finished stored under the new run id and
every other column with the advice it had (each column's properties are always one run's whole
recommendation), and the record still names the previous complete run: the next run advises
everything changed since then again, and converges.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from watershed.graph.catalog import Catalog
from watershed.graph.store import GraphStore, chunks
from watershed.ttl_advisor.advisor import advise
from watershed.ttl_advisor.graph_uses import read_batch, table_pages
from watershed.ttl_advisor.model import AdviceCounts, Recommendation
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.sizes import OrcSizeEstimator, listing_fingerprint
from watershed.ttl_advisor.store import store_recommendations

#: the last complete run: the graph's clock when it began, its settings digest, its run id
STATE = "MATCH (s:TtlAdviceState {name: 'complete'}) RETURN s.started_at, s.fingerprint, s.run"
SAVE_STATE = (
    "MERGE (s:TtlAdviceState {name: 'complete'}) "
    "SET s.started_at = $started_at, s.fingerprint = $digest, s.run = $run"
)
#: the graph server's clock, the one every change mark is written with
CLOCK = "RETURN timestamp()"
#: tables whose columns' inputs changed since a time (graph/queries.py sets the mark)
CHANGED_TABLES = "MATCH (t:Table) WHERE t.uses_changed_at >= $since RETURN t.id"
#: tables whose savings are measured on files, with the listing their advice was measured on
SAMPLED_TABLES = (
    "MATCH (t:Table) WHERE t.location IS NOT NULL AND t.partitioned_by IS NOT NULL "
    "RETURN t.id, t.location, t.partitioned_by, t.ttl_files"
)

Mode = Literal["full", "incremental"]


@dataclass
class BatchAdvice:
    """One batch's recommendations, with its catalog and the tables whose size could not be sampled."""

    tables: list[str]
    catalog: Catalog
    recommendations: list[Recommendation]
    problems: list[str]
    #: each table's listing fingerprint (sizes.listing_fingerprint), None when it has no files to sample
    files: dict[str, str | None]


def advise_in_batches(
    store: GraphStore,
    settings: AdvisorSettings,
    *,
    table: str | None = None,
    pages: Iterable[list[str]] | None = None,
) -> Iterator[BatchAdvice]:
    """The advice of every table's columns, batch by batch (only `table`'s, in one batch, when
    given; only the tables of `pages` when given)."""
    if pages is None:
        pages = [[table]] if table is not None else table_pages(store, settings.ttl_batch_tables)
    for table_ids in pages:
        batch = read_batch(store, table_ids)
        # one estimator per batch: its cache of sampled tables goes with the batch
        estimator = OrcSizeEstimator(batch.catalog, settings.ttl_sample_files)
        recommendations = advise(
            batch.index, batch.catalog, settings=settings, table=table, estimate=estimator
        )
        files = {
            table_id: listing_fingerprint(entry.location, entry.partition_column_names)
            for table_id, entry in batch.catalog.tables.items()
        }
        yield BatchAdvice(batch.tables, batch.catalog, recommendations, estimator.problems, files)


@dataclass
class StoredAdvice:
    """What a run stored: its counts (of the columns it advised), whether it was full, and how
    many tables it advised."""

    counts: AdviceCounts
    mode: Mode
    tables: int


def due_tables(store: GraphStore, since: int) -> list[str]:
    """The tables whose columns' advice may differ from what is stored: marked since `since` (the
    graph's clock, ms), or whose files' listing differs from the one their advice was measured on."""
    due = {row[0] for row in store.read(CHANGED_TABLES, {"since": since}) if row[0] is not None}
    for table_id, location, partitioned_by, kept in store.read(SAMPLED_TABLES):
        if table_id not in due and listing_fingerprint(location, list(partitioned_by or [])) != kept:
            due.add(table_id)
    return sorted(due)


def store_advice(
    store: GraphStore, run_id: str, settings: AdvisorSettings, *, full: bool = False
) -> StoredAdvice:
    """Advise and store under `run_id` the columns whose inputs changed since the last complete run
    (every column when `full`, see the module's notes), batch by batch; the totals."""
    started_at = store.read(CLOCK)[0][0]
    digest = settings.advice_digest()
    state = store.read(STATE)
    mode: Mode = "full"
    pages: Iterable[list[str]]
    if full or not settings.ttl_incremental or not state or state[0][0] is None or state[0][1] != digest:
        pages = table_pages(store, settings.ttl_batch_tables)
    else:
        mode = "incremental"
        due = due_tables(store, int(state[0][0]) - settings.ttl_clock_margin_seconds * 1000)
        pages = (list(page) for page in chunks(due, settings.ttl_batch_tables))
    counts = AdviceCounts()
    tables = 0
    for batch in advise_in_batches(store, settings, pages=pages):
        store_recommendations(store, batch.recommendations, run_id, batch.files)
        counts.add(batch.recommendations)
        tables += len(batch.tables)
    # last: a run cut short leaves the previous complete run's record, and the next run redoes it
    store.write_all([(SAVE_STATE, {"started_at": started_at, "digest": digest, "run": run_id})])
    return StoredAdvice(counts=counts, mode=mode, tables=tables)
