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
