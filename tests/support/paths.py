"""Where the repository is, for tests that start a process in it or read a file of it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
