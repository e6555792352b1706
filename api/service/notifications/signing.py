"""The signature of a delivery: `sha256=` + hex HMAC-SHA256 of `<timestamp>.<body>` with the secret.

The timestamp (Unix seconds, header `X-Watershed-Timestamp`) is signed with the body so that a
receiver can refuse a replay of an old delivery; docs/notifications.md shows a receiver's check.
"""

from __future__ import annotations

import hashlib
import hmac

EVENT_HEADER = "X-Watershed-Event"
DELIVERY_HEADER = "X-Watershed-Delivery"
SIGNATURE_HEADER = "X-Watershed-Signature"
TIMESTAMP_HEADER = "X-Watershed-Timestamp"
PREFIX = "sha256="


def signature(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return PREFIX + digest


def verify(secret: str, timestamp: str, body: bytes, header: str) -> bool:
    """Whether `header` is the signature of `timestamp` and `body` under `secret` (compared in constant time)."""
    return hmac.compare_digest(signature(secret, timestamp, body), header or "")
