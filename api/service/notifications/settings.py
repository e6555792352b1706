"""Settings of webhook delivery (`WATERSHED_WEBHOOK_*`, or the settings file)."""

from __future__ import annotations

from pydantic import Field

from watershed.graph.settings import Seconds, WatershedSettings


class WebhookSettings(WatershedSettings):
    #: attempts of one delivery before it goes to the dead letters
    webhook_max_attempts: int = Field(default=6, ge=1, le=50)
    #: the wait after the first failed attempt; each later one doubles it
    webhook_backoff_seconds: float = Field(default=30.0, ge=0)
    #: the longest wait between two attempts
    webhook_backoff_max_seconds: float = Field(default=3600.0, ge=0)
    #: connect and read timeout of one POST
    webhook_timeout_seconds: Seconds = 10.0
    #: attempts kept in a subscription's delivery history (older ones are deleted)
    webhook_history: int = Field(default=200, ge=1)
    #: how often the API process looks for due deliveries (0: it does not deliver)
    webhook_poll_seconds: float = Field(default=5.0, ge=0)
    #: how long a claimed delivery is left to its process before another may take it
    webhook_lease_seconds: Seconds = 120.0
