"""Paging of every list: `limit` (default 50, max 500) and an opaque `cursor`; answers are `Page[T]`."""

from __future__ import annotations

import base64
import json
from typing import Any, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel, Field

from watershed.api.http.problems import ApiProblem

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T] = Field(default_factory=list)
    next_cursor: str | None = None
    total: int | None = None


class PageRequest(BaseModel):
    limit: int
    cursor: str | None = None

    def position(self) -> dict[str, Any]:
        return decode(self.cursor)


def page_request(
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Items per page (max 500)."),
    cursor: str | None = Query(None, description="The `next_cursor` of the previous page."),
) -> PageRequest:
    return PageRequest(limit=limit, cursor=cursor)


def encode(position: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(position, separators=(",", ":")).encode()).decode().rstrip("=")


def decode(cursor: str | None) -> dict[str, Any]:
    if not cursor:
        return {}
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        raise ApiProblem(400, "cursor: not a cursor this API handed out") from None
    if not isinstance(data, dict):
        raise ApiProblem(400, "cursor: not a cursor this API handed out")
    return data


def keyed_page(items: list, limit: int, key, total: int | None = None) -> Page:
    """A page from `limit + 1` fetched rows: the extra row only says there is more; `key` gives the cursor."""
    more = len(items) > limit
    items = items[:limit]
    return Page(
        items=items, next_cursor=encode({"after": key(items[-1])}) if more and items else None, total=total
    )
