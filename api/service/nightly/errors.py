"""The nightly chain's one error, below its steps and its schedule so both can raise it."""

from __future__ import annotations

from watershed.graph.errors import WatershedError


class NightlyError(WatershedError, RuntimeError):
    """A step could not do its work: the message names the step, the date and what to fix."""
