"""Single sign-on with OpenID Connect: the authorization-code flow (PKCE, state, nonce) against one
identity provider, its ID token checked, its groups mapped to a role and databases, and a session
like the token login's (docs/sso.md).

A login is two requests that any two API processes may answer: `begin` keeps the flow's secrets
(state, nonce, PKCE verifier) in the graph as an `OidcPending {id_hash, state, nonce, verifier,
expires_at}` node found by the hash of a browser cookie's secret, and `finish` takes it back once
(deleted as it is read), so a callback replayed, or arriving in another browser, finds nothing.

The account an SSO login makes is a `User` like any other, with `oidc_subject` (issuer and
subject) naming who it belongs to; its role and databases are set again from the groups at every
login, in the same write as the audit entry. A local account of the same name (one an admin made
for tokens) is never taken over.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import httpx
from authlib.integrations.httpx_client import OAuth2Client
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import KeySet
from pydantic import BaseModel

from watershed.api.service import audit
from watershed.api.service.accounts import tokens
from watershed.api.service.accounts.names import InvalidUserNameError, user_name
from watershed.api.service.accounts.rights import ROLES, Me, fold_databases
from watershed.api.service.accounts.store import ACCOUNTS_STAMP, USER_FIELDS
from watershed.api.service.settings import ApiSettings, OidcGroupGrant
from watershed.graph.errors import WatershedError
from watershed.graph.store import GraphStore

#: how long a started login may wait for its callback (the provider's login and consent pages)
PENDING_SECONDS = 600
#: ID-token signature algorithms accepted (what the providers the docs name sign with)
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"]
#: how long the discovery document and the provider's keys are reused before being read again
#: (an unknown key id reads the keys at once: the provider rotated them)
METADATA_SECONDS = 3600.0

ADD_PENDING = (
    "CREATE (:OidcPending {id_hash: $id_hash, state: $state, nonce: $nonce, verifier: $verifier, "
    "expires_at: $expires_at})"
)
DELETE_EXPIRED_PENDING = "MATCH (p:OidcPending) WHERE p.expires_at <= $now DELETE p"
# read and deleted in one statement: two callbacks of the same login cannot both find it
TAKE_PENDING = (
    "MATCH (p:OidcPending {id_hash: $id_hash}) "
    "WITH p, p.state AS state, p.nonce AS nonce, p.verifier AS verifier, p.expires_at AS expires_at "
    "DELETE p RETURN state, nonce, verifier, expires_at"
)
GET_ACCOUNT = f"MATCH (u:User) WHERE u.name = $name RETURN {USER_FIELDS}, u.oidc_subject"
ADD_ACCOUNT = (
    "OPTIONAL MATCH (old:User) WHERE toLower(old.name) = $name WITH count(old) AS existing WHERE existing = 0 "
    "CREATE (u:User {name: $name, role: $role, databases: $databases, created_at: $at, "
    "oidc_subject: $subject}) " + audit.CREATE_ENTRY + " RETURN u.name"
)
UPDATE_ACCOUNT = (
    "MATCH (u:User {name: $name}) WHERE u.oidc_subject = $subject "
    "SET u.role = $role, u.databases = $databases " + audit.CREATE_ENTRY + " RETURN u.name"
)
# a session as the token login's (accounts.store), made by SSO: no token, `via` says so
ADD_SESSION = (
    "MATCH (u:User {name: $user}) WHERE u.oidc_subject = $subject "
    "CREATE (s:Session {id_hash: $id_hash, user: $user, via: 'oidc', expires_at: $expires_at}) "
    "RETURN s.user"
)
DELETE_EXPIRED_SESSIONS = "MATCH (s:Session) WHERE s.expires_at <= $now DELETE s"
SESSION_VIA = "MATCH (s:Session {id_hash: $id_hash}) RETURN s.via"


class OidcError(WatershedError, ValueError):
    """A login refused: the message says why, in words a person who tried to sign in can act on
    (it never repeats a token or a secret)."""


class OidcDisabledError(WatershedError, LookupError):
    """Single sign-on is not configured (WATERSHED_OIDC_ISSUER is empty)."""


class OidcProviderError(WatershedError, RuntimeError):
    """The identity provider did not answer, or answered what is not OpenID Connect."""


class OidcInfo(BaseModel):
    """What the login page needs: whether SSO is on, and the provider's name for its button."""

    enabled: bool
    name: str | None = None
    login_url: str | None = None


class Started(BaseModel):
    """A login begun: the provider's authorization URL to send the browser to, and the secret the
    browser keeps in a cookie until the callback."""

    url: str
    browser_secret: str


class Finished(BaseModel):
    me: Me
    session_secret: str


def _ms() -> int:
    return int(time.time() * 1000)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def grant_for(groups: list[str], mapping: dict[str, OidcGroupGrant]) -> OidcGroupGrant | None:
    """The role (and databases) the mapped groups among `groups` give: the highest role of them,
    with the union of the databases its groups name (all databases when one of them names none);
    None when no group is mapped."""
    grants = [mapping[g] for g in groups if g in mapping]
    if not grants:
        return None
    role = max((g.role for g in grants), key=ROLES.index)
    top = [g for g in grants if g.role == role]
    if any(g.databases is None for g in top):
        return OidcGroupGrant(role=role, databases=None)
    return OidcGroupGrant(role=role, databases=fold_databases([d for g in top for d in g.databases or []]))


class OidcLogin:
    """The single sign-on of one identity provider (settings `oidc_*`), shared by the requests of
    one API process: it keeps the provider's discovery document and keys, nothing of a user."""

    def __init__(self, settings: ApiSettings, graph: GraphStore) -> None:
        self.settings = settings
        self.graph = graph
        self.issuer = settings.oidc_issuer.rstrip("/")
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self.issuer)

    @property
    def actor(self) -> str:
        """Who the audit trail names for what a login changes: the provider."""
        return f"oidc:{self.issuer}"

    def info(self) -> OidcInfo:
        if not self.enabled:
            return OidcInfo(enabled=False)
        return OidcInfo(
            enabled=True, name=self.settings.oidc_provider_name or self.issuer, login_url="/api/v1/oidc/login"
        )

    # ------------------------------------------------------------ the provider

    def _client_secret(self) -> str:
        secret = self.settings.oidc_client_secret.get_secret_value()
        if secret:
            return secret
        path = self.settings.oidc_client_secret_file
        if path is None:
            return ""
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise OidcProviderError(
                f"WATERSHED_OIDC_CLIENT_SECRET_FILE={path}: cannot read it ({type(exc).__name__})"
            ) from None

    def _get(self, url: str) -> dict[str, Any]:
        try:
            response = httpx.get(url, timeout=self.settings.oidc_timeout_seconds)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcProviderError(
                f"identity provider: {url} did not answer: {type(exc).__name__}"
            ) from None
        if not isinstance(document, dict):
            raise OidcProviderError(f"identity provider: {url} answered no JSON object")
        return document

    def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (/.well-known/openid-configuration), reused for an hour."""
        with self._lock:
            if self._metadata is None or time.monotonic() - self._read_at > METADATA_SECONDS:
                document = self._get(f"{self.issuer}/.well-known/openid-configuration")
                if document.get("issuer", "").rstrip("/") != self.issuer:
                    raise OidcProviderError(
                        f"identity provider: the discovery document names issuer {document.get('issuer')!r},"
                        f" not {self.issuer!r} (WATERSHED_OIDC_ISSUER)"
                    )
                for needed in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                    if not document.get(needed):
                        raise OidcProviderError(f"identity provider: its discovery document has no {needed}")
                self._metadata, self._keys, self._read_at = document, None, time.monotonic()
            return self._metadata

    def _key_set(self, kid: str | None) -> KeySet:
        """The provider's signing keys; read again when they do not hold `kid` (a rotation)."""
        metadata = self.metadata()
        with self._lock:
            keys = self._keys
            if keys is not None and (kid is None or any(k.kid == kid for k in keys)):
                return keys
        try:
            keys = KeySet.import_key_set(self._get(metadata["jwks_uri"]))  # type: ignore[arg-type]
        except JoseError as exc:
            raise OidcProviderError(
                f"identity provider: its keys ({metadata['jwks_uri']}) do not read: {exc}"
            ) from None
        with self._lock:
            self._keys = keys
        return keys

    def _client(self, redirect_uri: str) -> OAuth2Client:
        return OAuth2Client(
            client_id=self.settings.oidc_client_id,
            client_secret=self._client_secret(),
            scope=" ".join(self.settings.oidc_scopes),
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            timeout=self.settings.oidc_timeout_seconds,
        )

    # ------------------------------------------------------------ the flow

    def begin(self, redirect_uri: str) -> Started:
        """Start a login: the pending flow stored, the URL of the provider's login page."""
        if not self.enabled:
            raise OidcDisabledError("single sign-on is not configured (WATERSHED_OIDC_ISSUER)")
        metadata = self.metadata()
        browser_secret = tokens.session_secret()
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)
        with self._client(redirect_uri) as client:
            url, _ = client.create_authorization_url(
                metadata["authorization_endpoint"], state=state, code_verifier=verifier, nonce=nonce
            )
        now = _ms()
        self.graph.record(DELETE_EXPIRED_PENDING, {"now": now})
        self.graph.record(
            ADD_PENDING,
            {
                "id_hash": tokens.session_hash(browser_secret),
                "state": state,
                "nonce": nonce,
                "verifier": verifier,
                "expires_at": now + PENDING_SECONDS * 1000,
            },
        )
        return Started(url=url, browser_secret=browser_secret)

    def finish(self, browser_secret: str | None, params: dict[str, str], redirect_uri: str) -> Finished:
        """The callback: the pending flow taken back, the code exchanged, the ID token checked, the
        account made or updated from its groups, a session opened. Any refusal is an OidcError,
        audited (`oidc.refused`) with its reason."""
        if not self.enabled:
            raise OidcDisabledError("single sign-on is not configured (WATERSHED_OIDC_ISSUER)")
        try:
            return self._finish(browser_secret, params, redirect_uri)
        except OidcError as exc:
            # `record`: a refusal changes nothing a check keeps (anyone can ask for one)
            self.graph.record(
                *audit.statement(
                    self.actor, "oidc.refused", f"oidc:{self.issuer}", after={"reason": str(exc)}
                )
            )
            raise

    def _finish(self, browser_secret: str | None, params: dict[str, str], redirect_uri: str) -> Finished:
        if params.get("error"):
            described = params.get("error_description") or params["error"]
            raise OidcError(f"the identity provider refused the sign-in: {described[:200]}")
        if not browser_secret:
            raise OidcError("no sign-in was started in this browser (its cookie is missing): start again")
        rows = self.graph.record(TAKE_PENDING, {"id_hash": tokens.session_hash(browser_secret)})
        if not rows:
            raise OidcError("this sign-in is unknown or was already used: start again")
        state, nonce, verifier, expires_at = rows[0]
        if int(expires_at) <= _ms():
            raise OidcError(f"this sign-in took longer than {PENDING_SECONDS // 60} minutes: start again")
        if not secrets.compare_digest(str(params.get("state", "")), state):
            raise OidcError("the state of the callback is not the one this sign-in sent: start again")
        # RFC 9207: a provider that names itself in the response must be ours (a mix-up attack
        # relays another provider's code here)
        if "iss" in params and params["iss"].rstrip("/") != self.issuer:
            raise OidcError(f"the callback comes from issuer {params['iss'][:200]!r}, not {self.issuer!r}")
        code = params.get("code")
        if not code:
            raise OidcError("the callback carries no authorization code")
        metadata = self.metadata()
        try:
            with self._client(redirect_uri) as client:
                answer = client.fetch_token(
                    metadata["token_endpoint"], code=code, code_verifier=verifier, state=state
                )
        except httpx.HTTPError as exc:
            raise OidcProviderError(
                f"identity provider: its token endpoint did not answer: {type(exc).__name__}"
            ) from None
        except Exception as exc:  # authlib's OAuth errors: the provider refused the code
            raise OidcError(f"the identity provider refused the authorization code: {exc}") from None
        raw = answer.get("id_token")
        if not raw:
            raise OidcError(
                "the identity provider sent no ID token (is `openid` among WATERSHED_OIDC_SCOPES?)"
            )
        claims = self.validate_id_token(raw, nonce)
        return self._sign_in(claims)

    def validate_id_token(self, raw: str, nonce: str) -> dict[str, Any]:
        """The claims of an ID token once its signature (the provider's keys), issuer, audience,
        expiry and nonce hold; OidcError naming the first that does not."""
        try:
            header = json.loads(jws_header(raw))
        except ValueError:
            raise OidcError("the ID token is not a signed JWT") from None
        keys = self._key_set(header.get("kid") if isinstance(header, dict) else None)
        try:
            token = jwt.decode(raw, keys, algorithms=ALGORITHMS)
        except JoseError as exc:
            raise OidcError(
                f"the ID token's signature does not verify with the provider's keys ({exc.error})"
            ) from None
        registry = jwt.JWTClaimsRegistry(
            leeway=int(self.settings.oidc_clock_skew_seconds),
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.settings.oidc_client_id},
            exp={"essential": True},
            sub={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        claims = token.claims
        try:
            registry.validate(claims)
        except ExpiredTokenError:
            raise OidcError(
                "the ID token has expired (check the clocks of this host and the provider)"
            ) from None
        except JoseError as exc:
            claim = getattr(exc, "claim", None) or str(exc)
            raise OidcError(f"the ID token's {claim} claim is not the one expected") from None
        audience = claims.get("aud")
        if (
            isinstance(audience, list)
            and len(audience) > 1
            and claims.get("azp") != self.settings.oidc_client_id
        ):
            raise OidcError(
                "the ID token names several audiences and is not authorized for this client (azp)"
            )
        return claims

    # ------------------------------------------------------------ the account

    def _groups(self, claims: dict[str, Any]) -> list[str]:
        claim = self.settings.oidc_groups_claim
        value = claims.get(claim)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(g, str) for g in value):
            return value
        raise OidcError(f"the ID token's {claim!r} claim is not a list of group names")

    def _sign_in(self, claims: dict[str, Any]) -> Finished:
        name_claim = self.settings.oidc_username_claim
        raw_name = claims.get(name_claim)
        if not isinstance(raw_name, str) or not raw_name:
            raise OidcError(
                f"the ID token has no {name_claim!r} claim to name the account (WATERSHED_OIDC_USERNAME_CLAIM)"
            )
        try:
            name = user_name(raw_name)
        except InvalidUserNameError as exc:
            raise OidcError(str(exc)) from None
        groups = self._groups(claims)
        grant = grant_for(groups, self.settings.oidc_groups)
        if grant is None:
            raise OidcError(
                f"{name} is in no group that Watershed maps to a role (groups: {', '.join(groups) or 'none'});"
                " ask an administrator to map one (WATERSHED_OIDC_GROUPS)"
            )
        subject = f"{self.issuer}#{claims['sub']}"
        me = Me(name=name, role=grant.role, databases=grant.databases)
        self._save_account(me, subject, groups)
        secret = tokens.session_secret()
        now = _ms()
        self.graph.record(DELETE_EXPIRED_SESSIONS, {"now": now})
        made = self.graph.record(
            ADD_SESSION,
            {
                "user": name,
                "subject": subject,
                "id_hash": tokens.session_hash(secret),
                "expires_at": now + int(self.settings.api_session_hours * 3_600_000),
            },
        )
        if not made:  # deleted by an admin between the two writes
            raise OidcError(f"the account {name} was removed while signing in: start again")
        return Finished(me=me, session_secret=secret)

    def _save_account(self, me: Me, subject: str, groups: list[str]) -> None:
        """Create the account, or set its role and databases from this login's groups; audited in
        the same write. The accounts stamp moves when the role or databases changed."""
        databases = json.dumps(me.databases) if me.databases is not None else None
        after = {"name": me.name, "role": me.role, "databases": me.databases, "groups": groups}
        rows = self.graph.read(GET_ACCOUNT, {"name": me.name})
        if not rows:
            params = {
                "name": me.name,
                "role": me.role,
                "databases": databases,
                "at": _now(),
                "subject": subject,
            }
            made = self.graph.execute(
                ADD_ACCOUNT,
                {**params, **audit.audit_params(self.actor, "user.add", f"user:{me.name}", None, after)},
            )
            if not made:
                raise OidcError(f"an account named {me.name} exists already: start again")
            return
        _, role, stored_databases, _, stored_subject = rows[0]
        if stored_subject != subject:
            raise OidcError(
                f"a local account named {me.name} exists (made by an administrator for API tokens);"
                " single sign-on does not take it over: an administrator must delete or rename it first"
            )
        before = {
            "name": me.name,
            "role": role,
            "databases": json.loads(stored_databases) if stored_databases else None,
        }
        action = "user.login" if (role, before["databases"]) == (me.role, me.databases) else "user.grant"
        params = {"name": me.name, "role": me.role, "databases": databases, "subject": subject}
        # a sign-in that changes no role is written as `record`: it must not make every process's
        # query checks read the graph again
        write = self.graph.execute if action == "user.grant" else self.graph.record
        written = write(
            UPDATE_ACCOUNT,
            {**params, **audit.audit_params(self.actor, action, f"user:{me.name}", before, after)},
        )
        if not written:
            raise OidcError(f"the account {me.name} changed while signing in: start again")
        if action == "user.grant":
            # the sessions other processes keep read the old role: they read it again
            self.graph.restamp(ACCOUNTS_STAMP)

    # ------------------------------------------------------------ logout

    def logout(self, session_secret: str, me: Me, post_logout_redirect_uri: str) -> str | None:
        """For an SSO session (before it is closed): the logout audited, and where the browser ends
        its session at the provider (RP-initiated logout); None for another session, or a provider
        without an end_session_endpoint."""
        rows = self.graph.read(SESSION_VIA, {"id_hash": tokens.session_hash(session_secret)})
        if not self.enabled or not rows or rows[0][0] != "oidc":
            return None
        self.graph.record(*audit.statement(me.name, "user.logout", f"user:{me.name}", after={"via": "oidc"}))
        endpoint = self.metadata().get("end_session_endpoint")
        if not endpoint:
            return None
        query = urlencode(
            {"client_id": self.settings.oidc_client_id, "post_logout_redirect_uri": post_logout_redirect_uri}
        )
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


def jws_header(raw: str) -> str:
    """The decoded protected header of a compact JWS (unverified: only to pick the key)."""
    first = raw.split(".", 1)[0]
    return base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)).decode()
