"""Users, tokens, sessions and grants in the graph, each change written with its audit entry.

Nodes: `User {name, role, databases, created_at}` (databases: JSON list or null = all),
`ApiToken {id, user, salt, hash, created_at, last_used}`, `Session {id_hash, user, token,
expires_at}`. A user revoked through one API process is refused by every other one at its next
request: every change to users or tokens, and every logout, moves the graph's `accounts` change
stamp, and an API process reuses a token's or a session's row (`reuse_seconds`) only while that
stamp is unchanged. Reading the stamp is a plain key read the graph server answers at once even
while a propagation keeps its query threads busy; reading the row is a graph query that waits
behind them. A backend without stamps (Neo4j) reads the row on every request.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from watershed.api.service.accounts import tokens
from watershed.api.service.accounts.names import InvalidUserNameError, user_name
from watershed.api.service.accounts.rights import Me, Role, check_role, fold_databases
from watershed.api.service.audit import CREATE_ENTRY, audit_params
from watershed.graph.errors import WatershedError
from watershed.graph.kept import KeptReads
from watershed.graph.store import GraphStore

#: last_used is written at most this often per token (a write per request would be wasteful)
LAST_USED_RESOLUTION_MS = 60_000

log = logging.getLogger("watershed.api.service.accounts")

#: the change stamp (GraphStore.change_stamp) every change to users and tokens, and every logout, moves
ACCOUNTS_STAMP = "accounts"
#: token and session rows an API process keeps at most (least recently used ones go first)
REUSED_ROWS = 10_000

#: last_used is written by one background thread, never inside the request: on FalkorDB a write
#: queues behind the graph's other writers (seconds during a propagation's batches,
#: bench/api_during_propagation_bench.py), and a timestamp must not hold up an answer
_TOUCHES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="watershed-token-touch")


class AccountError(WatershedError, ValueError):
    """A bad account request: an existing user, an unknown role or database name."""


class UnknownUserError(WatershedError, LookupError):
    pass


class UnknownTokenError(WatershedError, LookupError):
    pass


class User(BaseModel):
    name: str
    role: Role
    databases: list[str] | None = None
    created_at: str | None = None


class FoldReport(BaseModel):
    """What `fold_names` renamed (old -> new) and the accounts it left as they were, with why."""

    renamed: dict[str, str] = Field(default_factory=dict)
    left: list[str] = Field(default_factory=list)


class TokenInfo(BaseModel):
    """A token's metadata; its secret is never stored, so it can never be shown again."""

    id: str
    user: str
    created_at: str | None = None
    last_used: str | None = None


class CreatedToken(BaseModel):
    """Shown once, when created."""

    id: str
    user: str
    token: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _ms() -> int:
    return int(time.time() * 1000)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _databases(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    cleaned = fold_databases(value)
    for d in cleaned:
        if "." in d or "`" in d:
            raise AccountError(f"database {d!r}: a database name has no dots or backticks")
    if not cleaned:
        raise AccountError("databases: give at least one database, or none for all")
    return cleaned


def _user(name: str, role: str, databases: str | None, created_at: str | None) -> User:
    return User(
        name=name, role=role, databases=json.loads(databases) if databases else None, created_at=created_at
    )


USER_FIELDS = "u.name, u.role, u.databases, u.created_at"
GET_USER = f"MATCH (u:User {{name: $name}}) RETURN {USER_FIELDS}"
# An account stored before names were folded to lower case (`Alice`): found by any spelling
# until `watershed users fold-names` folds it; a folded twin (`alice`) is found first.
GET_UNFOLDED_USER = (
    f"MATCH (u:User) WHERE toLower(u.name) = $name RETURN {USER_FIELDS} ORDER BY u.name LIMIT 1"
)
USER_NAMES = "MATCH (u:User) RETURN u.name ORDER BY u.name"
# the cursor compared as a plain string: FalkorDB's index compares names without regard to case
# (and folds non-ASCII ones), unlike ORDER BY, so an indexed `u.name > $after` skipped `alice`
# after `Alice`, or `张三` after `zoe`
LIST_USERS = (
    f"MATCH (u:User) WHERE toString(u.name) > $after RETURN {USER_FIELDS} ORDER BY u.name LIMIT $limit"
)
COUNT_USERS = "MATCH (u:User) RETURN count(u)"
# Create only when absent, in one statement with its audit entry (two processes adding the
# same name: one wins, the other sees no row).
ADD_USER = (
    # (`WITH old WHERE old IS NULL` creates anyway on FalkorDB 4.16: count instead); compared
    # folded, so no account is added beside an unfolded one of the same name (users are few)
    "OPTIONAL MATCH (old:User) WHERE toLower(old.name) = $name WITH count(old) AS existing WHERE existing = 0 "
    "CREATE (u:User {name: $name, role: $role, databases: $databases, created_at: $at}) "
    + CREATE_ENTRY
    + " RETURN u.name"
)
UPDATE_USER = (
    "MATCH (u:User {name: $name}) SET u.role = $role, u.databases = $databases "
    + CREATE_ENTRY
    + " RETURN u.name"
)
# Deleting the user is what revokes: token and session lookups join to the User node.
DELETE_USER = "MATCH (u:User {name: $name}) " + CREATE_ENTRY + " DELETE u RETURN count(*)"
DELETE_USER_TOKENS = "MATCH (t:ApiToken {user: $name}) DELETE t"
DELETE_USER_SESSIONS = "MATCH (s:Session {user: $name}) DELETE s"
# Folding an unfolded name (or renaming a case twin) moves everything that names the user.
RENAME_USER = (
    "MATCH (u:User {name: $old}) OPTIONAL MATCH (taken:User {name: $new}) WITH u, count(taken) AS existing "
    "WHERE existing = 0 SET u.name = $new " + CREATE_ENTRY + " RETURN u.name"
)
RENAME_REFERENCES = [
    "MATCH (t:ApiToken {user: $old}) SET t.user = $new",
    "MATCH (s:Session {user: $old}) SET s.user = $new",
    "MATCH (m:DataRoleMember {kind: 'user', name: $old}) SET m.name = $new",
    "MATCH (g:GroupMember {user: $old}) SET g.user = $new",
]

ADD_TOKEN = (
    "MATCH (u:User {name: $user}) "
    "CREATE (t:ApiToken {id: $id, user: $user, salt: $salt, hash: $hash, created_at: $at}) "
    + CREATE_ENTRY
    + " RETURN t.id"
)
LIST_TOKENS = (
    "MATCH (t:ApiToken {user: $user}) WHERE t.id > $after "
    "RETURN t.id, t.user, t.created_at, t.last_used ORDER BY t.id LIMIT $limit"
)
DELETE_TOKEN = (
    "MATCH (t:ApiToken {id: $id}) WHERE t.user = $user " + CREATE_ENTRY + " DELETE t RETURN count(*)"
)
DELETE_TOKEN_SESSIONS = "MATCH (s:Session {token: $id}) DELETE s"
AUTH_TOKEN = (
    "MATCH (t:ApiToken {id: $id}) MATCH (u:User {name: t.user}) "
    "RETURN t.salt, t.hash, t.last_used, u.name, u.role, u.databases"
)
TOUCH_TOKEN = "MATCH (t:ApiToken {id: $id}) SET t.last_used = $now"

# The token must still exist when the session is made: a login racing the token's revocation
# (which deletes the token's sessions) must not leave a session behind it.
ADD_SESSION = (
    "MATCH (u:User {name: $user}) MATCH (t:ApiToken {id: $token}) WHERE t.user = $user "
    "CREATE (s:Session {id_hash: $id_hash, user: $user, token: $token, expires_at: $expires_at}) RETURN s.user"
)
AUTH_SESSION = (
    "MATCH (s:Session {id_hash: $id_hash}) WHERE s.expires_at > $now MATCH (u:User {name: s.user}) "
    "RETURN s.expires_at, u.name, u.role, u.databases"
)
DELETE_SESSION = "MATCH (s:Session {id_hash: $id_hash}) DELETE s RETURN count(*)"
DELETE_EXPIRED_SESSIONS = "MATCH (s:Session) WHERE s.expires_at <= $now DELETE s"


class AccountStore:
    def __init__(
        self, graph: GraphStore, reuse_seconds: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`reuse_seconds` > 0: a verified token's or session's row is reused while the accounts stamp stays the
        same, for at most that long by `clock` (the bound on a change made around this class, such
        as a hand-written Cypher edit, or a writer that died between its write and its restamp)."""
        self.graph = graph
        #: tokens whose last_used write is queued or running (one at a time per token)
        self._touching: set[str] = set()
        self._touching_lock = threading.Lock()
        #: ("token", id) -> its AUTH_TOKEN row, and ("session", id hash) -> its AUTH_SESSION row
        self._reused = KeptReads(
            graph, ACCOUNTS_STAMP, seconds=reuse_seconds, maxsize=REUSED_ROWS, timer=clock
        )

    # ------------------------------------------------------------ users

    def get(self, name: str) -> User:
        """The user `name` (any case; InvalidUserNameError outside the rule), as stored."""
        name = user_name(name)
        rows = self.graph.read(GET_USER, {"name": name}) or self.graph.read(GET_UNFOLDED_USER, {"name": name})
        if not rows:
            raise UnknownUserError(f"user {name} not found")
        return _user(*rows[0])

    def users(self, after: str = "", limit: int = 50) -> list[User]:
        return [_user(*row) for row in self.graph.read(LIST_USERS, {"after": after, "limit": limit})]

    def count(self) -> int:
        return int(self.graph.read(COUNT_USERS)[0][0])

    def add(self, name: str, role: str, databases: list[str] | None, actor: str) -> User:
        name = user_name(name)
        try:
            role = check_role(role)
        except ValueError as exc:
            raise AccountError(str(exc)) from None
        databases = _databases(databases)
        user = User(name=name, role=role, databases=databases, created_at=_now())
        params = {
            "name": name,
            "role": role,
            "databases": json.dumps(databases) if databases is not None else None,
            "at": user.created_at,
            **audit_params(actor, "user.add", f"user:{name}", None, user.model_dump()),
        }
        if not self.graph.execute(ADD_USER, params):
            raise AccountError(f"user {name} already exists")
        return user

    def update(self, name: str, actor: str, role: str | None = None, databases: Any = ...) -> User:
        """Change a user's role and/or database grant (`databases=None` = all databases)."""
        before = self.get(name)
        name = before.name
        after = before.model_copy()
        if role is not None:
            try:
                after.role = check_role(role)
            except ValueError as exc:
                raise AccountError(str(exc)) from None
        if databases is not ...:
            after.databases = _databases(databases)
        params = {
            "name": name,
            "role": after.role,
            "databases": json.dumps(after.databases) if after.databases is not None else None,
            **audit_params(actor, "user.grant", f"user:{name}", before.model_dump(), after.model_dump()),
        }
        if not self._restamped_after(lambda: bool(self.graph.execute(UPDATE_USER, params))):
            raise UnknownUserError(f"user {name} not found")
        return after

    def delete(self, name: str, actor: str) -> User:
        before = self.get(name)
        name = before.name

        def writes() -> bool:
            rows = self.graph.execute(
                DELETE_USER,
                {"name": name, **audit_params(actor, "user.delete", f"user:{name}", before.model_dump())},
            )
            if not rows or not rows[0][0]:
                return False
            self.graph.write_all(
                [(DELETE_USER_TOKENS, {"name": name}), (DELETE_USER_SESSIONS, {"name": name})]
            )
            return True

        if not self._restamped_after(writes):
            raise UnknownUserError(f"user {name} not found")
        return before

    def fold_names(self, actor: str, renames: dict[str, str] | None = None) -> FoldReport:
        """Give every account stored before names were case-insensitive its folded name (`Alice`
        -> `alice`), with its tokens, sessions and data-role memberships; `renames` names the new
        name of a stored one instead (needed for a case twin of another account, or a name
        outside the rule). Nothing is merged or deleted: an account it cannot rename is left, and
        said why. Each rename is audited (`user.rename`); running it again changes nothing."""
        renames = dict(renames or {})
        stored = {row[0] for row in self.graph.read(USER_NAMES)}
        report = FoldReport()
        report.left += [f"user {old!a}: not found" for old in sorted(set(renames) - stored)]

        def writes() -> bool:
            for old in sorted(stored):
                try:
                    new = user_name(renames.get(old, old))
                except InvalidUserNameError as exc:
                    hint = "" if old in renames else f" (rename it: {old!a}=NEW)"
                    report.left.append(f"{exc}{hint}")
                    continue
                if new == old:
                    continue
                if new in stored:
                    report.left.append(f"user {old!a}: {new} exists (rename it: {old!a}=NEW)")
                    continue
                params = {"old": old, "new": new}
                audit = audit_params(actor, "user.rename", f"user:{new}", {"name": old}, {"name": new})
                if not self.graph.execute(RENAME_USER, {**params, **audit}):
                    report.left.append(f"user {old!a}: changed meanwhile, run it again")
                    continue
                self.graph.write_all([(statement, params) for statement in RENAME_REFERENCES])
                stored.discard(old)
                stored.add(new)
                report.renamed[old] = new
            return bool(report.renamed)

        self._restamped_after(writes)
        return report

    # ------------------------------------------------------------ tokens

    def create_token(self, user: str, actor: str) -> CreatedToken:
        user = self.get(user).name
        token = tokens.new_token()
        at = _now()
        params = {
            "user": user,
            "id": token.id,
            "salt": token.salt,
            "hash": token.hash,
            "at": at,
            **audit_params(actor, "token.create", f"user:{user}", None, {"id": token.id, "created_at": at}),
        }
        # tokens and sessions are the accounts stamp's alone: no check's kept reads name them
        if not self.graph.record(ADD_TOKEN, params):
            raise UnknownUserError(f"user {user} not found")
        return CreatedToken(id=token.id, user=user, token=token.text)

    def tokens(self, user: str, after: str = "", limit: int = 50) -> list[TokenInfo]:
        user = self.get(user).name
        rows = self.graph.read(LIST_TOKENS, {"user": user, "after": after, "limit": limit})
        return [TokenInfo(id=i, user=u, created_at=c, last_used=_iso(last)) for i, u, c, last in rows]

    def revoke_token(self, user: str, token_id: str, actor: str) -> None:
        try:
            user = self.get(user).name
        except UnknownUserError:
            raise UnknownTokenError(f"token {token_id} of user {user} not found") from None
        params = {
            "id": token_id,
            "user": user,
            **audit_params(actor, "token.revoke", f"user:{user}", {"id": token_id}),
        }

        def writes() -> bool:
            rows = self.graph.record(DELETE_TOKEN, params)
            if not rows or not rows[0][0]:
                return False
            self.graph.record(DELETE_TOKEN_SESSIONS, {"id": token_id})
            return True

        if not self._restamped_after(writes):
            raise UnknownTokenError(f"token {token_id} of user {user} not found")

    # ------------------------------------------------------------ authentication

    def authenticate(self, presented: str) -> tuple[Me, str] | None:
        """The caller a presented token belongs to, and the token id; None for any bad token.

        None never says why (unknown id, wrong secret, deleted user): the answer is the same.
        """
        try:
            token_id, secret = tokens.parse(presented)
        except tokens.MalformedTokenError:
            return None
        row = self._token_row(token_id)
        if row is None:
            tokens.hash_secret(secret, "00" * 16)  # same work as a known id: no timing hint
            return None
        salt, stored, last_used, name, role, databases = row
        if not tokens.verify(token_id, secret, salt, stored):
            return None
        now = _ms()
        if last_used is None or now - int(last_used) > LAST_USED_RESOLUTION_MS:
            self._touch_later(token_id, now)
            self._reuse_touched(token_id, now)
        me = Me(name=name, role=role, databases=json.loads(databases) if databases else None)
        return me, token_id

    def _token_row(self, token_id: str) -> list[Any] | None:
        """The token's AUTH_TOKEN row: reused while the accounts stamp is the one it was read under."""
        # A kept row answers without the graph query an unknown id still costs: that tells an
        # attacker only that an id they already hold is in use (ids are 64 random bits).
        return self._kept_row(("token", token_id), AUTH_TOKEN, {"id": token_id})

    def _kept_row(self, key: tuple[str, str], query: str, params: dict) -> list[Any] | None:
        """The first row of `query`, kept under `key` and reused while the accounts stamp is the
        one it was read under; None (never kept) when the query finds nothing."""
        stamp = self._reused.stamp()
        kept = self._reused.get(stamp, key)
        if kept is not None:
            return kept
        rows = self.graph.read(query, params)
        if not rows:
            return None
        self._reused.put(stamp, key, list(rows[0]))
        return rows[0]

    def _reuse_touched(self, token_id: str, now: int) -> None:
        """The kept row says the token was just used, or every request would queue another touch.

        Changed in place: storing the entry again would restart its time in the cache."""
        kept = self._reused.peek(("token", token_id))
        if kept is not None:
            kept[2] = now

    def _restamped_after(self, writes: Callable[[], bool]) -> bool:
        """Run `writes` (True when it changed users, tokens or sessions) and move the accounts stamp
        when it did, or when it failed part way (what it wrote must not stay hidden behind rows kept
        from before). A change that found nothing moves nothing: any caller can ask for one (a
        made-up cookie's logout, an unknown token id of their own), and each move makes every
        process read its rows from the graph again."""
        try:
            changed = writes()
        except BaseException:
            self.graph.restamp(ACCOUNTS_STAMP)
            raise
        if changed:
            self.graph.restamp(ACCOUNTS_STAMP)
        return changed

    def _touch_later(self, token_id: str, now: int) -> None:
        with self._touching_lock:
            if token_id in self._touching:
                return
            self._touching.add(token_id)
        try:
            _TOUCHES.submit(self._touch, token_id, now)
        except RuntimeError:
            # the interpreter is shutting down: the request still gets its answer
            with self._touching_lock:
                self._touching.discard(token_id)

    def _touch(self, token_id: str, now: int) -> None:
        try:
            self.graph.record(TOUCH_TOKEN, {"id": token_id, "now": now})
        except Exception as exc:
            # informational only: the next request after the resolution tries again
            log.warning("could not record the last use of token %s: %s", token_id, type(exc).__name__)
        finally:
            with self._touching_lock:
                self._touching.discard(token_id)

    def open_session(self, me: Me, token_id: str, hours: float) -> str | None:
        """A new session for `me`; returns the cookie's secret (only its hash is stored), or None
        when the token or its user is gone by now."""
        secret = tokens.session_secret()
        now = _ms()
        # a login must not make every process's query checks read the graph again
        self.graph.record(DELETE_EXPIRED_SESSIONS, {"now": now})
        made = self.graph.record(
            ADD_SESSION,
            {
                "user": me.name,
                "id_hash": tokens.session_hash(secret),
                "token": token_id,
                "expires_at": now + int(hours * 3_600_000),
            },
        )
        return secret if made else None

    def session(self, secret: str) -> Me | None:
        """The caller a session cookie belongs to; None when it is unknown, expired or logged out.

        The row is kept like a token's (reused while the accounts stamp stays); its expiry is
        checked at every use, so a kept row never outlives its session."""
        now = _ms()
        id_hash = tokens.session_hash(secret)
        row = self._kept_row(("session", id_hash), AUTH_SESSION, {"id_hash": id_hash, "now": now})
        if row is None:
            return None
        expires_at, name, role, databases = row
        if int(expires_at) <= now:
            return None
        return Me(name=name, role=role, databases=json.loads(databases) if databases else None)

    def close_session(self, secret: str) -> None:
        """Log out: the session is deleted, and the stamp moves so no process answers from a kept row."""

        def writes() -> bool:
            rows = self.graph.record(DELETE_SESSION, {"id_hash": tokens.session_hash(secret)})
            return bool(rows and rows[0][0])

        self._restamped_after(writes)
