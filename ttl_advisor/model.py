"""Models of TTL advice: a column's downstream uses, and the recommendation they justify."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field, model_validator

Status = Literal["ttl", "keep", "unused"]


class ColumnUse(BaseModel):
    """One task that reads a column (as a value source or a weak reference), with the window it reads."""

    task_id: str
    #: how the task uses the column: `value:<kind>` or a weak-reference role (`filter`, `join`, ...)
    roles: list[str] = Field(default_factory=list)
    #: tables this task writes from the column
    targets: list[str] = Field(default_factory=list)
    #: days back from the run date the task reads the column's table; None = unbounded
    window_days: int | None = None
    #: the partition predicates that give the window
    predicates: list[str] = Field(default_factory=list)
    #: partition predicates that could not be evaluated (they make the read unbounded)
    unparsed_predicates: list[str] = Field(default_factory=list)


class Savings(BaseModel):
    """Bytes a shorter column TTL would free, from sampled ORC files of the table."""

    column_share: float
    bytes_per_partition: int
    partitions_beyond_ttl: int
    bytes: int
    sampled_files: int


class Recommendation(BaseModel):
    column: str
    table: str
    status: Status
    #: recommended retention in days (status `ttl`)
    ttl_days: int | None = None
    max_window_days: int | None = None
    margin_days: int = 0
    table_ttl_days: int | None = None
    #: the recommendation was cut down to the table's own TTL
    capped: bool = False
    shorter_than_table: bool = False
    #: tasks that read the column without a partition bound (status `keep`)
    keep_for: list[str] = Field(default_factory=list)
    #: date the graph last saw a use of an `unused` column, when it knows one
    last_seen_use: str | None = None
    #: tools outside the warehouse that read the table (the catalog's `external_readers`): a
    #: column no task reads is kept for them, never `unused`
    read_outside_by: list[str] = Field(default_factory=list)
    evidence: list[ColumnUse] = Field(default_factory=list)
    #: None when the table's size is unknown
    savings: Savings | None = None

    @property
    def savings_bytes(self) -> int | None:
        return None if self.savings is None else self.savings.bytes

    @computed_field
    @property
    def days_cut(self) -> int | None:
        """Days of retention the advice cuts from the table's TTL (all of it when unused, none to
        keep); None when the table has no TTL (kept for ever: the cut is not a number of days).
        What a list orders by after the bytes, which only a sampled table has."""
        if self.table_ttl_days is None:
            return None
        if self.status == "unused":
            return self.table_ttl_days
        if self.status == "ttl" and self.ttl_days is not None:
            return max(self.table_ttl_days - self.ttl_days, 0)
        return 0

    @model_validator(mode="after")
    def _never_shorter_than_a_use(self) -> Recommendation:
        """Advice must never delete data its own evidence says is still read.

        A TTL is at least the widest window in the evidence; only the table's own
        TTL may cut it (that data goes with the table anyway, whatever the column TTL).
        """
        if self.status != "ttl":
            return self
        windows = [u.window_days for u in self.evidence if u.window_days is not None]
        widest = max(windows, default=0)
        at_table_ttl = self.capped and self.ttl_days == self.table_ttl_days
        if self.ttl_days is None or (self.ttl_days < widest and not at_table_ttl):
            raise ValueError(
                f"{self.column}: a TTL of {self.ttl_days} days is shorter than the {widest}-day window "
                "its evidence reads"
            )
        return self


class AdviceCounts(BaseModel):
    """Totals over the batches of a run."""

    #: columns that got a recommendation
    columns: int = 0
    ttl: int = 0
    shorter_than_table: int = 0
    keep: int = 0
    unused: int = 0

    def add(self, recommendations: list[Recommendation]) -> None:
        self.columns += len(recommendations)
        for rec in recommendations:
            if rec.status == "ttl":
                self.ttl += 1
            elif rec.status == "keep":
                self.keep += 1
            else:
                self.unused += 1
            self.shorter_than_table += rec.shorter_than_table
