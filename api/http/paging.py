"""Paging of every list: `limit` (default 50, max 500) and an opaque `cursor`; answers are `Page[T]`."""

from __future__ import annotations

from typing import Any

from fastapi import Query
from pydantic import BaseModel

from watershed.api.http.problems import ApiProblem
from watershed.api.service.pages import CursorError, Page, decode_cursor, encode_cursor, keyed_page

__all__ = ["Page", "PageRequest", "decode", "encode_cursor", "keyed_page", "page_request"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


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


def decode(cursor: str | None) -> dict[str, Any]:
    try:
        return decode_cursor(cursor)
    except CursorError as exc:
        raise ApiProblem(400, str(exc)) from None
