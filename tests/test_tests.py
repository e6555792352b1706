"""The tests' own structure: a test module is a leaf, what tests share lives in tests/support/.

Every module under tests/ and bench/ is parsed (nothing is imported) and every import in it is
checked, function-local and relative ones included:

- no module imports a test module (`test_*.py`): a helper another test needs moves to
  tests/support/<what it holds>.py, so running one test file never runs or collects another's;
- no module imports a fixture from another module: pytest makes an imported fixture the
  importing module's own, so a session-scoped server would start once per importing module. A
  shared fixture lives in a conftest.py above its users or in a tests/support plugin that
  tests/conftest.py registers (`pytest_plugins`);
- no underscore name crosses modules: what two modules share is public, in tests/support/.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the folders whose modules are checked as importers (bench/ borrows test data too)
SCANNED = ("tests", "bench")


def _module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under the scanned folders of `root`."""
    found = {}
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr == "fixture"
    return isinstance(target, ast.Name) and target.id == "fixture"


def _fixtures(path: Path) -> set[str]:
    """The names of the module-level fixtures `path` defines."""
    tree = ast.parse(path.read_text(), str(path))
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(map(_is_fixture, node.decorator_list))
    }


def _imports(name: str, path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, imported name or None) of every import in the module `name` at `path`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found += [(node.lineno, base, alias.name) for alias in node.names]
    return found


def problems(root: Path) -> list[str]:
    modules = _module_names(root)
    fixtures: dict[str, set[str]] = {}
    found: dict[str, None] = {}  # one line per import statement and kind, in order
    for name, path in modules.items():
        where = path.relative_to(root)
        for line, module, imported in _imports(name, path):
            target = f"{module}.{imported}" if imported and f"{module}.{imported}" in modules else module
            if target not in modules:
                continue  # not ours: a library, the product
            if target.rpartition(".")[2].startswith("test_"):
                found[f"{where}:{line}: imports the test module {target}"] = None
                continue
            if imported is None or target != module:
                continue
            if module not in fixtures:
                fixtures[module] = _fixtures(modules[module])
            if imported in fixtures[module]:
                message = f"{where}:{line}: imports the fixture {imported} from {module} (that makes it this module's own copy)"
                found[message] = None
            elif imported.startswith("_") and not imported.startswith("__"):
                found[f"{where}:{line}: imports the private name {imported} from {module}"] = None
    return list(found)


def test_no_test_module_fixture_or_private_name_is_imported():
    found = problems(REPO)
    assert not found, "\n".join(found)


def test_the_check_flags_each_kind_and_passes_a_support_module(tmp_path):
    files = {
        "tests/__init__.py": "",
        "tests/a/__init__.py": "",
        "tests/a/conftest.py": "import pytest\n\n@pytest.fixture(scope='session')\ndef redis():\n    yield 1\n",
        "tests/a/test_x.py": "from pytest import fixture\n\nHELPER = 1\n\n@fixture\ndef store():\n    return 2\n",
        "tests/a/test_y.py": "from tests.a.test_x import HELPER\nfrom . import test_x as base\n",
        "tests/a/test_z.py": "def test_z():\n    from .test_x import store\n",
        "tests/b/__init__.py": "",
        "tests/b/test_w.py": "from tests.a.conftest import redis\nfrom tests.support.data import _secret, PUBLIC\n",
        "tests/support/__init__.py": "",
        "tests/support/data.py": "PUBLIC = 1\n_secret = 2\n",
        "tests/c/__init__.py": "",
        "tests/c/test_ok.py": "import os\n\nfrom tests.support.data import PUBLIC\nfrom tests.support import data\n",
        "bench/__init__.py": "",
        "bench/b.py": "import tests.a.test_x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = problems(tmp_path)
    assert sorted(found) == sorted(
        [
            "tests/a/test_y.py:1: imports the test module tests.a.test_x",
            "tests/a/test_y.py:2: imports the test module tests.a.test_x",
            "tests/a/test_z.py:2: imports the test module tests.a.test_x",
            "tests/b/test_w.py:1: imports the fixture redis from tests.a.conftest "
            "(that makes it this module's own copy)",
            "tests/b/test_w.py:2: imports the private name _secret from tests.support.data",
            "bench/b.py:1: imports the test module tests.a.test_x",
        ]
    )


#: run under the guard (tests/support/server_guard.py): three server starts, each must be refused;
#: an ordinary child still runs
GUARDED = """
import socket, subprocess, sys
from tests.support import server_guard
server_guard.install()
starts = {
    "listen": lambda: socket.create_server(("127.0.0.1", 0)),
    "program": lambda: subprocess.Popen(["/no/such/dir/redis-server", "--port", "0"]),
    "child": lambda: subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_server(('127.0.0.1', 0))"], check=True
    ),
}
for name, start in starts.items():
    try:
        start()
    except (server_guard.ServerStartedError, subprocess.CalledProcessError):
        print("refused", name)
subprocess.run([sys.executable, "-c", "print('ordinary')"], check=True)
"""


def test_the_server_guard_refuses_and_lists_a_server_started_here_or_in_a_child(tmp_path):
    """The proof that the fast tier starts no server rests on this guard: a listening socket, a
    server program and a server in a Python child each fail, and each is written to the file."""
    log = tmp_path / "refused.log"
    env = {**os.environ, "WATERSHED_TESTS_NO_SERVERS": str(log), "PYTEST_CURRENT_TEST": "t.py::t (call)"}
    done = subprocess.run(
        [sys.executable, "-c", GUARDED], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["refused listen", "refused program", "refused child", "ordinary"]
    refused = log.read_text().splitlines()
    assert len(refused) == 3 and all(line.startswith("t.py::t (call): ") for line in refused), refused
    assert "began to listen" in refused[0] and "started redis-server" in refused[1]
    assert "began to listen" in refused[2]
