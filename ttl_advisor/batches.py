"""TTL advice for the whole graph, one batch of tables at a time, in bounded memory.

Nothing holds the whole warehouse's lineage at once: a run pages through the table ids in id
order (`ttl_batch_tables` at a time), reads only those tables, their columns, the FLOWS_TO and
INFLUENCES edges leaving those columns and the READS into those tables, advises that batch,
stores it and lets it go; only the counts carry over. The advice of a column depends on nothing
outside its table's batch, so the result equals the whole-graph advice (`advise` over
`catalog_from_graph` and `index_graph`) exactly, whatever the batch size.

Reliability: each batch's recommendations are written with the run id by `store_recommendations`
(idempotent SETs), so running the same run id twice leaves the same graph. A run that crashes
part-way leaves the batches it finished stored under the new run id and the later ones with the
previous run's values (each column's properties are always one run's whole recommendation); the
next run, or the same run id again, rewrites every batch and converges.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from watershed.graph.catalog import Catalog
from watershed.graph.store import GraphStore
from watershed.ttl_advisor.advisor import advise
from watershed.ttl_advisor.graph_uses import read_batch, table_pages
from watershed.ttl_advisor.model import AdviceCounts, Recommendation
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.sizes import OrcSizeEstimator
from watershed.ttl_advisor.store import store_recommendations


@dataclass
class BatchAdvice:
    """One batch's recommendations, with its catalog and the tables whose size could not be sampled."""

    tables: list[str]
    catalog: Catalog
    recommendations: list[Recommendation]
    problems: list[str]


def advise_in_batches(
    store: GraphStore, settings: AdvisorSettings, *, table: str | None = None
) -> Iterator[BatchAdvice]:
    """The advice of every table's columns, batch by batch (only `table`'s, in one batch, when given)."""
    pages = [[table]] if table is not None else table_pages(store, settings.ttl_batch_tables)
    for table_ids in pages:
        batch = read_batch(store, table_ids)
        # one estimator per batch: its cache of sampled tables goes with the batch
        estimator = OrcSizeEstimator(batch.catalog, settings.ttl_sample_files)
        recommendations = advise(
            batch.index, batch.catalog, settings=settings, table=table, estimate=estimator
        )
        yield BatchAdvice(batch.tables, batch.catalog, recommendations, estimator.problems)


def store_advice(store: GraphStore, run_id: str, settings: AdvisorSettings) -> AdviceCounts:
    """Advise and store every column batch by batch under `run_id`; the totals (see the module's reliability notes)."""
    counts = AdviceCounts()
    for batch in advise_in_batches(store, settings):
        store_recommendations(store, batch.recommendations, run_id)
        counts.add(batch.recommendations)
    return counts
