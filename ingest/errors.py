"""Errors the extractor turns into `LineageError` entries instead of raising."""


class StatementError(Exception):
    """A statement is understood but cannot yield lineage; the message says why."""
