"""Installs tests/support/server_guard.py in a Python child of the tests while WATERSHED_TESTS_NO_SERVERS
is set (the test process put this directory on PYTHONPATH); loaded by file, as the child may not
have the repository on its path."""

import importlib.util
import os
from pathlib import Path

if os.environ.get("WATERSHED_TESTS_NO_SERVERS"):
    _spec = importlib.util.spec_from_file_location(
        "watershed_tests_server_guard", Path(__file__).resolve().parents[1] / "server_guard.py"
    )
    _guard = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_guard)
    _guard.install()
