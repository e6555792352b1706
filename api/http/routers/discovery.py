"""PII discovery: sample tables for sensitive content, list the proposals, accept or reject them.

Sampling writes proposals and flags and accepting sets seeds: both need the steward right on the
table's database; listing proposals and flags (leaks and over-tagging on derived columns) needs a
viewer. Every change is audited by the use case (api/service/discovery.py),
which `watershed discover` calls too. The API samples tables of the catalog only, never a path of
the server's file system.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.nodes import COLUMN_ID, TABLE_ID, ColumnId, parse
from watershed.api.http.paging import Page, PageRequest, page_request
from watershed.api.http.problems import CONFLICT_RESPONSES, ApiProblem
from watershed.api.service import discovery
from watershed.api.service.accounts.rights import Me
from watershed.api.service.pages import CursorError
from watershed.discovery.detectors import UnknownRegionError
from watershed.graph.model import ColumnProposal, DiscoveryFlag
from watershed.propagation.graph_store import UnknownNodeError
from watershed.propagation.policy import UnknownTagError

router = APIRouter(tags=["discovery"])

#: tables one request may sample: each is bounded in time (discovery_sample_seconds), the request too
MAX_TABLES = 50


class DiscoveryRequest(BaseModel):
    tables: list[Annotated[str, Field(pattern=TABLE_ID)]] = Field(
        min_length=1, max_length=MAX_TABLES, description="Tables (db.table) to sample."
    )
    sample_rows: int | None = Field(None, ge=1, le=100_000, description="Rows read per table.")
    force: bool = Field(False, description="Sample tables whose files did not change too.")


@router.post("/discovery/runs", response_model=discovery.DiscoveryRun)
def run(body: DiscoveryRequest, me: Me = Depends(steward), svc: Service = Depends(service)):
    """Sample the tables' local ORC/Parquet files and store the proposals they support."""
    tables = []
    for table in body.tables:
        node, _, db = parse(table, "Table")
        me.require("steward", db)
        tables.append(node)
    try:
        return discovery.discover(
            svc.graph, svc.policy, tables=tables, sample_rows=body.sample_rows, force=body.force
        )
    except UnknownRegionError as exc:
        raise ApiProblem(500, f"the service's discovery settings: {exc}") from None


@router.get("/discovery/proposals", response_model=Page[ColumnProposal])
def list_proposals(
    status: Literal["open", "accepted", "rejected"] | None = Query(None),
    table: str | None = Query(None, pattern=TABLE_ID, description="Only this table's (db.table)."),
    column: str | None = Query(None, pattern=COLUMN_ID, description="Only this column's (db.table.column)."),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[ColumnProposal]:
    return _listed(discovery.proposals, svc, page, table, column, status=status)


@router.get("/discovery/flags", response_model=Page[DiscoveryFlag])
def list_flags(
    kind: Literal["leak", "over_tag"] | None = Query(None),
    table: str | None = Query(None, pattern=TABLE_ID, description="Only this table's (db.table)."),
    column: str | None = Query(None, pattern=COLUMN_ID, description="Only this column's (db.table.column)."),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[DiscoveryFlag]:
    """Derived columns whose sampled content disagrees with their tags: a leak (sensitive content,
    no tag or a lower level) or over-tagging (a propagated tag no sampled value bears out), each with
    the lineage path back and the functions' effects on it."""
    return _listed(discovery.flags, svc, page, table, column, kind=kind)


def _listed(listing, svc: Service, page: PageRequest, table: str | None, column: str | None, **filters):
    """One page of `listing` (the use case's proposals or flags) of the table or column asked for."""
    try:
        return listing(
            svc.graph,
            table=parse(table, "Table")[0] if table else None,
            column=parse(column, "Column")[0] if column else None,
            limit=page.limit,
            cursor=page.cursor,
            **filters,
        )
    except CursorError as exc:
        raise ApiProblem(400, str(exc)) from None


def _decide(column_id: str, accept: bool, me: Me, svc: Service) -> ColumnProposal:
    column, _, db = parse(column_id, "Column")
    me.require("steward", db)
    try:
        if accept:
            return discovery.accept(svc.graph, svc.policy, column, actor=me.name)
        return discovery.reject(svc.graph, svc.policy, column, actor=me.name)
    except discovery.UnknownProposalError as exc:
        raise ApiProblem(404, str(exc)) from None
    except UnknownNodeError as exc:
        raise ApiProblem(404, str(exc)) from None
    except (discovery.DiscoveryError, UnknownTagError) as exc:
        raise ApiProblem(409, str(exc)) from None


@router.post(
    "/discovery/proposals/{column_id:path}/accept",
    response_model=ColumnProposal,
    responses=CONFLICT_RESPONSES,
)
def accept(column_id: ColumnId, me: Me = Depends(steward), svc: Service = Depends(service)):
    """The proposal's tags become seeds of the column (origin `discovered`) from the next propagation."""
    return _decide(column_id, True, me, svc)


@router.post(
    "/discovery/proposals/{column_id:path}/reject",
    response_model=ColumnProposal,
    responses=CONFLICT_RESPONSES,
)
def reject(column_id: ColumnId, me: Me = Depends(steward), svc: Service = Depends(service)):
    """Remembered: the column is not proposed again until its content changes."""
    return _decide(column_id, False, me, svc)
