"""The operators of a statement's plan on a live Neo4j, to check that a read seeks an index.

from tests.support.neo4j_plans import plan_operators
"""

from __future__ import annotations


def plan_operators(store, query: str, params: dict) -> list[str]:
    """Every operator of `query`'s EXPLAIN plan on `store`'s server (indexes awaited first), the
    root first; names without their runtime suffix (`NodeIndexSeekByRange`, not `...@neo4j`)."""
    store.read("CALL db.awaitIndexes(60)")
    plan = store.driver.execute_query("EXPLAIN " + query, params, database_=store.database).summary.plan
    return [name for name, _ in operators_of(plan)]


def operators_of(plan: dict) -> list[tuple[str, str]]:
    """(operator, details) of every operator of an EXPLAIN or PROFILE plan, the root first; names
    without their runtime suffix."""
    return [
        (plan["operatorType"].split("@")[0], plan.get("args", {}).get("Details", "")),
        *(o for child in plan.get("children", []) for o in operators_of(child)),
    ]
