"""A gateway for the masking tests (test_masking_gateway.py, test_masking_property.py): the real
AuthzService on a FalkorDB graph, over one table whose `phone`, `ssn` and `email` are tagged and
propagated as a steward would, and a user `masked` who may select everything and unmask nothing.
"""

from __future__ import annotations

from watershed.api.service.accounts.rights import Me
from watershed.api.service.authz import AuthzService
from watershed.graph.authz import Grant
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.propagation.engine import local_batches, propagate_full
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy, default_policy

DB = "default"
#: the protected table (the issue's `ods.src_38`), a lookup table keyed by digit, a table of
#: users keyed by their (protected) phone, and the tags of each
TABLES = {
    "src_38": {"id": "int", "phone": "string", "ssn": "string", "email": "string"},
    "digits": {"k": "string", "v": "string"},
    "users_38": {"phone": "string", "name": "string"},
}
TAGS = {
    "src_38.phone": ("L3", "phone"),
    "src_38.ssn": ("L4", "ssn"),
    "src_38.email": ("L3", "email"),
    "users_38.phone": ("L3", "phone"),
}
#: the policy's secret function: `sha2(concat(vault_salt(), phone))` is a keyed hash
SECRET = "vault_salt"
ADMIN = Me(name="root", role="admin")


def gateway_policy() -> Policy:
    return Policy.from_data({**default_policy().model_dump(), "secret_functions": [SECRET]})


def catalog() -> Catalog:
    return Catalog(
        default_database=DB,
        tables={
            f"{DB}.{name}": CatalogTable(
                name=f"{DB}.{name}", columns=[CatalogColumn(name=c, type=t) for c, t in columns.items()]
            )
            for name, columns in TABLES.items()
        },
    )


def start(falkordb_server, graph_name: str):
    """(service, graph): the catalog loaded, the tags propagated, user `masked` granted select."""
    from watershed.graph.falkordb_store import FalkorDBStore

    graph = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph_name)
    graph.clear()
    graph.ensure_schema()
    graph.upsert_catalog(catalog())
    policy = gateway_policy()
    tags = GraphTagStore(graph, policy)
    for column, (level, kind) in TAGS.items():
        tags.set_tag(f"{DB}.{column}", "pii", [level], by="steward")
        tags.set_tag(f"{DB}.{column}", "pii_type", [kind], by="steward")
    tags.raise_fence(1)
    propagate_full(tags, local_batches(tags, policy, "r1", 1), run_id="r1", token=1)
    service = AuthzService(graph, policy, default_database=DB)
    service.grants.add_role(ADMIN, "r_masked")
    service.grants.assign(ADMIN, "r_masked", "user", "masked")
    service.grants.grant(ADMIN, Grant(id="", role="r_masked", database=DB, actions=["select"]))
    return service, graph
