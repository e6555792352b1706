"""GET /search: the steward service's search (watershed.api.service.search has the stages, their cost, the ranking, the total and the typo pass)."""

from __future__ import annotations

from typing import Literal
from urllib.parse import unquote_plus

from fastapi import APIRouter, Depends, Query, Request

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.paging import PageRequest, page_request
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.rights import Me
from watershed.api.service.pages import CursorError
from watershed.api.service.search import SearchError, SearchPage, search_nodes

router = APIRouter(tags=["search"])


async def utf8_query(request: Request) -> None:
    """400 naming a query parameter whose percent-encoded bytes are not UTF-8: Starlette decodes
    them to replacement characters, and the search would run for text nobody sent."""
    for pair in request.scope["query_string"].decode("latin-1").split("&"):
        name, _, value = pair.partition("=")
        try:
            unquote_plus(value, errors="strict")
        except UnicodeDecodeError:
            raise ApiProblem(
                400, f"{unquote_plus(name)}: not valid text (its bytes are not UTF-8: {value[:40]})"
            ) from None


@router.get("/search", response_model=SearchPage)
def search(
    q: str = Query("", max_length=300, description="An id prefix (ods.users.em) or a substring (email)."),
    kind: Literal["table", "column"] | None = Query(None),
    db: str | None = Query(None, max_length=200),
    tag: list[str] = Query(
        default_factory=list, description="key, key=value or key>=value (levels by the policy)."
    ),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
    __: None = Depends(utf8_query),
) -> SearchPage:
    try:
        return search_nodes(svc.graph, svc.policy, q, kind, db, tag, page.limit, page.cursor)
    except (SearchError, CursorError) as exc:
        raise ApiProblem(400, str(exc)) from None
