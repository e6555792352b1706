"""Settings of the service (WATERSHED_API_* environment variables or the settings file): what the
HTTP app, `watershed serve` and `watershed services up` read alike."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from watershed.graph.settings import Count, Port, Seconds
from watershed.propagation.settings import PropagationSettings


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
