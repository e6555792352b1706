"""The keystore shared by a running `watershed kms serve` and concurrent `watershed kms` writers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc

from tests.orc_crypto.conftest import CLI_PASSPHRASE_ENV
from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.encrypt import encrypt_file
from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.kms.server import free_port

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from watershed.api.cli import main; main()", "kms"]


def _serve(env: dict[str, str], tmp_path: Path, port: int) -> subprocess.Popen:
    command = [*CLI, "serve", "--port", str(port), "--audit-log", str(tmp_path / "audit.log")]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_for(client: KmsClient, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            client.key_names()
            return
        except Exception:
            if time.monotonic() > deadline or process.poll() is not None:
                raise
            time.sleep(0.2)


def _plain_orc(path: Path) -> None:
    table = pa.table({"id": pa.array(range(20), pa.int64()), "ssn": [f"{i:09d}" for i in range(20)]})
    orc.write_table(table, path)


def test_server_and_concurrent_cli_and_rest_writers_lose_no_key(kms_env, tmp_path):
    EmbeddedKeystore.create(
        tmp_path / "ks.json", CLI_PASSPHRASE_ENV["WATERSHED_KEYSTORE_PASSPHRASE"], scrypt_n=1024
    ).create_key("base")
    port = free_port()
    uri = f"kms://http@127.0.0.1:{port}/kms"
    server = _serve(kms_env, tmp_path, port)
    try:
        # The token file appears once the server runs; the client finds it via WATERSHED_KMS_TOKEN_FILE.
        deadline = time.monotonic() + 30
        while not (tmp_path / "kms.token").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        client = KmsClient(uri, timeout=30)
        _wait_for(client, server)
        cli_keys = [f"cli{i}" for i in range(4)]
        rest_keys = [f"rest{i}" for i in range(3)]
        cli = [subprocess.Popen([*CLI, "create-key", name], cwd=REPO, env=kms_env) for name in cli_keys]
        cli += [subprocess.Popen([*CLI, "roll", "base"], cwd=REPO, env=kms_env) for _ in range(2)]
        errors: list[BaseException] = []

        def rest(path: str, body: dict) -> None:
            # The raw REST calls (POST keys, POST key/NAME), as Hadoop's createKey/rollNewVersion send them.
            try:
                with KmsClient(uri, timeout=60) as own:
                    own._request("POST", path, json=body, what=f"POST {path}")
            except BaseException as exc:  # reported below
                errors.append(exc)

        create = {"cipher": "AES/CTR/NoPadding", "length": 256}
        threads = [threading.Thread(target=rest, args=("keys", {"name": n, **create})) for n in rest_keys]
        threads += [threading.Thread(target=rest, args=("key/base", {})) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [p.wait(timeout=120) for p in cli] == [0] * len(cli)
        assert errors == []

        expected = sorted(["base", *cli_keys, *rest_keys])
        on_disk = EmbeddedKeystore.open(
            tmp_path / "ks.json", CLI_PASSPHRASE_ENV["WATERSHED_KEYSTORE_PASSPHRASE"]
        )
        assert on_disk.names() == expected
        assert len(on_disk.get("base").versions) == 5  # 1 + 2 CLI rolls + 2 REST rolls
        assert len(set(on_disk.get("base").versions)) == 5
        assert client.key_names() == expected  # the server sees the CLI's keys
        assert client.key_info("base").version == 4

        # A file encrypted with every new key (via the keystore or via the KMS) decrypts through the server.
        source = tmp_path / "plain.orc"
        _plain_orc(source)
        plain = orc.read_table(source)
        for name in [*cli_keys, *rest_keys, "base"]:
            target = tmp_path / f"{name}.orc"
            provider = on_disk if name.startswith("cli") else client
            encrypt_file(source, target, provider, {name: ["ssn"]}, {"ssn": "nullify"})
            assert read_table(target, client).equals(plain), name
    finally:
        server.terminate()
        server.wait(timeout=10)
