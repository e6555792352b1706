"""The operators of a statement's plan on a live Neo4j, to check that a read seeks an index.

from tests.support.neo4j_plans import plan_operators
"""

from __future__ import annotations


def plan_operators(store, query: str, params: dict) -> list[str]:
    """Every operator of `query`'s EXPLAIN plan on `store`'s server (indexes awaited first), the
    root first; names without their runtime suffix (`NodeIndexSeekByRange`, not `...@neo4j`)."""
    store.read("CALL db.awaitIndexes(60)")
    plan = store.driver.execute_query("EXPLAIN " + query, params, database_=store.database).summary.plan

    def operators(node: dict) -> list[str]:
        return [
            node["operatorType"].split("@")[0],
            *(o for c in node.get("children", []) for o in operators(c)),
        ]

    return operators(plan)
