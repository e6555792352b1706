"""The wheel installs only `watershed.*`, beside another project's own top-level `api` and `graph`.

Builds the wheel from a copy of the tree (a build in place would leave build/
and egg-info changes in the repo), installs it with `pip --no-deps` into an
empty venv whose dependencies come from this venv's site-packages through a
plain .pth path line (such a line adds the directory but runs none of its .pth
files, so the editable install's finder stays out: what imports is the wheel's
copy, which the test checks), then runs that venv's Python from a directory
holding another project's `api/` and `graph/` packages.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.support.wheel import LAYERS, run, venv_without_watershed

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "watershed-lineage"

# Run from the other project's directory: its api and graph must stay its own.
PROBE = """
import json, sys
import api, graph
import watershed.graph, watershed.api.cli
from watershed.orc_crypto.masking import sha256
print(json.dumps({
    "api": api.MARKER,
    "graph": graph.MARKER,
    "api_after": sys.modules["api"].MARKER,
    "watershed.graph": watershed.graph.__file__,
    "watershed.api.cli": watershed.api.cli.__file__,
    "digest_values": sha256.digest_values.__module__,
}))
"""

# The mask through whichever digest loop imports (the C extension, or the fallback without it).
MASK = """
import pyarrow as pa
from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.masking import sha256
from watershed.orc_crypto.proto import orc_proto_pb2 as pb
values = pa.array(["alice", None, "", "ünï"] * 3, pa.string()).slice(1)
for kind, length in ((kinds.STRING, 0), (kinds.CHAR, 70), (kinds.VARCHAR, 9)):
    column = pb.Type(kind=kind, maximumLength=length) if length else pb.Type(kind=kind)
    print(sha256.sha256_array(values, column).to_pylist())
print(sha256.digest_values.__module__)
"""


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """An empty venv with the wheel installed; its dependencies are this venv's, its watershed the wheel's."""
    root = tmp_path_factory.mktemp("venv")
    venv_without_watershed(root)
    python = root / "bin" / "python"
    # pip itself comes from this venv's site-packages too; it installs into the new venv's prefix
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel], cwd=root)
    return root


@pytest.fixture(scope="module")
def other_project(tmp_path_factory) -> Path:
    """A directory with another project's own top-level `api` and `graph` packages."""
    root = tmp_path_factory.mktemp("other-project")
    for name in ("api", "graph"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(f'MARKER = "the other project\'s {name}"\n')
    return root


@pytest.mark.timeout(300)
def test_the_wheel_holds_only_the_watershed_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    dist_info = f"watershed_lineage-{version(DISTRIBUTION)}.dist-info"
    assert tops == {"watershed", dist_info}, tops
    for layer in LAYERS:
        assert f"watershed/{layer}/py.typed" in names, layer
        assert f"watershed/{layer}/__init__.py" in names, layer
    assert not [n for n in names if "/tests/" in n or "/bench/" in n or n.endswith(".pyc")]
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "watershed = watershed.api.cli:main" in entry_points
    # the C extension is optional: built here when a compiler and OpenSSL's headers are present
    extension = [
        n for n in names if n.startswith("watershed/orc_crypto/masking/_sha256") and n.endswith(".so")
    ]
    fallback = "watershed/orc_crypto/masking/_sha256_fallback.py"
    assert fallback in names and len(extension) <= 1
    # the web UI: the page, its code and the vendored npm libraries the set-up copied
    web = Path(__file__).resolve().parent.parent / "api" / "web" / "static"
    shipped = {
        n.removeprefix("watershed/api/web/static/")
        for n in names
        if n.startswith("watershed/api/web/static/")
    }
    expected = {
        str(p.relative_to(web))
        for p in web.rglob("*")
        if p.is_file() and p.suffix in (".html", ".js", ".css")
    }
    assert "index.html" in shipped and any(n.startswith("vendor/") for n in shipped)
    assert expected <= shipped, expected - shipped


@pytest.mark.timeout(300)
def test_the_installed_wheel_imports_beside_another_projects_api_and_graph(venv, other_project):
    python = venv / "bin" / "python"
    seen = json.loads(run([python, "-c", PROBE], cwd=other_project))
    assert seen["api"] == seen["api_after"] == "the other project's api"
    assert seen["graph"] == "the other project's graph"
    # the wheel's copy, not the editable install's (the repo)
    for module in ("watershed.graph", "watershed.api.cli"):
        assert Path(seen[module]).is_relative_to(venv), (module, seen[module])

    printed = run([venv / "bin" / "watershed", "--version"], cwd=other_project)
    assert printed.strip() == f"watershed {version(DISTRIBUTION)}"


@pytest.mark.timeout(300)
def test_the_mask_is_the_same_with_and_without_the_c_extension(venv, other_project, tmp_path):
    python = venv / "bin" / "python"
    site = Path(
        run([python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"], cwd=tmp_path).strip()
    )
    extensions = list((site / "watershed/orc_crypto/masking").glob("_sha256*.so"))
    if not extensions:
        pytest.skip(
            "the wheel was built without the C extension (no compiler here): only the fallback to test"
        )
    with_c = run([python, "-c", MASK], cwd=other_project).splitlines()
    assert with_c[-1] == "watershed.orc_crypto.masking._sha256"
    hidden = tmp_path / extensions[0].name
    shutil.move(extensions[0], hidden)  # an install whose build found no compiler
    try:
        without = run([python, "-c", MASK], cwd=other_project).splitlines()
    finally:
        shutil.move(hidden, extensions[0])
    assert without[-1] == "watershed.orc_crypto.masking._sha256_fallback"
    assert without[:-1] == with_c[:-1] and "None" in with_c[0]
