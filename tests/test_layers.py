"""Dependencies point one way: api -> (ingest, propagation, ttl_advisor, orc_crypto) -> graph.

Every module of the six product folders is parsed (no import is run), and every
import in it is checked, function-local ones included: nothing imports a layer
above its own, the four middle layers do not import each other (but for the
table below), and everything of ours is imported as `watershed.<layer>`, never
as a top-level `graph` or `api` (that would load a second copy of a module, or
another project's). A string that is a module path of a forbidden layer (a
`python -m ...` or `celery -A ...` argument) counts as an import: it is one,
made by a child process.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: each product folder and its rank: a module may import its own layer and lower ranks only
RANKS = {"graph": 0, "ingest": 1, "propagation": 1, "ttl_advisor": 1, "orc_crypto": 1, "api": 2}
#: folders of the repo that are not shipped: the product never imports them
NOT_SHIPPED = {"bench", "tests"}
#: shipped as watershed.dags for Airflow to load, above every layer: nothing in the product imports it
ABOVE_THE_PRODUCT = "dags"

#: (importer, imported) pairs allowed between the middle layers, each with why. Empty: what two of
#: them share lives in graph (the lineage model, the catalog, ids, settings), and what one needs of
#: another at run time is passed in by api (the Celery app to the propagation coordinator).
ALLOWED_BETWEEN_MIDDLE_LAYERS: dict[tuple[str, str], str] = {}

_MODULE_PATH = re.compile(r"watershed\.(\w+)(\.\w+)*")


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.imported}: {self.why}"


def _judge(layer: str, module: str) -> str | None:
    """Why `layer` may not import `module`, or None when it may."""
    top, _, rest = module.partition(".")
    if top in RANKS or top in NOT_SHIPPED or top == ABOVE_THE_PRODUCT:
        if top in NOT_SHIPPED or top == ABOVE_THE_PRODUCT:
            return f"the product never imports {top}/ (it is not shipped)"
        return f"a bare top-level import: write watershed.{module}"
    if top != "watershed" or not rest:
        return None
    target = rest.split(".")[0]
    if target == ABOVE_THE_PRODUCT:
        return "the DAG runs the product; the product never imports the DAG"
    if target not in RANKS or target == layer:
        return None
    if RANKS[target] > RANKS[layer]:
        return f"{layer} is below {target}: nothing imports a layer above its own"
    if RANKS[target] == RANKS[layer] and (layer, target) not in ALLOWED_BETWEEN_MIDDLE_LAYERS:
        return (
            f"{layer} and {target} are both middle layers: move the shared code down into graph, "
            "or have api pass it in"
        )
    return None


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the string constants that are docstrings (prose may name any module)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def check_source(source: str, path: str) -> list[Violation]:
    """The import-direction violations of one module at `path` (relative to the repo, e.g. 'graph/x.py')."""
    parts = Path(path).with_suffix("").parts
    layer = parts[0]
    # the package a relative import starts from (a module's own, an __init__'s itself: both parts[:-1])
    package = ["watershed", *parts[:-1]]
    tree = ast.parse(source, filename=path)
    docstrings = _docstrings(tree)
    found: list[Violation] = []

    def judge(line: int, module: str) -> None:
        why = _judge(layer, module)
        if why is not None:
            found.append(Violation(path, line, module, why))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                judge(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                if node.level - 1 >= len(package) - 1:
                    found.append(
                        Violation(path, node.lineno, "." * node.level, "a relative import leaves its layer")
                    )
                    continue
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            judge(node.lineno, module)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _MODULE_PATH.fullmatch(node.value)
        ):
            judge(node.lineno, node.value)
    return found


def product_modules() -> list[Path]:
    return sorted(path for layer in RANKS for path in (REPO / layer).rglob("*.py"))


def test_no_module_imports_against_the_layers():
    modules = product_modules()
    assert len(modules) > 100, "the product folders were not found"
    found = [
        violation
        for path in modules
        for violation in check_source(path.read_text(), path.relative_to(REPO).as_posix())
    ]
    assert not found, "imports against the layers:\n" + "\n".join(map(str, found))


@pytest.mark.parametrize(
    ("path", "source", "why"),
    [
        ("graph/x.py", "from watershed.ingest.extract import extract_lineage", "graph is below ingest"),
        ("propagation/x.py", "def f():\n    from watershed.api.cli import app\n", "propagation is below api"),
        ("ttl_advisor/x.py", "import watershed.ingest.predicates", "both middle layers"),
        ("orc_crypto/x.py", "import graph.store", "bare top-level import"),
        ("api/x.py", "from api.cli import app", "bare top-level import"),
        ("api/x.py", "import bench.propagation_bench", "never imports bench/"),
        ("api/x.py", "from watershed.dags.watershed_nightly import dag", "never imports the DAG"),
        ("api/x.py", "import dags.watershed_nightly", "never imports dags/"),
        ("propagation/x.py", 'ARGV = ["-A", "watershed.api.celery_app"]', "propagation is below api"),
        ("graph/sub/x.py", "from ...ingest import extract", "relative import leaves its layer"),
    ],
)
def test_each_kind_of_violation_is_found(path, source, why):
    found = check_source(source, path)
    assert len(found) == 1 and why in found[0].why, found


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("api/x.py", "from watershed.propagation.coordinator import propagate"),
        ("ingest/x.py", "from watershed.graph.catalog import Catalog"),
        ("propagation/x.py", "from . import engine\nfrom .engine import compute_batch"),
        ("propagation/x.py", '"""Registered by `watershed.api.celery_app`."""'),
        ("graph/x.py", "import celery, redis"),
    ],
)
def test_what_the_layers_allow_passes(path, source):
    assert check_source(source, path) == []
