"""Errors of the ORC codec and of encryption/decryption; each names the file and the cause."""

from __future__ import annotations

from watershed.graph.errors import WatershedError


class OrcCryptoError(WatershedError):
    """Base of every error orc_crypto raises for bad input."""

    def __init__(self, path: object, cause: str) -> None:
        self.path = str(path)
        self.cause = cause
        super().__init__(f"{self.path}: {cause}")


class OrcFormatError(OrcCryptoError):
    """The file is not a readable ORC file (truncated, garbage tail, bad stream layout)."""


class UnsupportedOrcError(OrcCryptoError):
    """A valid ORC feature or version this code does not handle."""


class OrcKeyError(OrcCryptoError):
    """A key needed for decryption is unknown, denied or wrong."""


class OrcOutputError(OrcCryptoError):
    """The output cannot be written where asked (missing directory, a directory, the input itself)."""


class OrcVerifyError(OrcFormatError):
    """What was written does not read back (a damaged input stream copied through); the target is untouched."""
