"""Names say what they are: an exception's name ends in Error, a model's (pydantic) does not;
an underscore name stays in its module.

Every module of the product is imported and each class it defines is judged by what it is, so a
model named like an exception (a harvest's errors.jsonl line was `HarvestError`, beside the
exception of that name) or an exception named like a value (`UnknownKey`) fails here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("graph", "ingest", "propagation", "ttl_advisor", "orc_crypto", "discovery", "api")

#: exceptions whose names do not end in Error yet, each with why it is left
NOT_YET_RENAMED = {
    "watershed.api.http.problems.ApiProblem": "the HTTP problem answer every router raises (api faces)",
    "watershed.api.http.app._TooLarge": "private to the app's body-size guard (api faces)",
    "watershed.ingest.functions._TooDeep": "private to the function-name walk",
}


def product_classes() -> list[tuple[str, type]]:
    found = []
    for layer in LAYERS:
        package = importlib.import_module(f"watershed.{layer}")
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.endswith(".__main__"):
                continue  # running it is its only use
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if inspect.isclass(value) and value.__module__ == module.__name__:
                    found.append((f"{module.__name__}.{name}", value))
    return found


def test_exceptions_end_in_error_and_models_do_not():
    classes = product_classes()
    assert len(classes) > 300, "the product's modules were not found"
    exceptions = [
        name
        for name, cls in classes
        if issubclass(cls, BaseException) and not name.endswith("Error") and name not in NOT_YET_RENAMED
    ]
    models = [name for name, cls in classes if issubclass(cls, BaseModel) and name.endswith("Error")]
    assert not exceptions, f"exceptions whose name does not end in Error: {exceptions}"
    assert not models, f"models named like an exception: {models}"
    stale = [name for name in NOT_YET_RENAMED if name not in dict(classes)]
    assert not stale, f"renamed or gone, drop from NOT_YET_RENAMED: {stale}"


#: underscore names still imported from another module, each with why it is left
PRIVATE_IMPORTS_LEFT: dict[str, str] = {}


def private_imports() -> list[tuple[str, str]]:
    """(`path:line`, `module.name`) for each underscore name imported from another module."""
    found = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            own = ".".join(["watershed", *path.relative_to(REPO).with_suffix("").parts])
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom) or node.level or node.module == own:
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(
                            (f"{path.relative_to(REPO)}:{node.lineno}", f"{node.module}.{alias.name}")
                        )
    return found


def test_no_private_name_is_imported_from_another_module():
    found = private_imports()
    left = [f"{where}: {name}" for where, name in found if name not in PRIVATE_IMPORTS_LEFT]
    assert not left, "private names imported across modules:\n" + "\n".join(left)
    stale = set(PRIVATE_IMPORTS_LEFT) - {name for _, name in found}
    assert not stale, f"no longer imported, drop from PRIVATE_IMPORTS_LEFT: {stale}"
