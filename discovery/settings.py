"""Discovery settings (`WATERSHED_DISCOVERY_*` environment variables or the settings file)."""

from __future__ import annotations

from pydantic import Field

from watershed.graph.settings import Count, Fraction, GraphSettings, Seconds


class DiscoverySettings(GraphSettings):
    #: the regions (ISO 3166) phone numbers are read in and whose national identifiers are checked
    discovery_regions: list[str] = Field(default_factory=lambda: ["CN", "US"])
    #: at most this many rows are read per table
    discovery_sample_rows: Count = 200
    #: at most this many bytes of decoded columns are read per table (the last batch read may pass it)
    discovery_sample_bytes: Count = 8 * 1024 * 1024
    #: reading a table stops after this long (between two batches: one batch is never cut)
    discovery_sample_seconds: Seconds = 10.0
    #: a local table whose files total at least this many bytes is sampled on Spark when a session
    #: or master is given (`watershed discover --master`, the nightly's session); remote ones always
    discovery_spark_min_bytes: Count = 1024 * 1024 * 1024
    #: a column is proposed when at least this share of its non-null sampled values validate
    discovery_min_confidence: Fraction = 0.8
    #: ... or this share, when the policy's name rules give the column the same pii_type
    discovery_min_confidence_named: Fraction = 0.5
    #: fewer non-null sampled values than this prove nothing: no proposal
    discovery_min_sampled: Count = 10
    #: proposals at or above this confidence are accepted at once (as the `discovery` actor); none: never
    discovery_auto_accept: Fraction | None = None
    #: a run without named tables samples derived tables too (not only roots): leak and over-tag flags
    discovery_derived: bool = False
    #: a propagated tag is flagged as over-tagging when at most this share of the sampled values
    #: validate as its type (and at least discovery_min_sampled were sampled)
    discovery_overtag_max_share: Fraction = 0.02
