"""Settings of the HTTP service (WATERSHED_API_* environment variables or the settings file)."""

from __future__ import annotations

from pathlib import Path

from watershed.graph.settings import Count, Port, Seconds
from watershed.propagation.settings import PropagationSettings


class ApiSettings(PropagationSettings):
    api_host: str = "127.0.0.1"
    api_port: Port = 8600
    #: how long a browser session lasts after login
    api_session_hours: Seconds = 12.0
    #: the largest request body accepted (the SQL of POST /lineage/sql included)
    api_max_body_bytes: Count = 1024 * 1024
    #: the ORC encryption policy (YAML, orc_crypto/policy.py) the table page's DDL and protection
    #: status come from; without it a table shows no DDL
    encryption_policy_file: Path | None = None
