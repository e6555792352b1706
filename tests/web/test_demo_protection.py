"""`watershed demo` shows protection end to end: a demo keystore served by the embedded KMS (which
`services down` stops), one ODS table's sensitive columns encrypted in its ORC files and shown so on
its table page with its location, and the web UI's "Apply protection" working on another table
with the demo's KMS. The demo used to set up no keystore: the apply answered 409 "no KMS to
encrypt with"."""

from __future__ import annotations

import json
import stat

import httpx
from typer.testing import CliRunner

from bench.ui_render import login
from tests.web.conftest import strict_page
from watershed.api.cli import app
from watershed.graph.server import free_port
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.read import read_orc


def encrypted_columns(path) -> set[str]:
    """Top-level column names an ORC file holds encrypted (from its tail's encryption variants)."""
    tail = read_tail(str(path), path.read_bytes())
    if not tail.is_encrypted:
        return set()
    fields = dict(zip(tail.footer.types[0].subtypes, tail.footer.types[0].fieldNames, strict=False))
    return {fields[v.root] for v in tail.footer.encryption.variants if v.root in fields}


def orc_files(location: str) -> list:
    from pathlib import Path

    return sorted(p for p in Path(location).rglob("*.orc") if not p.name.startswith("."))


def test_demo_protects_a_table_and_the_ui_applies_with_its_kms(spark, browser, tmp_path, monkeypatch):
    data = tmp_path / "var"
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(data))
    for name in ("FALKORDB", "REDIS", "KMS"):
        monkeypatch.setenv(f"WATERSHED_{name}_PORT", str(free_port()))
    api_port = free_port()
    monkeypatch.setenv("WATERSHED_API_PORT", str(api_port))
    for name in (
        "WATERSHED_CELERY_BROKER",
        "WATERSHED_KEYSTORE_PATH",
        "WATERSHED_KEYSTORE_PASSPHRASE",
        "WATERSHED_KEYSTORE_PASSPHRASE_FILE",
        "WATERSHED_PROTECT_KMS",
        "WATERSHED_PROTECT_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    try:
        result = runner.invoke(app, ["demo", "--tasks", "20"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        token = next(line for line in result.output.splitlines() if line.startswith("wst_"))
        auth = {"Authorization": f"Bearer {token}"}
        api = f"http://127.0.0.1:{api_port}/api/v1"

        # the keystore and the demo's passphrase stay in the data dir, owner-only, never printed
        kms_dir = data / "kms"
        for secret in ("keystore.json", "demo.passphrase"):
            assert stat.S_IMODE((kms_dir / secret).stat().st_mode) == 0o600, secret
        assert (kms_dir / "demo.passphrase").read_text() not in result.output

        # one ODS table protected by the demo: its files hold the sensitive columns encrypted
        line = next(x for x in result.output.splitlines() if x.startswith("protection run "))
        demo_table = line.split(" on ", 1)[1].split(":", 1)[0]
        assert demo_table.startswith("ods.")
        view = httpx.get(f"{api}/tables/{demo_table}/protection", headers=auth).json()
        encrypted = set(view["protection"]["encrypted_columns"])
        assert encrypted and not view["protection"]["pending_columns"]
        location = httpx.get(f"{api}/tables/{demo_table}", headers=auth).json()["location"]
        files = orc_files(location)
        assert files and all(encrypted_columns(f) == encrypted for f in files)
        # the demo's KMS decrypts them; without a key a reader sees the mask (nullify)
        kms_uri = line.rsplit(" ", 1)[1]
        with KmsClient(kms_uri, token_file=kms_dir / "kms.token") as client:
            for column in encrypted:
                clear = read_orc(files[0], columns=[column], provider=client).column(0).to_pylist()
                masked = read_orc(files[0], columns=[column]).column(0).to_pylist()
                assert any(clear) and not any(masked), column

        # the home page's coverage snapshot is computed by the demo and printed as the API has it
        # (its files are encrypted, but with no Spark catalog the table's options are not set, so
        # coverage does not yet count its columns protected: a new file would be written clear)
        totals = httpx.get(f"{api}/coverage", headers=auth).json()["snapshot"]["totals"]
        assert totals["sensitive"] > 0
        assert (
            f"coverage: {totals['sensitive']} sensitive columns, {totals['protected']} protected"
            in result.output
        )

        # in the UI: the table page shows the location and the columns encrypted; an admin's
        # "Apply protection" of another table with files encrypts it with the demo's KMS
        # (the tables the generator wrote files for are those the catalog gives a location)
        catalog = json.loads((data / "demo" / "warehouse-20" / "catalog.json").read_text())["tables"]
        with_files = sorted(t for t, entry in catalog.items() if entry.get("location") and t != demo_table)
        other = next(
            t
            for t in with_files
            if httpx.get(f"{api}/tables/{t}/protection", headers=auth).json()["protection"]["pending_columns"]
        )
        base = f"http://127.0.0.1:{api_port}"
        with strict_page(browser, base) as page:
            assert login(page, base, token)["role"] == "admin"
            page.goto(f"{base}/#/table/{demo_table}")
            page.wait_for_selector("[data-testid=protection-columns]")
            assert page.text_content("[data-testid=table-location]") == location
            for column in encrypted:
                assert page.get_attribute(f"tr[data-column={column}]", "data-state") == "encrypted"
            page.goto(f"{base}/#/table/{other}")
            page.wait_for_selector("tr[data-state=pending]")
            page.click("[data-testid=apply-protection]")
            page.wait_for_selector("[data-testid=protect-run][data-status=done]", timeout=120_000)
            page.wait_for_selector("tr[data-state=encrypted]")
            assert page.query_selector("tr[data-state=pending]") is None
        after = httpx.get(f"{api}/tables/{other}/protection", headers=auth).json()["protection"]
        assert after["encrypted_columns"] and not after["pending_columns"]
        other_files = orc_files(catalog[other]["location"])
        assert other_files and all(
            encrypted_columns(f) == set(after["encrypted_columns"]) for f in other_files
        )

        # re-running the demo's protection steps converges: no new key, no file rewritten
        from watershed.api.cli.demo import demo_keystore, protection_demo
        from watershed.graph.backends import open_answering
        from watershed.graph.settings import GraphSettings
        from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
        from watershed.orc_crypto.kms.service import KmsService

        before = [f.read_bytes() for f in files]
        keystore = (kms_dir / "keystore.json").read_bytes()
        env = demo_keystore()
        passphrase = (kms_dir / "demo.passphrase").read_text()
        assert EmbeddedKeystore.open(kms_dir / "keystore.json", passphrase).names() == ["pii"]
        assert (kms_dir / "keystore.json").read_bytes() == keystore
        assert env == {"WATERSHED_KEYSTORE_PASSPHRASE_FILE": str(kms_dir / "demo.passphrase")}
        store = open_answering(GraphSettings())
        try:
            again = protection_demo(store, KmsService.from_settings(data))
        finally:
            store.close()
        assert again is not None and again.files_done == 0 and not again.skipped
        assert [f.read_bytes() for f in files] == before
    finally:
        down = runner.invoke(app, ["services", "down"])
    assert "kms" in down.output.split("stopped:", 1)[1]
    from watershed.orc_crypto.kms.service import KmsService

    assert KmsService.from_settings(data).pid() is None
