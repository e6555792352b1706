"""Schemathesis against the live OpenAPI schema of the service: every answer is one the schema
documents (status, problem+json, headers, body), nothing is a 5xx, schema-valid input is taken and
schema-invalid input refused.

Bounded: a few examples per operation and mode (positive and negative data), as an admin, on the
service of this module (its own graph). The schema's own pytest integration is not used: its lazy
fixture loader does not run under pytest 9 (`Function._nodeid`); its Python API is.
"""

from __future__ import annotations

import contextlib

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

EXAMPLES = 5

#: operations not run, and why: they start long work or take away the test's own access
SKIPPED = {
    "POST /api/v1/propagation/runs": "starts a propagation run on the Celery workers",
    "POST /api/v1/propagation/runs/{run_id}/cancel": "cancels the current propagation run",
    "POST /api/v1/protect/apply": "starts a protection apply that rewrites ORC files",
    "PATCH /api/v1/users/{name}": "could demote or disable the admin the test acts as",
    "DELETE /api/v1/users/{name}": "could delete the admin the test acts as",
    "DELETE /api/v1/users/{name}/tokens/{token_id}": "could revoke the token the test acts with",
}

#: operations whose schema-valid input may still be refused (400/422), and why: the rule joins
#: fields, or needs the graph or the policy file, so no pattern of one field can state it (the
#: other checks still run on them). User, role, group and database names, grant and token ids
#: are patterns the server checks exactly (tests/api/service/test_name_patterns.py), so no operation is
#: excused for them.
RULES_BEYOND_THE_SCHEMA = {
    "POST /api/v1/authz/points": "the SQL text: the analyser decides",
    "POST /api/v1/authz/check": "the SQL text and its dialect (WATERSHED_AUTHZ_DIALECTS)",
    "POST /api/v1/authz/rewrite": "the SQL text and its dialect (WATERSHED_AUTHZ_DIALECTS)",
    "POST /api/v1/lineage/sql": "the SQL text: the analyser decides",
    "POST /api/v1/lineage": "an OpenLineage event: the intake checks the spec's schema, not restated here",
    "GET /api/v1/search": "a tag filter names a tag of the policy file",
    "POST /api/v1/authz/grants": "one scope of three optional fields; a database or table of the graph",
    "GET /api/v1/authz/grants": "role and user are each optional, but not both together",
    # the member's name is a user name when `kind` is user, a group name otherwise: one field's
    # rule depends on another's value, which a schema states only as a union the examples break
    "POST /api/v1/authz/roles/{name}/members": "the member's name rule depends on its kind",
    "DELETE /api/v1/authz/roles/{name}/members/{kind}/{member}": "the member's name rule depends on its kind",
    "PUT /api/v1/nodes/{node_id}/tags/{key}": "a tag key and values of the policy file",
    "PUT /api/v1/nodes/{node_id}/blocks/{key}": "a tag key of the policy file",
    "POST /api/v1/preview": "a tag key and values of the policy file",
    "GET /api/v1/nodes/{node_id}/tags/{key}/why": "a tag key of the policy file",
    "GET /api/v1/lineage/{node_id}": "a table id asks for level=table",
    "GET /api/v1/edges": "source and target are both tables or both columns",
    "PUT /api/v1/nodes/{node_id}/owner": "an email address email-validator takes, or a person's or team's name",
    "POST /api/v1/webhooks": "a URL's host and port, and no user or password in it: urllib parses it",
    "PATCH /api/v1/webhooks/{subscription_id}": "a URL's host and port, and no user or password in it: urllib parses it",
}


def operations(api):
    schema = schemathesis.openapi.from_url(api.url + "/api/v1/openapi.json")
    # NUL is refused in every string at the boundary (400 naming it, tests/api/http/test_boundary.py), a
    # rule the schema does not repeat on each
    schema.config.generation.update(allow_x00=False)
    for result in schema.get_all_operations():
        yield result.ok()


def run_operation(operation, mode: GenerationMode, headers: dict[str, str]) -> None:
    excluded = [positive_data_acceptance] if operation.label in RULES_BEYOND_THE_SCHEMA else []

    @given(case=operation.as_strategy(mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def check(case) -> None:
        if mode is GenerationMode.POSITIVE:
            # a cursor is only what a previous page handed out: none can be generated
            for part in (case.query, case.body):
                if isinstance(part, dict):
                    part.pop("cursor", None)
        case.call_and_validate(headers=headers, excluded_checks=excluded)

    # Unsatisfiable: nothing of the operation's input can be made invalid (negative mode)
    with contextlib.suppress(Unsatisfiable):
        check()


def test_the_live_schema_holds_for_every_operation(api):
    headers = {"Authorization": f"Bearer {api.tokens['admin']}"}
    failures, ran = [], 0
    for operation in operations(api):
        if operation.label in SKIPPED:
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                run_operation(operation, mode, headers)
            except Exception as exc:  # every operation's failures, not only the first
                failures.append(f"{operation.label} ({mode}):\n{str(exc)[:2000]}")
        ran += 1
    assert ran >= 45
    assert not failures, f"{len(failures)} failing:\n\n" + "\n\n".join(failures)


def test_the_schema_documents_errors_as_problems_and_states_id_formats(api):
    import httpx

    schema = httpx.get(api.url + "/api/v1/openapi.json").json()
    assert "Problem" in schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            for status in ("400", "401", "403", "404", "413", "422", "503"):
                content = responses[status]["content"]
                assert list(content) == ["application/problem+json"], (method, path, status)
            assert "Retry-After" in responses["503"]["headers"]
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] in (
                    "table_id",
                    "column_id",
                    "node_id",
                    "run_id",
                ):
                    stated = parameter["schema"].get("pattern") or parameter.get("description")
                    assert stated, (method, path, parameter["name"])
    assert "409" in schema["paths"]["/api/v1/users"]["post"]["responses"]


@pytest.mark.parametrize("node", ["tables/0", "columns/ods.x", "lineage/a", "nodes/x/tags", "lineage/``.x"])
def test_an_id_of_the_wrong_form_is_refused_by_its_stated_pattern(api, node):
    with api.client("admin") as client:
        answer = client.get(f"/{node}")
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
