"""Pages of every list the service answers: `Page[T]` and its opaque cursor.

Apart from the HTTP layer so that the CLI's `--format json` prints the same pages.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from watershed.graph.errors import WatershedError

T = TypeVar("T")


class CursorError(WatershedError, ValueError):
    """A cursor that no page handed out (edited, truncated, from another list)."""


class Page(BaseModel, Generic[T]):
    items: list[T] = Field(default_factory=list)
    #: pass it back as `cursor` for the next page; null on the last page
    next_cursor: str | None = None
    total: int | None = None


def keyed_page(items: list, limit: int, key, total: int | None = None) -> Page:
    """A page from `limit + 1` fetched items: the extra one only says there is more; `key(item)`
    is the position the next page starts after."""
    more = len(items) > limit
    items = items[:limit]
    return Page(
        items=items,
        next_cursor=encode_cursor({"after": key(items[-1])}) if more and items else None,
        total=total,
    )


def encode_cursor(position: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(position, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> dict[str, Any]:
    if not cursor:
        return {}
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        raise CursorError("cursor: not a cursor this API handed out") from None
    if not isinstance(data, dict):
        raise CursorError("cursor: not a cursor this API handed out")
    return data
