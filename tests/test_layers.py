"""Dependencies point one way, floor by floor, with no circle and no private name crossing modules.

The floors, top to bottom:

- the faces: `api/cli` (the `watershed` command), `api/http` (the FastAPI app), `api/web` (the UI);
- the use cases: `api/service/` (propagation, tag-change, protection and harvest runs, accounts,
  authz, audit, search, pages, the nightly chain, the Celery app); `api/` holds nothing else but
  the faces and this floor;
- the features: ingest, propagation, ttl_advisor, orc_crypto, discovery;
- graph.

Every module of the product is parsed (no import is run), and every import in it is checked,
function-local ones included:

- nothing imports a floor above its own: a use case never imports a face, a feature never imports
  api, graph imports nothing of ours but graph;
- modules of one floor but different folders do not import each other: the four features do not
  (what two share lives in graph, what one needs of another at run time is passed in by api), and
  the faces do not (what two faces share is a use case), but for the exceptions tabled below;
- everything of ours is imported as `watershed.<folder>`, never as a top-level `graph` or `api`
  (that would load a second copy of a module, or another project's);
- no circle of imports: the module graph built from every import has no cycle; each one found is
  reported as a path with the line of each arrow;
- no underscore name is used outside what owns it: `from m import _x` and `m._x` from another
  module, or a `_module` from outside its package.

A string that is a module path (a `python -m ...` or `celery -A ...` argument) counts as an import
for the floors: it is one, made by a child process. It is no arrow of the module graph: a child
process cannot close a circle of imports in this one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import deque
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: each product folder and its rank: a module may import its own layer and lower ranks only
RANKS = {
    "graph": 0,
    "ingest": 1,
    "propagation": 1,
    "ttl_advisor": 1,
    "orc_crypto": 1,
    "discovery": 1,
    "api": 2,
}
#: the folders of api/ that are faces, one floor above the use cases
FACES = ("cli", "http", "web")
#: the folder of api/ that is the use-case floor: every module of api/ that is not a face is in it
USE_CASES = "service"
#: what api/ may hold beside its folders
API_FILES = {"__init__.py", "py.typed"}
#: folders of the repo that are not shipped: the product never imports them
NOT_SHIPPED = {"bench", "tests"}
#: shipped as watershed.dags for Airflow to load, above every layer: nothing in the product imports it
ABOVE_THE_PRODUCT = "dags"

#: (importer, imported) pairs allowed between the middle layers, each with why. Empty: what two of
#: them share lives in graph (the lineage model, the catalog, ids, settings), and what one needs of
#: another at run time is passed in by api (the Celery app to the propagation coordinator).
ALLOWED_BETWEEN_MIDDLE_LAYERS: dict[tuple[str, str], str] = {}

#: (importing file, imported module) allowed between two faces, each with why
ALLOWED_BETWEEN_FACES: dict[tuple[str, str], str] = {
    ("api/cli/serve.py", "watershed.api.http.app"): (
        "`watershed serve` is the command that runs the HTTP app: starting it is the whole command"
    ),
}

_MODULE_PATH = re.compile(r"watershed(\.\w+)+(:\w+)?")


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.imported}: {self.why}"


@dataclass(frozen=True)
class Import:
    line: int
    #: the module imported (for `from m import name`, `m.name` when that is a module)
    module: str
    #: the name taken from `module` by `from module import name`, else None
    name: str | None
    #: a string naming a module for a child process, not an import of this process
    string: bool = False


def module_name(path: str) -> str:
    """The dotted name of the module at `path` (relative to the repo, e.g. 'api/cli/tag.py')."""
    parts = Path(path).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["watershed", *parts])


@functools.cache
def product_module_names() -> frozenset[str]:
    """Every module and package of the product by its dotted name."""
    return frozenset(module_name(path.relative_to(REPO).as_posix()) for path in product_modules())


def _floor(parts: list[str] | tuple[str, ...]) -> tuple[str, int]:
    """The floor of a module by the parts of its name after `watershed`: its name and rank."""
    layer = parts[0]
    if layer == ABOVE_THE_PRODUCT:
        return layer, 4
    if layer == "api":
        if len(parts) > 1 and parts[1] in FACES:
            return f"api/{parts[1]}", 3
        return "api", 2
    return layer, RANKS[layer]


def _judge(path: str, module: str) -> str | None:
    """Why the module at `path` may not import `module`, or None when it may."""
    own, own_rank = _floor(Path(path).with_suffix("").parts)
    top, _, rest = module.partition(".")
    if top in RANKS or top in NOT_SHIPPED or top == ABOVE_THE_PRODUCT:
        if top in NOT_SHIPPED or top == ABOVE_THE_PRODUCT:
            return f"the product never imports {top}/ (it is not shipped)"
        return f"a bare top-level import: write watershed.{module}"
    if top != "watershed" or not rest:
        return None
    target_parts = rest.split(".")
    if target_parts[0] not in RANKS and target_parts[0] != ABOVE_THE_PRODUCT:
        return None
    target, target_rank = _floor(target_parts)
    if target == own:
        return None
    if target == ABOVE_THE_PRODUCT:
        return "the DAG runs the product; the product never imports the DAG"
    if target_rank > own_rank:
        if own == "api":
            return f"a use case never imports a face ({target}): the face calls the use case"
        return f"{own} is below {target}: nothing imports a floor above its own"
    if target_rank < own_rank:
        return None
    if own_rank == 1 and (own, target) not in ALLOWED_BETWEEN_MIDDLE_LAYERS:
        return (
            f"{own} and {target} are both middle layers: move the shared code down into graph, "
            "or have api pass it in"
        )
    if own_rank == 3 and (path, module) not in ALLOWED_BETWEEN_FACES:
        return f"faces never import each other ({own} imports {target}): what both need is a use case"
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


class _LeavesItsLayer(ValueError):
    """A relative import that climbs out of the product folder it is written in."""


def _imports(tree: ast.Module, path: str, known: frozenset[str] | None = None) -> list[Import]:
    """Every import of the module at `path`, function-local ones included, and module-path strings.

    `known` holds the names of the modules (the product's unless given), to tell `from package
    import module` from `from module import name`.
    """
    parts = Path(path).with_suffix("").parts
    # the package a relative import starts from (a module's own, an __init__'s itself: both parts[:-1])
    package = ["watershed", *parts[:-1]]
    known = product_module_names() if known is None else known
    docstrings = _docstrings(tree)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 >= len(package) - 1:
                    raise _LeavesItsLayer(node.lineno)
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                if submodule in known:
                    found.append(Import(node.lineno, submodule, None))
                else:
                    found.append(Import(node.lineno, module, alias.name))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _MODULE_PATH.fullmatch(node.value)
        ):
            found.append(Import(node.lineno, node.value.partition(":")[0], None, string=True))
    return found


def _private_owner(dotted: str) -> tuple[str, str] | None:
    """(the first underscore name in `dotted`, what owns it: the module or package above it)."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__") and index > 0:
            return part, ".".join(parts[:index])
    return None


def _is_within(module: str, owner: str) -> bool:
    return module == owner or module.startswith(owner + ".")


def _private_uses(tree: ast.Module, imports: list[Import], own: str) -> list[tuple[int, str]]:
    """(line, dotted name) for each underscore name this module takes from a module that is not it.

    `from m import _x`, `import m._x` and `from m._x import y` for any m; `m._x` attribute reads
    where m is a module of the product imported by name (`os._exit` is public API of a library).
    """
    found = []
    for item in imports:
        if item.string:
            continue
        dotted = f"{item.module}.{item.name}" if item.name else item.module
        private = _private_owner(dotted)
        if private is not None and not _is_within(own, private[1]):
            found.append((item.line, dotted))
    known = product_module_names()
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
    for item in imports:
        if not item.string and item.name is None and item.module in known:
            bound.setdefault(item.module.rsplit(".", 1)[-1], item.module)
    seen = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        chain, value = [node.attr], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in bound:
            continue
        owner = ".".join([bound[value.id], *reversed(chain[1:])])
        if owner in known and not _is_within(own, owner) and (node.lineno, owner) not in seen:
            seen.add((node.lineno, owner))
            found.append((node.lineno, f"{owner}.{node.attr}"))
    return found


def check_source(source: str, path: str) -> list[Violation]:
    """The violations of one module at `path` (relative to the repo, e.g. 'graph/x.py'): imports
    against the floors, and underscore names taken from another module."""
    tree = ast.parse(source, filename=path)
    try:
        imports = _imports(tree, path)
    except _LeavesItsLayer as leaving:
        return [Violation(path, leaving.args[0], "..", "a relative import leaves its layer")]
    found = []
    for item in imports:
        why = _judge(path, item.module)
        if why is not None and Violation(path, item.line, item.module, why) not in found:
            found.append(Violation(path, item.line, item.module, why))
    for line, dotted in _private_uses(tree, imports, module_name(path)):
        found.append(Violation(path, line, dotted, "an underscore name is private to its module"))
    return found


def import_cycles(sources: dict[str, str]) -> list[str]:
    """Each circle of imports among the modules `sources` holds (path -> source), as a path.

    Every import is an arrow, function-local and TYPE_CHECKING ones included (an import a reader
    does not see at the top is still a dependency, and the circle it closes is still one). An
    import names its module, not the packages above it: a package's __init__ that imports its own
    modules is how a package is built, not a circle. Each arrow inside a strongly connected group
    is reported on the shortest circle through it, so every arrow that takes part in a circle is
    shown at least once.
    """
    names = {module_name(path): path for path in sources}
    arrows: dict[str, dict[str, int]] = {name: {} for name in names}
    for name, path in names.items():
        for item in _imports(ast.parse(sources[path], filename=path), path, frozenset(names)):
            target = item.module
            while target not in names and "." in target:
                target = target.rsplit(".", 1)[0]
            if not item.string and target in names and target != name:
                arrows[name].setdefault(target, item.line)

    circles: dict[tuple[str, ...], str] = {}
    for group in _strongly_connected(arrows):
        for start in sorted(group):
            for target in sorted(arrows[start]):
                if target not in group:
                    continue
                back = _shortest_path(arrows, target, start, group)
                loop = [start, *back]  # ends where it starts
                turn = loop.index(min(loop))
                key = tuple(loop[turn:-1] + loop[:turn])
                if key not in circles:
                    steps = [f"{node} ({names[node]}:{arrows[node][nxt]})" for node, nxt in pairwise(loop)]
                    circles[key] = " -> ".join([*steps, start])
    return sorted(circles.values())


def _strongly_connected(arrows: dict[str, dict[str, int]]) -> list[set[str]]:
    """The groups of more than one module that reach each other (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in arrows[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return groups


def _shortest_path(arrows: dict[str, dict[str, int]], start: str, end: str, within: set[str]) -> list[str]:
    """The modules from `start` to `end` (both included) along the fewest arrows inside `within`."""
    came_from = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == end:
            break
        for target in sorted(arrows[node]):
            if target in within and target not in came_from:
                came_from[target] = node
                queue.append(target)
    path = [end]
    while path[-1] != start:
        path.append(came_from[path[-1]])
    return path[::-1]


def product_modules() -> list[Path]:
    folders = [*RANKS, ABOVE_THE_PRODUCT]
    return sorted(
        path
        for folder in folders
        for path in (REPO / folder).rglob("*.py")
        if "node_modules" not in path.parts
    )


def _product_sources() -> dict[str, str]:
    return {path.relative_to(REPO).as_posix(): path.read_text() for path in product_modules()}


def test_no_module_imports_against_the_floors():
    sources = _product_sources()
    assert len(sources) > 100, "the product folders were not found"
    found = [violation for path, source in sources.items() for violation in check_source(source, path)]
    assert not found, "imports against the floors:\n" + "\n".join(map(str, found))


def test_api_holds_the_faces_and_the_use_case_floor_only():
    # A module beside the faces would be a use case a newcomer does not find in api/service/.
    api = REPO / "api"
    strays = sorted(
        entry.name
        for entry in api.iterdir()
        if not entry.name.startswith(".")
        and entry.name != "__pycache__"
        and (entry.name not in (*FACES, USE_CASES) if entry.is_dir() else entry.name not in API_FILES)
    )
    assert not strays, f"api/ holds {strays}: a use case belongs in api/{USE_CASES}/, a face beside it"


def test_no_circle_of_imports():
    circles = import_cycles(_product_sources())
    assert not circles, "circles of imports:\n" + "\n".join(circles)


def test_the_allowed_exceptions_are_still_used():
    sources = _product_sources()
    used = {
        (path, item.module) for path, source in sources.items() for item in _imports(ast.parse(source), path)
    }
    stale = [pair for pair in ALLOWED_BETWEEN_FACES if pair not in used]
    assert not stale, f"no longer imported, drop from ALLOWED_BETWEEN_FACES: {stale}"


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
        ("propagation/x.py", 'ARGV = ["-A", "watershed.api.service.celery_app"]', "propagation is below api"),
        ("graph/sub/x.py", "from ...ingest import extract", "relative import leaves its layer"),
        # the floors inside api/
        (
            "api/service/x.py",
            "def f():\n    from watershed.api.cli.output import console\n",
            "never imports a face",
        ),
        (
            "api/service/nightly/x.py",
            "from watershed.api.http import problems",
            "never imports a face (api/http)",
        ),
        ("api/service/audit.py", "from watershed.api import web", "never imports a face (api/web)"),
        ("api/service/celery_app.py", 'ARGV = ["-m", "watershed.api.cli"]', "never imports a face (api/cli)"),
        ("api/http/x.py", "from watershed.api.cli.tag import app", "faces never import each other"),
        ("api/cli/x.py", "import watershed.api.http.app", "faces never import each other"),
        (
            "api/cli/serve.py",
            "from watershed.api.http.settings import ApiSettings",
            "never import each other",
        ),
        ("api/http/x.py", 'uvicorn.run("watershed.api.cli:app")', "faces never import each other"),
        ("ingest/x.py", "from watershed.api.service import tag_changes", "ingest is below api"),
        # underscore names stay with what owns them
        ("api/cli/x.py", "from watershed.api.cli.propagate import _policy", "private to its module"),
        ("orc_crypto/x.py", "def f():\n    from .codec.tail import _parse\n", "private to its module"),
        ("api/x.py", "from pydantic._internal import _fields", "private to its module"),
        ("ingest/x.py", "from watershed.graph import store\nstore._merge(x)", "private to its module"),
        ("ingest/x.py", "import watershed.graph.store as s\ns._merge(x)", "private to its module"),
        (
            "ingest/x.py",
            "import watershed.graph.store\nwatershed.graph.store._merge(x)",
            "private to its module",
        ),
        ("ingest/x.py", "from watershed.graph._merge import d", "private to its module"),
        ("orc_crypto/x.py", "from watershed.orc_crypto.masking._sha256_fallback import d", "private to its"),
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
        ("propagation/x.py", '"""Registered by `watershed.api.service.celery_app`."""'),
        ("graph/x.py", "import celery, redis"),
        # the floors inside api/
        ("api/cli/x.py", "from watershed.api.service.propagation_runs import run"),
        ("api/http/routers/x.py", "from watershed.api.http.problems import ApiProblem"),
        (
            "api/http/x.py",
            "from watershed.api.service.accounts.rights import Me\nfrom watershed.api import audit",
        ),
        ("api/service/x.py", "from watershed.api.service.accounts.store import AccountStore"),
        ("api/service/nightly/x.py", "from watershed.api.service import propagation_runs"),
        ("api/cli/serve.py", "def serve():\n    from watershed.api.http.app import create_app\n"),
        ("api/http/x.py", 'log = logging.getLogger("watershed.api.runs")'),
        ("dags/x.py", "def step():\n    from watershed.api.service.nightly import steps\n"),
        # underscore names inside what owns them, and dunder names
        ("orc_crypto/masking/sha256.py", "from watershed.orc_crypto.masking._sha256_fallback import d"),
        ("orc_crypto/masking/sha256.py", "from ._sha256_fallback import digest_values"),
        ("api/x.py", "from watershed.api.x import _helper"),
        ("api/x.py", "import os\nos._exit(1)\nfrom watershed import graph\ngraph.__name__"),
    ],
)
def test_what_the_floors_allow_passes(path, source):
    assert check_source(source, path) == []


@pytest.mark.parametrize(
    ("sources", "circles"),
    [
        (
            {"api/a.py": "from watershed.api import b", "api/b.py": "def f():\n    import watershed.api.a\n"},
            ["watershed.api.a (api/a.py:1) -> watershed.api.b (api/b.py:2) -> watershed.api.a"],
        ),
        (
            {
                "api/service/celery_app.py": "from watershed.api.service.nightly.beat import crontab",
                "api/service/nightly/__init__.py": "",
                "api/service/nightly/beat.py": "\nfrom .steps import run",
                "api/service/nightly/steps.py": "def f():\n    from watershed.api.service.celery_app import app\n",
            },
            [
                "watershed.api.service.celery_app (api/service/celery_app.py:1) -> watershed.api.service.nightly.beat "
                "(api/service/nightly/beat.py:2) -> watershed.api.service.nightly.steps (api/service/nightly/steps.py:2) "
                "-> watershed.api.service.celery_app"
            ],
        ),
        (
            {
                "api/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from watershed.api.b import B",
                "api/b.py": "from watershed.api.a import A",
                "api/c.py": "from watershed.api.a import A",
            },
            ["watershed.api.a (api/a.py:3) -> watershed.api.b (api/b.py:1) -> watershed.api.a"],
        ),
    ],
)
def test_each_circle_is_found(sources, circles):
    assert import_cycles(sources) == circles


@pytest.mark.parametrize(
    "sources",
    [
        # a package's __init__ registering its modules, which import each other and the package's parts
        {
            "api/cli/__init__.py": "from watershed.api.cli import graph, tag\napp = 1",
            "api/cli/graph.py": "from watershed.api.cli.output import console",
            "api/cli/tag.py": "from watershed.api.cli.output import console\nfrom . import graph",
            "api/cli/output.py": "import rich",
        },
        # a child process naming the module that starts it is no circle
        {"api/a.py": 'ARGV = ["-m", "watershed.api.b"]', "api/b.py": "from watershed.api import a"},
    ],
)
def test_what_is_no_circle_passes(sources):
    assert import_cycles(sources) == []
