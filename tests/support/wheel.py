"""The built wheel and an interpreter without the editable install, shared by the packaging test
and the cluster harvest test (the wheel is built once per session: the `wheel` fixture of
tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the folders the wheel ships (setup.py's LAYERS)
LAYERS = ("graph", "ingest", "propagation", "ttl_advisor", "orc_crypto", "discovery", "api", "dags")
#: what the wheel is built from besides the layer folders
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md")


def run(argv: list, cwd: Path, timeout: float = 300) -> str:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{argv}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
    return result.stdout


def build_wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the tree (a build in place leaves build/ and egg-info behind)."""
    missing = [name for name in ("setuptools", "wheel") if importlib.util.find_spec(name) is None]
    assert not missing, f"{missing}: the dev extras (pip install -e '.[dev]') bring what the build needs"
    source = tmp_path_factory.mktemp("source")
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc", "*.egg-info", "build")
    for layer in LAYERS:
        shutil.copytree(REPO / layer, source / layer, ignore=ignore)
    for name in BUILD_FILES:
        shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, source],
        source,
    )
    (built,) = out.glob("*.whl")
    return built


def venv_without_watershed(root: Path) -> Path:
    """A venv at `root` whose site-packages reach this venv's dependencies but not its watershed.

    A plain path line in a .pth adds this venv's site-packages without running its .pth files,
    so the editable install's finder stays out. Returns the new venv's site-packages.
    """
    run([sys.executable, "-m", "venv", "--without-pip", root], root)
    python = root / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root).strip())
    (site / "watershed_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return site
