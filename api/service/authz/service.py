"""The query-time authorization service: points, decisions and masked rewrites for a user's query.

A check reads from the graph the catalog entries of the tables the query names with the current
tags of those tables and their columns, the user's grants and the admins (for a denial's
suggestions), in one batched read (`authz.reads`; one more per level of views). With
`reuse_seconds` > 0 a service keeps what it read under the graph's data stamp (`graph.kept`),
which every write to them moves, and reads again, in one read, only what it has not kept under
the stamp. A check runs under the stamp its process last saw and
queues its audit entry only if the stamp is still that one (`GraphStore.queue_record`), else it
runs again under the stamp now. So every process still agrees the moment a grant, a tag or a
table changes, and a check on a quiet graph costs one round trip, its audit entry. Every
decision is written to the audit trail (user, query hash, decision, missing cells, masked
outputs), never the SQL text; the entry is bookkeeping and leaves the stamp where it was.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import NamedTuple, TypeAlias, TypeVar

from sqlglot import exp

from watershed.api.service.accounts.names import user_name
from watershed.api.service.accounts.rights import ForbiddenError, Me
from watershed.api.service.accounts.store import AccountStore, UnknownUserError
from watershed.api.service.authz.decide import decide, parse_grants
from watershed.api.service.authz.grants import GrantStore, admins_among, grant_databases, record_decision
from watershed.api.service.authz.masking import output_masks, plain_tags
from watershed.api.service.authz.reads import CheckRead, TableRead, read_for_check
from watershed.graph import ids
from watershed.graph.authz import Decision, Grant, OutputMask, QueryPoints, Rewrite
from watershed.graph.catalog import CatalogTable
from watershed.graph.kept import DATA_STAMP, KeptReads
from watershed.graph.store import GraphStore
from watershed.ingest.points import QueryError, catalog_for, parse_query, query_points
from watershed.ingest.rewrite import RewriteError, masked_query
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy

#: what a service keeps at most: a table's entry with its tags weighs its columns (about 0.5 KB
#: each) and its tagged nodes, a user's grants, the admins or a name found unknown weigh 1 each
KEPT_WEIGHT = 200_000


T = TypeVar("T")
#: what a check answers, the decision to audit and the outputs its entry names as masked
_Answer: TypeAlias = tuple[T, Decision, "list[OutputMask] | None"]


class _Analysis(NamedTuple):
    """A query text's statement and points under one stamp; it weighs the catalog entries it was
    computed from, so an analysis is kept only where its tables' entries could be."""

    statement: exp.Expression
    points: QueryPoints
    weight: int
    #: the tables whose entries decided the points: every node of the points is one or a column of one
    tables: tuple[str, ...] = ()


def _weight(value: object) -> int:
    return value.weight if isinstance(value, (_Analysis, TableRead)) else 1


#: what `KeptReads.get` answers for a key not kept (a kept value may be None: a table found unknown)
_NOT_KEPT = object()


class AuthzService:
    """`points`, `check` and `rewrite` of a query for a user; `grants` manages roles and grants."""

    def __init__(
        self,
        graph: GraphStore,
        policy: Policy,
        *,
        default_database: str = "default",
        reuse_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        keep_analyses: bool = True,
    ) -> None:
        """`reuse_seconds` > 0: catalog entries, grants and tags read for a check are kept while the
        graph's data stamp stays, for at most that long by `clock` (the bound on a change made
        around the stamp); 0 reads them for every check. With them, `keep_analyses` keeps each
        query text's parse and points as well (they follow from the text and the catalog entries
        alone), so a repeated query is not analysed again while the stamp stays; False analyses
        every check's text (what a text not seen under the stamp costs)."""
        self.graph = graph
        self.policy = policy
        self.default_database = default_database
        self.grants = GrantStore(graph, policy)
        self._accounts = AccountStore(graph)
        self._tags = GraphTagStore(graph, policy)
        self._kept = KeptReads(
            graph, DATA_STAMP, seconds=reuse_seconds, maxsize=KEPT_WEIGHT, timer=clock, weigh=_weight
        )
        self._keep_analyses = keep_analyses

    def points(self, sql: str, dialect: str = "spark") -> QueryPoints:
        """The query's permission points; QueryError when it cannot be analysed."""
        return self._analysed(sql, dialect, self._kept.stamp(), CheckRead()).points

    def _gather(
        self, stamp: str | None, found: CheckRead, tables: list[str], user: str | None, admins: bool = False
    ) -> None:
        """Into `found`: `tables`' entries and tags, `user`'s grants (None: not wanted) and, when
        `admins` or with any other read, the admins; kept ones under `stamp`, the rest in one
        batched read, kept under `stamp` in turn."""
        kept = self._kept
        wanted = []
        for table in tables:
            if table not in found.tables:
                value = kept.get(stamp, ("table", table), _NOT_KEPT)
                if value is _NOT_KEPT:
                    wanted.append(table)
                else:
                    found.tables[table] = value
        if user is not None and found.grants is None:
            found.grants = kept.get(stamp, ("grants", user))
        grants_for = user if user is not None and found.grants is None else None
        if found.admins is None:
            found.admins = kept.get(stamp, ("admins",))
        # the admins ride with a read that goes anyway: a denial then needs no read of its own
        with_admins = found.admins is None and (admins or bool(wanted) or grants_for is not None)
        if not (wanted or grants_for is not None or with_admins):
            return
        read = read_for_check(self.graph, wanted, grants_for, with_admins=with_admins)
        for table, value in read.tables.items():
            found.tables[table] = value
            kept.put(stamp, ("table", table), value)
        if read.grants is not None:
            found.grants = read.grants
            kept.put(stamp, ("grants", user), read.grants)
        if read.admins is not None:
            found.admins = read.admins
            kept.put(stamp, ("admins",), read.admins)

    def _entries(
        self, stamp: str | None, found: CheckRead, tables: list[str], user: str | None
    ) -> dict[str, CatalogTable]:
        self._gather(stamp, found, tables, user)
        return {t: read.entry for t in tables if (read := found.tables.get(t)) is not None}

    def _grants_of(self, stamp: str | None, found: CheckRead, user: str) -> list[Grant]:
        self._gather(stamp, found, [], user)
        return found.grants or []

    def _tags_of(self, stamp: str | None, found: CheckRead, tables: tuple[str, ...], nodes: set[str]) -> dict:
        """The current tags of `nodes` (those with tags), from the reads of `tables`, which hold
        them all (kept with the analysis, these may have been read by an earlier check)."""
        self._gather(stamp, found, list(tables), None)
        tags, outside = {}, []
        for node in sorted(nodes):
            read = found.tables.get(node if node in found.tables else ids.parent(node), _NOT_KEPT)
            if read is None:
                continue  # of a table the graph does not have: the query is denied for it
            if read is _NOT_KEPT or node not in read.nodes:
                outside.append(node)  # never a node of the points' catalog entries; read alone
            elif node in read.tags:
                tags[node] = read.tags[node]
        if outside:
            tags.update(self._tags.current_tags(outside))
        return tags

    def _admins_of(self, stamp: str | None, found: CheckRead, database: str) -> list[str]:
        self._gather(stamp, found, [], None, admins=True)
        return admins_among(found.admins or [], database)

    def _analysed(
        self, sql: str, dialect: str, stamp: str | None, found: CheckRead, user: str | None = None
    ) -> _Analysis:
        """The text parsed once and its points, kept under `stamp` for the next check of the same
        text: nothing else decides them but the catalog entries, which the stamp covers. The
        entries are read into `found` with `user`'s grants, in one read."""
        key = ("analysis", dialect, self.default_database, sql)
        kept = self._kept.get(stamp, key) if self._keep_analyses else None
        if kept is not None:
            return kept
        # one parse per check: the catalog lookup, the points and the rewrite share the statement
        statement = parse_query(sql, dialect=dialect)
        catalog = catalog_for(
            statement,
            lambda wanted: self._entries(stamp, found, wanted, user),
            dialect=dialect,
            default_database=self.default_database,
        )
        points = query_points(statement, catalog, dialect=dialect, default_database=self.default_database)
        weight = 1 + sum(len(entry.all_columns) for entry in catalog.tables.values())
        # the tables asked for, those found unknown too: a later check of the text needs them all
        analysis = _Analysis(statement, points, weight, tuple(found.tables))
        if self._keep_analyses:
            self._kept.put(stamp, key, analysis)
        return analysis

    def _authorize(self, caller: Me | None, user: str) -> str:
        """The user whose query is checked, as stored: their own for a caller, else the name folded
        (InvalidUserNameError outside the rule). Checking for someone else needs an admin (a
        gateway); a decision shows what the user may read, so a database-limited admin may ask
        only for a user whose rights all lie inside their databases, as for managing users."""
        if caller is not None and caller.name == user:
            return user
        user = user_name(user)
        if caller is None:
            return user
        if caller.name.lower() == user:
            return caller.name  # an account stored before names were folded checks as stored
        caller.require("admin")
        if caller.databases is None:
            return user
        why = f"checking the queries of user {user} needs admin right on"
        try:
            account = self._accounts.get(user)
        except UnknownUserError:
            account = None
        if account is not None and not caller.within(account.databases):
            if account.databases is None:
                raise ForbiddenError(f"{why} all databases: their {account.role} account covers them all")
            outside = sorted(set(account.databases) - set(caller.databases))[0]
            raise ForbiddenError(f"{why} database {outside}: their {account.role} account covers it")
        for grant in self.grants.grants_of(user):
            reached = grant_databases(grant)
            if caller.within(reached):
                continue
            if reached is None:
                raise ForbiddenError(f"{why} all databases: they hold grant {grant.id} (tag {grant.tag})")
            raise ForbiddenError(f"{why} database {reached[0]}: they hold grant {grant.id} on it")
        return user

    def _decide(self, user: str, sql: str, dialect: str, stamp: str | None):
        statement = None
        found = CheckRead()
        try:
            analysis = self._analysed(sql, dialect, stamp, found, user)
        except QueryError as exc:
            decision = Decision(
                user=user,
                query_hash=hashlib.sha256(sql.encode("utf-8")).hexdigest(),
                allowed=False,
                error=str(exc),
            )
            return decision, [], {}, {}, statement
        statement, points = analysis.statement, analysis.points
        grants = self._grants_of(stamp, found, user)
        nodes = {*points.tables, *points.writes, *points.join_columns}
        nodes.update(c for cell in points.cells for c in cell.columns)
        nodes.update(s.column for column in points.columns for s in column.sources)
        tags = self._tags_of(stamp, found, analysis.tables, nodes) if nodes else {}
        plain = {n: plain_tags(t) for n, t in tags.items()}
        decision = decide(
            user,
            points,
            grants,
            plain,
            self.policy,
            admins_of=lambda database: self._admins_of(stamp, found, database),
        )
        return decision, grants, tags, plain, statement

    def _record(
        self,
        caller: Me | None,
        decision: Decision,
        outputs: list[OutputMask] | None = None,
        stamp: str | None = None,
    ) -> str | None:
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
        return record_decision(self.graph, caller.name if caller else decision.user, payload, stamp=stamp)

    def _audited(self, caller: Me | None, answer: Callable[[str | None], _Answer[T]]) -> T:
        """`answer(stamp)`, its decision audited before it is returned.

        The check first runs under the stamp last seen, without reading it: its entry is queued
        in the one round trip that finds the stamp unchanged, so its reads were current. When the
        stamp has moved, the check runs again under the stamp that round trip answered, read
        before the second run's reads as a first check's stamp is, and its entry goes in then."""
        stamp = self._kept.last_stamp()
        if stamp is not None:
            result, decision, outputs = answer(stamp)
            moved = self._record(caller, decision, outputs, stamp)
            if moved is None:
                return result
            self._kept.saw(moved)
            stamp = moved
        else:
            stamp = self._kept.stamp()  # read before anything it covers
        result, decision, outputs = answer(stamp)
        self._record(caller, decision, outputs)
        return result

    def check(self, user: str, sql: str, dialect: str = "spark", *, caller: Me | None = None) -> Decision:
        """Whether `user` may run `sql`; audited. `caller` None = a trusted in-process caller."""
        user = self._authorize(caller, user)

        def answer(stamp: str | None) -> _Answer[Decision]:
            decision = self._decide(user, sql, dialect, stamp)[0]
            return decision, decision, None

        return self._audited(caller, answer)

    def rewrite(self, user: str, sql: str, dialect: str = "spark", *, caller: Me | None = None) -> Rewrite:
        """The SQL `user` may run (None when denied), masked after computing, and why per output."""
        user = self._authorize(caller, user)
        return self._audited(caller, lambda stamp: self._rewrite(user, sql, dialect, stamp))

    def _rewrite(self, user: str, sql: str, dialect: str, stamp: str | None) -> _Answer[Rewrite]:
        decision, grants, tags, plain, statement = self._decide(user, sql, dialect, stamp)
        if not decision.allowed or decision.points is None:
            return Rewrite(decision=decision), decision, None
        points = decision.points
        outputs = output_masks(points, parse_grants(grants, self.policy), tags, self.policy, plain)
        masks = {o.position: o.mask for o in outputs if o.masked and o.mask}
        try:
            text = masked_query(sql, points.columns, masks, dialect=dialect, statement=statement)
        except RewriteError as exc:
            # masks that cannot be applied must never let the raw values through
            decision = decision.model_copy(
                update={"allowed": False, "error": f"cannot mask the query: {exc}"}
            )
            return Rewrite(decision=decision, outputs=outputs), decision, None
        return Rewrite(decision=decision, sql=text, outputs=outputs), decision, outputs
