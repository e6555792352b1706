"""The Spark binding of query-time authorization: a SparkSession that checks and masks first.

    session = guarded(spark, "alice", service)
    session.sql("SELECT ...")        # the rewritten query's DataFrame, or QueryDeniedError
    session.explain("SELECT ...")    # the Rewrite: decision, SQL to run, why each output is masked

pyspark is an optional extra: nothing here imports it, the session is only called (`spark.sql`),
so importing `watershed.api.service.authz` never needs Spark.
"""

from __future__ import annotations

from typing import Any, Protocol

from watershed.graph.authz import MissingCell, Rewrite
from watershed.graph.errors import WatershedError

#: missing cells a QueryDeniedError message lists; the rest are counted
MESSAGE_CELLS = 5
#: what Spark runs, so what the check reads
DIALECT = "spark"


class RewritingService(Protocol):
    """What the binding needs of `AuthzService`."""

    def rewrite(self, user: str, sql: str, dialect: str = "spark") -> Rewrite: ...


class QueryDeniedError(WatershedError, PermissionError):
    """A user may not run a query: the message names the missing cells (never the query's text:
    constants in it may be sensitive); `rewrite` holds the full decision."""

    def __init__(self, user: str, rewrite: Rewrite) -> None:
        self.user = user
        self.rewrite = rewrite
        super().__init__(_message(user, rewrite))


def _cell_text(cell: MissingCell) -> str:
    columns = ", ".join(c.rsplit(".", 1)[-1] for c in cell.columns) or "its rows"
    where = " AND ".join(c.text for c in cell.conditions)
    scope = f" WHERE {where}" if where else ""
    return f"{cell.action} on {cell.table} ({columns}){scope}: {cell.reason}"


def _message(user: str, rewrite: Rewrite) -> str:
    decision = rewrite.decision
    head = f"user {user!r} may not run query {decision.query_hash[:12]}"
    if decision.error:
        return f"{head}: {decision.error}"
    cells = [_cell_text(c) for c in decision.missing[:MESSAGE_CELLS]]
    more = len(decision.missing) - len(cells) + decision.more_missing
    if more > 0:
        cells.append(f"... and {more} more missing cell(s)")
    if not cells:
        return f"{head}: denied"
    return f"{head}; missing: " + "; ".join(cells)


class GuardedSession:
    """A SparkSession seen through one user's grants: every query is checked, then run with the
    masks the user's rights call for applied after everything else is computed.

    Queries are checked as Spark SQL, the dialect Spark runs: a text another dialect reads
    differently (comments, quoting) must never be checked in one reading and run in another.
    """

    def __init__(self, spark: Any, user: str, service: RewritingService) -> None:
        self.spark = spark
        self.user = user
        self.service = service

    def explain(self, query: str) -> Rewrite:
        """The decision and the masked SQL for `query`, without running it."""
        return self.service.rewrite(self.user, query, DIALECT)

    def sql(self, query: str) -> Any:
        """The DataFrame of the user's query as they may see it; QueryDeniedError when denied."""
        rewrite = self.explain(query)
        if not rewrite.decision.allowed or rewrite.sql is None:
            raise QueryDeniedError(self.user, rewrite)
        points = rewrite.decision.points
        if points is not None and points.kind == "select":
            self._same_outputs(query, [c.name for c in points.columns], rewrite)
        return self.spark.sql(rewrite.sql)

    def _same_outputs(self, query: str, checked: list[str], rewrite: Rewrite) -> None:
        """Spark's own reading of the query (analysed, not run: a query is lazy) must return the
        columns the check traced, in order; else the masks would land on other columns."""
        engine = list(self.spark.sql(query).columns)
        if [n.lower() for n in engine] != [n.lower() for n in checked]:
            denied = rewrite.model_copy(
                update={
                    "decision": rewrite.decision.model_copy(
                        update={
                            "allowed": False,
                            "error": f"Spark reads the query's outputs as {engine}, the check as {checked}",
                        }
                    ),
                    "sql": None,
                }
            )
            raise QueryDeniedError(self.user, denied)


def guarded(spark: Any, user: str, service: RewritingService) -> GuardedSession:
    """`spark` for `user`: `.sql(query)` checks and masks before running."""
    return GuardedSession(spark, user, service)
