"""A table page (columns, tags, owner, layer, protection, DDL) and a column page (tags with provenance, TTL advice).

Each page is one indexed lookup and one round trip: the node and its columns (or its blocks)
together; a table page's protection adds two (the table's protection record, its files' records),
the node's description and owner one (and one per hop of a propagated one's path back).
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.models import ColumnView, Ddl, Protection, TableColumn, TableView, TtlView
from watershed.api.http.nodes import ColumnId, TableId, missing, node_tags, parse
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.rights import Me
from watershed.api.service.node_metadata import node_metadata
from watershed.graph import ids
from watershed.graph.model import tag_values

router = APIRouter(tags=["tables"])

TABLE = (
    "MATCH (t:Table {id: $id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.db, t.name, t.layer, t.owner, t.format, t.location, t.ttl_days, t.tags, "
    "collect([c.id, c.type, c.tags, c.ttl_days_recommended, c.description])"
)
COLUMN = (
    "MATCH (c:Column {id: $id}) OPTIONAL MATCH (c)-[:BLOCKS]->(b:Tag) "
    "RETURN c.table, c.type, c.tags, c.ttl_status, c.ttl_days_recommended, c.ttl_evidence, collect(b.key)"
)


def _protection(table_id: str, location, fmt, columns: list, svc: Service) -> tuple[Protection, str | None]:
    """The table's protection from the tag policy and the graph's records (no file read), and its
    CREATE TABLE with the options the policy asks for."""
    from watershed.api.http.routers.protection import (
        catalog_table,
        protection_policy,
        protection_state,
        provider_path,
    )
    from watershed.graph.errors import PolicyError
    from watershed.orc_crypto.ddl import create_statement

    policy = protection_policy(svc)
    table = catalog_table(
        table_id, location, fmt, [(c_id, c_type, c_tags) for c_id, c_type, c_tags, _ in columns]
    )
    # the provider path the protection router's plan and the CLI's DDL set (graph/protection's rule)
    path = provider_path(svc, policy)
    protection, _, _ = protection_state(svc.graph, table, policy, path)
    wanted = {c.name: c.want for c in protection.columns if c.want is not None}
    try:
        ddl = create_statement(table_id, [(c.name, c.type) for c in table.columns], wanted, path)
    except PolicyError:
        ddl = None  # a column without a (Spark) type: no CREATE TABLE can be written for it
    return protection, ddl


def table_view(table_id: str, svc: Service) -> TableView:
    node_id, _, db = parse(table_id, "Table")
    rows = svc.graph.read(TABLE, {"id": node_id})
    if not rows:
        raise missing("table", node_id)
    t_db, name, layer, owner, fmt, location, ttl_days, tags, columns = rows[0]
    column_views = [
        TableColumn(
            id=c_id,
            name=ids.name(c_id),
            type=c_type,
            tags=tag_values(c_tags),
            ttl_days_recommended=c_ttl,
            description=c_description,
        )
        for c_id, c_type, c_tags, c_ttl, c_description in columns
        if c_id is not None
    ]
    protection, ddl = _protection(node_id, location, fmt, [c[:4] for c in columns], svc)
    return TableView(
        id=node_id,
        db=t_db or db,
        name=name or ids.name(node_id),
        layer=layer,
        owner=owner,
        format=fmt,
        location=location,
        ttl_days=ttl_days,
        columns=column_views,
        tags=node_tags(tags),
        protection=protection,
        ddl=ddl,
        metadata=node_metadata(svc.graph, node_id),
    )


@router.get("/tables/{table_id:path}/ddl", response_model=Ddl)
def table_ddl(table_id: TableId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> Ddl:
    view = table_view(table_id, svc)
    if view.ddl is None:
        raise ApiProblem(404, f"no DDL for table {view.id}: a column has no Spark type in the catalog")
    return Ddl(ddl=view.ddl)


@router.get("/tables/{table_id:path}", response_model=TableView)
def table(table_id: TableId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> TableView:
    return table_view(table_id, svc)


@router.get("/columns/{column_id:path}", response_model=ColumnView)
def column(column_id: ColumnId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> ColumnView:
    node_id, _, _ = parse(column_id, "Column")
    rows = svc.graph.read(COLUMN, {"id": node_id})
    if not rows:
        raise missing("column", node_id)
    table_id, c_type, tags, ttl_status, ttl_days, evidence, blocks = rows[0]
    ttl = None
    if ttl_status is not None:
        ttl = TtlView(
            status=ttl_status, days_recommended=ttl_days, evidence=json.loads(evidence) if evidence else []
        )
    return ColumnView(
        id=node_id,
        table=table_id or ids.parent(node_id),
        name=ids.name(node_id),
        type=c_type,
        tags=node_tags(tags),
        blocks=sorted(k for k in blocks if k is not None),
        ttl=ttl,
        metadata=node_metadata(svc.graph, node_id),
    )
