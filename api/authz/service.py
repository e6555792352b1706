"""The query-time authorization service: points, decisions and masked rewrites for a user's query.

Each call reads what it needs afresh from the graph (catalog entries of the tables the query
names, the user's grants, the base columns' effective tags), so every process agrees the
moment a grant changes. Every decision is written to the audit trail (user, query hash,
decision, missing cells, masked outputs), never the SQL text.
"""

from __future__ import annotations

import hashlib

from watershed.api.accounts.rights import Me
from watershed.api.authz.decide import decide, parse_grants
from watershed.api.authz.grants import GrantStore, record_decision
from watershed.api.authz.masking import output_masks, plain_tags
from watershed.graph.authz import Decision, OutputMask, QueryPoints, Rewrite
from watershed.graph.store import GraphStore
from watershed.ingest.points import QueryError, catalog_for, parse_query, query_points
from watershed.ingest.rewrite import RewriteError, masked_query
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy


class AuthzService:
    """`points`, `check` and `rewrite` of a query for a user; `grants` manages roles and grants."""

    def __init__(self, graph: GraphStore, policy: Policy, *, default_database: str = "default") -> None:
        self.graph = graph
        self.policy = policy
        self.default_database = default_database
        self.grants = GrantStore(graph, policy)
        self._tags = GraphTagStore(graph, policy)

    def points(self, sql: str, dialect: str = "spark") -> QueryPoints:
        """The query's permission points; QueryError when it cannot be analysed."""
        return self._points(parse_query(sql, dialect=dialect), dialect)

    def _points(self, statement, dialect: str) -> QueryPoints:
        # one parse per check: the catalog lookup, the points and the rewrite share the statement
        catalog = catalog_for(
            statement, self.graph.catalog_entries, dialect=dialect, default_database=self.default_database
        )
        return query_points(statement, catalog, dialect=dialect, default_database=self.default_database)

    @staticmethod
    def _authorize(caller: Me | None, user: str) -> None:
        """A user may check their own query; checking for someone else needs an admin (a gateway)."""
        if caller is not None and caller.name != user:
            caller.require("admin")

    def _decide(self, user: str, sql: str, dialect: str):
        statement = None
        try:
            statement = parse_query(sql, dialect=dialect)
            points = self._points(statement, dialect)
        except QueryError as exc:
            decision = Decision(
                user=user,
                query_hash=hashlib.sha256(sql.encode("utf-8")).hexdigest(),
                allowed=False,
                error=str(exc),
            )
            return decision, [], {}, statement
        grants = self.grants.grants_of(user)
        nodes = {*points.tables, *points.writes, *points.join_columns}
        nodes.update(c for cell in points.cells for c in cell.columns)
        nodes.update(s.column for column in points.columns for s in column.sources)
        tags = self._tags.current_tags(sorted(nodes)) if nodes else {}
        decision = decide(
            user,
            points,
            grants,
            {n: plain_tags(t) for n, t in tags.items()},
            self.policy,
            admins_of=self.grants.admins_of,
        )
        return decision, grants, tags, statement

    def _record(self, caller: Me | None, decision: Decision, outputs: list[OutputMask] | None = None) -> None:
        payload = {
            "user": decision.user,
            "query_hash": decision.query_hash,
            "allowed": decision.allowed,
            "error": decision.error,
            "missing": [
                {
                    "table": m.table,
                    "action": m.action,
                    "columns": m.columns,
                    # the operators only: a condition's constants may be the sensitive values
                    "conditions": [f"{c.column} {c.op.upper()}" for c in m.conditions],
                }
                for m in decision.missing
            ],
            "more_missing": decision.more_missing,
        }
        if outputs is not None:
            payload["masked"] = [o.name for o in outputs if o.masked]
        record_decision(self.graph, caller.name if caller else decision.user, payload)

    def check(self, user: str, sql: str, dialect: str = "spark", *, caller: Me | None = None) -> Decision:
        """Whether `user` may run `sql`; audited. `caller` None = a trusted in-process caller."""
        self._authorize(caller, user)
        decision, _, _, _ = self._decide(user, sql, dialect)
        self._record(caller, decision)
        return decision

    def rewrite(self, user: str, sql: str, dialect: str = "spark", *, caller: Me | None = None) -> Rewrite:
        """The SQL `user` may run (None when denied), masked after computing, and why per output."""
        self._authorize(caller, user)
        decision, grants, tags, statement = self._decide(user, sql, dialect)
        if not decision.allowed or decision.points is None:
            self._record(caller, decision)
            return Rewrite(decision=decision)
        points = decision.points
        outputs = output_masks(points, parse_grants(grants, self.policy), tags, self.policy)
        masks = {o.position: o.mask for o in outputs if o.masked and o.mask}
        try:
            text = masked_query(sql, points.columns, masks, dialect=dialect, statement=statement)
        except RewriteError as exc:
            # masks that cannot be applied must never let the raw values through
            decision = decision.model_copy(
                update={"allowed": False, "error": f"cannot mask the query: {exc}"}
            )
            self._record(caller, decision)
            return Rewrite(decision=decision, outputs=outputs)
        self._record(caller, decision, outputs)
        return Rewrite(decision=decision, sql=text, outputs=outputs)
