"""A table page (columns, tags, owner, layer, protection, DDL) and a column page (tags with provenance, TTL advice).

Each page is one indexed lookup and one round trip: the node and its columns (or its blocks) together.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Depends

from watershed.api.accounts.rights import Me
from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.models import ColumnView, Ddl, Protection, TableColumn, TableView, TtlView
from watershed.api.http.nodes import missing, node_tags, parse
from watershed.api.http.problems import ApiProblem
from watershed.graph import ids
from watershed.graph.model import tag_values

router = APIRouter(tags=["tables"])

TABLE = (
    "MATCH (t:Table {id: $id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.db, t.name, t.layer, t.owner, t.format, t.location, t.ttl_days, t.tags, "
    "collect([c.id, c.type, c.tags, c.ttl_days_recommended])"
)
COLUMN = (
    "MATCH (c:Column {id: $id}) OPTIONAL MATCH (c)-[:BLOCKS]->(b:Tag) "
    "RETURN c.table, c.type, c.tags, c.ttl_status, c.ttl_days_recommended, c.ttl_evidence, collect(b.key)"
)


@lru_cache(maxsize=4)
def _encryption_policy(path: Path, mtime: float):
    from watershed.orc_crypto.policy import load_policy

    return load_policy(path)


def encryption_policy(svc: Service):
    path = svc.settings.encryption_policy_file
    if path is None:
        return None
    try:
        return _encryption_policy(path, path.stat().st_mtime)
    except OSError as exc:
        raise ApiProblem(500, f"encryption policy {path}: {exc.strerror}") from None


def _protection(table_id: str, columns: list[TableColumn], svc: Service) -> tuple[Protection, str | None]:
    from watershed.orc_crypto.ddl import ColumnTags, TableTags, create_table_ddl, plan_encryption
    from watershed.orc_crypto.policy import PolicyError

    policy = encryption_policy(svc)
    if policy is None:
        return Protection(status="no_policy"), None
    tags = TableTags(
        table=table_id,
        columns=[ColumnTags(name=c.name, type=c.type, tags=sorted(c.tags)) for c in columns],
    )
    plan = plan_encryption(tags, policy)
    encrypted = sorted({c for cols in plan.encrypt.values() for c in cols})
    masked = sorted({c for cols in plan.mask.values() for c in cols})
    protection = Protection(
        encrypted_columns=encrypted, masked_columns=masked, status="planned" if encrypted else "none"
    )
    try:
        ddl = create_table_ddl(table_id, tags, policy)
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
            id=c_id, name=ids.name(c_id), type=c_type, tags=tag_values(c_tags), ttl_days_recommended=c_ttl
        )
        for c_id, c_type, c_tags, c_ttl in columns
        if c_id is not None
    ]
    protection, ddl = _protection(node_id, column_views, svc)
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
    )


@router.get("/tables/{table_id:path}/ddl", response_model=Ddl)
def table_ddl(table_id: str, _: Me = Depends(viewer), svc: Service = Depends(service)) -> Ddl:
    view = table_view(table_id, svc)
    if view.ddl is None:
        why = (
            "no encryption policy is configured (WATERSHED_ENCRYPTION_POLICY_FILE)"
            if view.protection.status == "no_policy"
            else "a column has no Spark type in the catalog"
        )
        raise ApiProblem(404, f"no DDL for table {view.id}: {why}")
    return Ddl(ddl=view.ddl)


@router.get("/tables/{table_id:path}", response_model=TableView)
def table(table_id: str, _: Me = Depends(viewer), svc: Service = Depends(service)) -> TableView:
    return table_view(table_id, svc)


@router.get("/columns/{column_id:path}", response_model=ColumnView)
def column(column_id: str, _: Me = Depends(viewer), svc: Service = Depends(service)) -> ColumnView:
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
    )
