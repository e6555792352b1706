"""Errors the extractor turns into `StatementProblem` entries instead of raising."""

from watershed.graph.errors import WatershedError


class StatementError(WatershedError):
    """A statement is understood but cannot yield lineage; the message says why."""
