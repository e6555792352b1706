"""Protection in the service: a table's protection state and plan, a plan over the catalog, and
applies started in the background (admin) with their runs and progress.

The state a table page shows is made from the graph alone: the tag policy's protection section,
the table's record (the options its DDL set) and its files' records (what each apply wrote). No
ORC file is read for it; `GET /tables/{t}/protection?files=true` and `POST /protect/plan` with
`files: true` read the files' tails for the files still to rewrite.
"""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, admin, service, viewer
from watershed.api.http.models import (
    ColumnProtection,
    ProtectApplyRequest,
    Protection,
    ProtectPlanPage,
    ProtectPlanRequest,
    ProtectRunView,
    TableProtectionAnswer,
)
from watershed.api.http.nodes import TableId, missing, parse
from watershed.api.http.paging import Page, PageRequest, decode, encode_cursor, page_request
from watershed.api.http.params import RunId
from watershed.api.http.problems import CONFLICT_RESPONSES, ApiProblem
from watershed.api.http.protect_runs import KMS_SETTING, ProtectRunner, kms_provider, protect_runner
from watershed.api.service import protection_runs
from watershed.api.service.accounts.rights import Me
from watershed.api.service.audit import record
from watershed.api.service.protection_runs import protection_section
from watershed.graph import ids
from watershed.graph.model import tag_values
from watershed.graph.protection import (
    ColumnKey,
    ProtectedFile,
    ProtectionPolicy,
    TablePlan,
    TableProtection,
    ddl_provider_path,
)
from watershed.graph.store import GraphStore
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.checks import ProtectionError, normal_mask
from watershed.orc_crypto.protect.plan import CatalogColumn, CatalogTable, plan_table

router = APIRouter(tags=["protection"])

TABLE = (
    "MATCH (t:Table {id: $id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.location, t.format, collect([c.id, c.type, c.tags])"
)
#: the cursor compared as a plain string, as the other pages do (api/service/search.py): FalkorDB's indexed
#: `t.id > $after` orders non-ASCII ids and case twins (`path:` tables) unlike ORDER BY, so pages
#: skipped or repeated tables
TABLE_PAGE = "MATCH (t:Table) WHERE toString(t.id) > $after RETURN t.id ORDER BY t.id LIMIT $n"
RUN_PAGE = (
    "MATCH (r:ProtectionRun) WHERE r.started_at < $at OR (r.started_at = $at AND r.id < $id) "
    "RETURN r.record ORDER BY r.started_at DESC, r.id DESC LIMIT $n"
)
#: files of a table's plan listed at most (`limit` of GET /tables/{t}/protection)
MAX_FILES = 1000


def protection_policy(svc: Service) -> ProtectionPolicy | None:
    """The tag policy's protection section; None when it has no rules."""
    return protection_section(svc.policy)


def needs_policy(svc: Service) -> ProtectionPolicy:
    policy = protection_policy(svc)
    if policy is None:
        raise ApiProblem(
            409,
            "the tag policy has no protection rules: add a `protection:` section to the policy file "
            "(WATERSHED_POLICY_FILE; see docs/protection.md)",
        )
    return policy


def provider_path(svc: Service, policy: ProtectionPolicy | None) -> str | None:
    """The provider path the service's DDL sets (graph/protection's rule: WATERSHED_PROTECT_KMS,
    else the policy's key_provider_path)."""
    return ddl_provider_path(
        svc.settings.protect_kms, policy.key_provider_path if policy else None, given_as=KMS_SETTING
    )


def catalog_table(table_id: str, location, fmt, columns) -> CatalogTable:
    return CatalogTable(
        table_id,
        location,
        fmt,
        [CatalogColumn(c_id, ids.name(c_id), c_type, c_tags) for c_id, c_type, c_tags in columns if c_id],
    )


def read_table(store: GraphStore, table_id: str) -> CatalogTable:
    node_id, _, _ = parse(table_id, "Table")
    rows = store.read(TABLE, {"id": node_id})
    if not rows:
        raise missing("table", node_id)
    location, fmt, columns = rows[0]
    return catalog_table(node_id, location, fmt, columns)


def _held(files: list[ProtectedFile]) -> dict[str, list[tuple[ColumnKey, ProtectedFile]]]:
    """File column name (lower) -> what each recorded file holds for it."""
    held: dict[str, list[tuple[ColumnKey, ProtectedFile]]] = {}
    for file in files:
        for name, key in file.columns.items():
            held.setdefault(name.strip("`").lower(), []).append((key, file))
    return held


def _same(a: ColumnKey, b: ColumnKey) -> bool:
    return a.key == b.key and normal_mask(a.mask) == normal_mask(b.mask)


def protection_state(
    store: GraphStore,
    table: CatalogTable,
    policy: ProtectionPolicy | None,
    key_provider_path: str | None,
    plan: TablePlan | None = None,
) -> tuple[Protection, TableProtection | None, TablePlan | None]:
    """The table's protection from its records and its plan (without reading files unless
    `plan` was made with them): per column encrypted / pending / released."""
    if policy is None:
        return Protection(status="no_policy"), None, None
    table_record = records.table_protection(store, table.id)
    if plan is None:
        plan = plan_table(table, policy, table_record, read_files=False, key_provider_path=key_provider_path)
    files = list(records.files_of(store, [table.id]).values())
    held = _held(files)
    options = {name.lower(): key for name, key in (table_record.columns if table_record else {}).items()}
    changes = {change.name.lower(): change for change in (plan.columns if plan else [])}
    columns: list[ColumnProtection] = []
    for column in table.columns:
        lower = column.name.lower()
        matched = policy.rule_for(tag_values(column.tags))
        want = ColumnKey(key=matched[0].key, mask=normal_mask(matched[0].mask)) if matched else None
        holding = held.get(lower, [])
        change = changes.get(lower)
        if want is None and not holding and lower not in options:
            continue
        if want is not None:
            holding_as_wanted = [(k, f) for k, f in holding if _same(k, want)]
            state = "encrypted" if holding_as_wanted else "pending"
            shown = holding_as_wanted or holding
        else:
            state, shown = "released", holding
        common = Counter((k.key, normal_mask(k.mask)) for k, _ in shown).most_common(1)
        first = min((f for _, f in shown), key=lambda f: f.at, default=None)
        columns.append(
            ColumnProtection(
                name=column.name,
                state=state,
                want=want,
                key=common[0][0][0] if common else None,
                mask=common[0][0][1] if common else None,
                versions=sorted({k.version for k, _ in shown if k.version is not None}),
                files=len(shown),
                since_run=first.run if first else None,
                since=first.at if first else None,
                options_set=want is not None and lower in options and _same(options[lower], want),
                action=change.action if change else None,
                tag=change.tag if change and change.tag else _tag(matched),
                why=change.why if change else "",
            )
        )
    encrypted = [c.name for c in columns if c.state == "encrypted"]
    pending = [c.name for c in columns if c.state == "pending"]
    ddl = list(plan.ddl) if plan else []
    if not columns:
        status = "none"
    elif pending or ddl or (plan is not None and plan.files):
        status = "pending"
    else:
        status = "protected"
    protection = Protection(
        status=status,
        columns=columns,
        encrypted_columns=encrypted,
        pending_columns=pending,
        ddl=ddl,
        files_recorded=len(files),
        problems=list(plan.problems) if plan else [],
        policy_digest=policy.digest(),
    )
    return protection, table_record, plan


def _tag(matched) -> str | None:
    return f"{matched[0].tag}={matched[1]}" if matched else None


def _planning_failed(exc: ProtectionError) -> ApiProblem:
    status = 404 if str(exc).startswith("unknown table") else 400
    return ApiProblem(status, str(exc))


@router.get("/tables/{table_id:path}/protection", response_model=TableProtectionAnswer)
def table_protection(
    table_id: TableId,
    files: bool = Query(
        False, description="Read the ORC tails of the table's files for the files to rewrite."
    ),
    limit: int = Query(200, ge=1, le=MAX_FILES, description="Files of the plan listed at most."),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> TableProtectionAnswer:
    """The table's protection (per column encrypted, pending or released; the options still to set)
    from the graph's records, its record, and its plan (`files=true`: the files to rewrite too)."""
    table = read_table(svc.graph, table_id)
    policy = protection_policy(svc)
    plan = None
    if policy is not None and files:
        try:
            # the files' state only: the keys are checked by a plan over the catalog and an apply
            whole = protection_runs.plan(
                svc.graph,
                policy,
                kms=svc.settings.protect_kms,
                given_as=KMS_SETTING,
                tables=[table.id],
                keys=False,
            )
        except ProtectionError as exc:
            raise _planning_failed(exc) from None
        plan = whole.tables[0] if whole.tables else None
    protection, table_record, plan = protection_state(
        svc.graph, table, policy, provider_path(svc, policy), plan
    )
    total = len(plan.files) if plan else 0
    if plan is not None and total > limit:
        plan = plan.model_copy(update={"files": plan.files[:limit]})
    return TableProtectionAnswer(
        table=table.id,
        protection=protection,
        record=table_record,
        plan=plan,
        plan_files=total,
        files_truncated=total > limit,
    )


@router.post("/protect/plan", response_model=ProtectPlanPage, responses=CONFLICT_RESPONSES)
def protect_plan(
    body: ProtectPlanRequest, _: Me = Depends(viewer), svc: Service = Depends(service)
) -> ProtectPlanPage:
    """The protection plan: the given tables, or the catalog a page of `limit` tables at a time
    (by table id; tables with nothing to change are left out, so a page may hold fewer)."""
    policy = needs_policy(svc)
    after = None
    if body.tables is not None:
        # the ids the rights check and GET /tables/{t}/protection use (`ODS.Users` is ods.users)
        tables = list(dict.fromkeys(parse(t, "Table")[0] for t in body.tables))
    else:
        after = str(decode(body.cursor).get("after", ""))
        tables = [r[0] for r in svc.graph.read(TABLE_PAGE, {"after": after, "n": body.limit + 1})]
    more = body.tables is None and len(tables) > body.limit
    tables = tables[: body.limit] if body.tables is None else tables
    if not tables:
        plan = protection_runs.empty_plan(policy, kms=svc.settings.protect_kms, given_as=KMS_SETTING)
    else:
        # with a KMS configured, a key the policy names that the KMS lacks fails the plan here
        provider = kms_provider(svc, policy)
        try:
            plan = protection_runs.plan(
                svc.graph,
                policy,
                kms=svc.settings.protect_kms,
                given_as=KMS_SETTING,
                tables=tables,
                provider=provider,
                read_files=body.files,
            )
        except ProtectionError as exc:
            raise _planning_failed(exc) from None
        finally:
            if provider is not None:
                provider.close()
    if body.tables is None:
        # listed tables are reported even with nothing to change ("no location" and the like)
        plan.tables = [t for t in plan.tables if t.columns or t.ddl or t.files]
    truncated: dict[str, int] = {}
    for number, table_plan in enumerate(plan.tables):
        if len(table_plan.files) > body.files_limit:
            truncated[table_plan.table] = len(table_plan.files)
            plan.tables[number] = table_plan.model_copy(
                update={"files": table_plan.files[: body.files_limit]}
            )
    return ProtectPlanPage(
        plan=plan,
        examined=len(tables),
        next_cursor=encode_cursor({"after": tables[-1]}) if more else None,
        files_truncated=truncated,
    )


@router.post("/protect/apply", response_model=ProtectRunView, status_code=202, responses=CONFLICT_RESPONSES)
def protect_apply(
    body: ProtectApplyRequest,
    me: Me = Depends(admin),
    svc: Service = Depends(service),
    runs: ProtectRunner = Depends(protect_runner),
) -> ProtectRunView:
    """Plan and apply protection in the background of this service (one apply at a time: 409
    while one runs): the files are rewritten here, without Spark; follow it at
    GET /protect/runs/{id}."""
    policy = needs_policy(svc)
    tables = None
    if body.tables is None:
        me.require_unrestricted("admin")
    else:
        parsed = [parse(table, "Table") for table in body.tables]
        for _, _, database in parsed:
            me.require("admin", database)
        # planned under the same ids the rights were checked for
        tables = list(dict.fromkeys(node_id for node_id, _, _ in parsed))

    def audit(run_id: str) -> None:
        # before the run starts: an apply that cannot be audited does not run
        record(
            svc.graph,
            me.name,
            "protect.apply",
            f"protection-run:{run_id}",
            None,
            {"tables": tables, "run": run_id},
        )

    return runs.start(policy, tables, me.name, before_start=audit)


@router.get("/protect/runs", response_model=Page[ProtectRunView])
def protect_runs(
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
    runs: ProtectRunner = Depends(protect_runner),
) -> Page[ProtectRunView]:
    """Protection runs (applies and rewraps), newest first."""
    position = page.position()
    rows = svc.graph.read(
        RUN_PAGE,
        {"at": str(position.get("at", "~")), "id": str(position.get("id", "~")), "n": page.limit + 1},
    )
    found = [runs.view_of(r[0]) for r in rows]
    more = len(found) > page.limit
    found = found[: page.limit]
    cursor = encode_cursor({"at": found[-1].started_at, "id": found[-1].id}) if more and found else None
    return Page[ProtectRunView](items=found, next_cursor=cursor)


@router.get("/protect/runs/{run_id}", response_model=ProtectRunView)
def protect_run(
    run_id: RunId, _: Me = Depends(viewer), runs: ProtectRunner = Depends(protect_runner)
) -> ProtectRunView:
    """A protection run's record; while this service runs it, files planned and finished so far."""
    found = runs.view(run_id)
    if found is None:
        raise ApiProblem(404, f"protection run {run_id} not found")
    return found
