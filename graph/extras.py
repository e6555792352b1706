"""Optional dependencies: the extras of the `watershed-lineage` distribution.

The core (lineage, graph on FalkorDB, propagation, TTL advice, ORC crypto) installs
with the plain package; Spark, Neo4j, the KMS server, JCEKS keystores and the web
service come with extras. A command that needs a missing one says which extra to
install instead of failing on an import deep inside.
"""

from __future__ import annotations

import importlib.util

from watershed.graph.errors import WatershedError

DISTRIBUTION = "watershed-lineage"


class MissingExtraError(WatershedError, ImportError):
    """A feature needs an optional dependency that is not installed."""


def require_extra(extra: str, *modules: str, purpose: str) -> None:
    """Raise MissingExtraError naming the extra when any of `modules` cannot be imported."""
    missing = [module for module in modules if not _importable(module)]
    if missing:
        raise MissingExtraError(
            f"{purpose} needs {', '.join(missing)}, which is not installed: "
            f"pip install '{DISTRIBUTION}[{extra}]'"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
