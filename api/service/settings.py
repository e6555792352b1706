"""Settings of the service (WATERSHED_API_* environment variables or the settings file): what the
HTTP app, `watershed serve` and `watershed services up` read alike."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, SecretStr, field_validator

from watershed.api.service.accounts.rights import Role, fold_databases
from watershed.graph.settings import AbsolutePath, Count, Port, Seconds
from watershed.propagation.settings import PropagationSettings


class OidcGroupGrant(BaseModel):
    """What the members of one identity-provider group get (docs/sso.md)."""

    role: Role
    #: the databases a steward or admin of this group may change; None = all
    databases: list[str] | None = None

    @field_validator("databases")
    @classmethod
    def _stored_form(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        folded = fold_databases(value)
        if not folded:
            raise ValueError("give at least one database, or leave databases out for all")
        return folded


class ApiSettings(PropagationSettings):
    api_host: str = "127.0.0.1"
    api_port: Port = 8600
    #: how long a browser session lasts after login
    api_session_hours: Seconds = 12.0
    #: how long an API process may reuse a verified token's or session's row (owner, role, databases) while the
    #: graph's accounts stamp is unchanged; every change made through the CLI or the API moves the
    #: stamp, so it takes effect at once; this bounds only changes made around them (0: read the
    #: graph on every request)
    api_token_reuse_seconds: Annotated[float, Field(ge=0)] = 60.0
    #: how long an API process may reuse the catalog entries, grants and tags it read for a query check
    #: while the graph's data stamp is unchanged; every write Watershed makes to what a check reads
    #: moves that stamp, so this bounds only changes made around it (0: read them for every check)
    authz_reuse_seconds: Annotated[float, Field(ge=0)] = 60.0
    #: the largest request body accepted (the SQL of POST /lineage/sql included)
    api_max_body_bytes: Count = 1024 * 1024
    #: the KMS (kms://http@HOST:PORT/kms) the service's protection plan checks keys with and its
    #: apply encrypts with; default: the tag policy's protection.key_provider_path when it is one
    #: (graph/protection.kms_uri, the rule every face follows)
    protect_kms: str | None = Field(default=None, pattern=r"^kms://")
    #: the SQL dialects /authz/check and /authz/rewrite accept: the engines' own, and no other (a text
    #: two dialects read differently must not be checked in one and run in the other)
    authz_dialects: list[str] = Field(default_factory=lambda: ["spark"])
    #: the KMS delegation token file the apply authenticates with (default: HADOOP_TOKEN_FILE_LOCATION)
    protect_token_file: Path | None = None
    # ---- single sign-on with OpenID Connect (docs/sso.md); off while oidc_issuer is empty
    #: the provider's issuer URL (its /.well-known/openid-configuration is read from it)
    oidc_issuer: str = ""
    #: the name on the login page's button ("Sign in with ..."; default: the issuer)
    oidc_provider_name: str = ""
    oidc_client_id: str = ""
    #: from the settings file (or a secret file below), never a command-line option; never logged
    oidc_client_secret: SecretStr = SecretStr("")
    #: a file holding the client secret (a mounted secret), read when oidc_client_secret is empty
    oidc_client_secret_file: AbsolutePath | None = None
    #: the service's public URL as the browser sees it (behind a proxy); the provider sends the
    #: browser back to {this}/api/v1/oidc/callback (default: the URL the request came to)
    oidc_redirect_base: str = ""
    oidc_scopes: list[str] = Field(default_factory=lambda: ["openid", "profile", "email", "groups"])
    #: the ID token claim holding the user's groups, and the one naming the account
    oidc_groups_claim: str = "groups"
    oidc_username_claim: str = "preferred_username"
    #: group -> role and databases; a user in no group named here is refused
    oidc_groups: dict[str, OidcGroupGrant] = Field(default_factory=dict)
    #: how far the provider's clock may be off this host's when an ID token's expiry is checked
    oidc_clock_skew_seconds: Annotated[float, Field(ge=0)] = 60.0
    #: how long a request to the provider (discovery, keys, token) may take
    oidc_timeout_seconds: Seconds = 10.0
