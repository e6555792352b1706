"""Knobs of the TTL advisor."""

from __future__ import annotations

from watershed.graph.settings import Count, NonNegativeInt, WatershedSettings


class AdvisorSettings(WatershedSettings):
    #: days added to the widest downstream window, for late reruns and backfills
    ttl_margin_days: NonNegativeInt = 3
    #: ORC files sampled per table to estimate a column's share of the table's bytes
    ttl_sample_files: Count = 3
    #: tables read, advised and stored together: a run holds one batch's lineage at a time
    ttl_batch_tables: Count = 500
