"""Knobs of the TTL advisor."""

from __future__ import annotations

from watershed.graph.settings import Count, NonNegativeInt, WatershedSettings


class AdvisorSettings(WatershedSettings):
    #: days added to the widest downstream window, for late reruns and backfills
    ttl_margin_days: NonNegativeInt = 3
    #: ORC files sampled per table to estimate a column's share of the table's bytes
    ttl_sample_files: Count = 3
    #: tables read, advised and stored together: a run holds one batch's lineage at a time.
    #: bench/ttl_memory_bench.py (135k columns): 100 tables peak 42 MiB above imports against 498 MiB
    #: for the whole graph, at the same CPU (x0.96 with the graph server's); 500 tables 153 MiB
    ttl_batch_tables: Count = 100
    #: re-advise only the tables whose columns' inputs changed since the last complete run, and
    #: carry the rest forward (ttl_advisor/batches.py); false: every run advises every column
    ttl_incremental: bool = True
    #: how far before the last complete run began an incremental run looks for change marks: a
    #: Neo4j transaction reads its clock when it starts and may commit after a run began (keep it
    #: above the longest load transaction); FalkorDB runs one query at a time, 0 is exact there
    ttl_clock_margin_seconds: NonNegativeInt = 600

    def advice_digest(self) -> str:
        """What the stored advice depends on among these settings: a run under other values advises
        every column again (the batch size changes no answer)."""
        return f"margin={self.ttl_margin_days};sample_files={self.ttl_sample_files}"
