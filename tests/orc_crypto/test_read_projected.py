"""Projected, stripe-selective reads of encrypted ORC files decrypt only the ranges they need."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.ciphers import aes_ctr, stream_iv
from watershed.orc_crypto.codec.kinds import INDEX_KINDS
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.encrypt import encrypt_file
from watershed.orc_crypto.errors import UnsupportedOrcError
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
from watershed.orc_crypto.read import ReadStats, parse_stripes, read_orc, read_stream_range

ROWS = 40_000


def _provider() -> InMemoryKeyProvider:
    return InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16})


def _plain_table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "ssn": [f"{100000000 + i * 7919 % 899999999:09d}" for i in range(ROWS)],
            "email": [None if i % 11 == 3 else f"user{i}@example.com" for i in range(ROWS)],
            "salary": pa.array([1000 + (i * 37) % 90000 for i in range(ROWS)], pa.int32()),
            "note": [f"row {i} " + "x" * (i % 17) for i in range(ROWS)],
        }
    )


@pytest.fixture(scope="module")
def many_stripes(tmp_path_factory):
    """A zlib file of many small stripes with ssn, email (key pii) and salary (key fin) encrypted."""
    directory = tmp_path_factory.mktemp("projected")
    plain = directory / "plain.orc"
    table = _plain_table()
    orc.write_table(table, plain, stripe_size=64 * 1024, compression="zlib")
    target = directory / "enc.orc"
    encrypt_file(
        plain,
        target,
        _provider(),
        {"pii": ["ssn", "email"], "fin": ["salary"]},
        {"email": "sha256"},
    )
    return table, target


def _variant_data_lengths(path, stripe: int, column: int) -> int:
    """Bytes of the data-area streams of `column`'s encrypted copy in `stripe`, from the tail."""
    data = path.read_bytes()
    tail = read_tail(str(path), data)
    footer = read_stripe_footer(tail, data, stripe)
    return sum(
        p.length
        for p in stream_places(tail, stripe, footer)
        if p.variant is not None and p.column == column and p.kind not in INDEX_KINDS
    )


def test_one_column_of_one_stripe_decrypts_only_its_streams(many_stripes):
    table, path = many_stripes
    tail = read_tail(str(path))
    assert len(tail.footer.stripes) >= 5
    stripe = 3
    first = sum(s.numberOfRows for s in tail.footer.stripes[:stripe])
    rows = tail.footer.stripes[stripe].numberOfRows
    stats = ReadStats()
    got = read_orc(path, ["ssn"], [stripe], _provider(), stats)
    assert got.column_names == ["ssn"]
    assert got.column("ssn").to_pylist() == table.column("ssn").to_pylist()[first : first + rows]
    ssn = list(tail.footer.types[0].fieldNames).index("ssn") + 1
    expected = _variant_data_lengths(path, stripe, ssn)
    assert expected > 0
    assert stats.bytes_decrypted == expected
    assert stats.bytes_read < tail.file_length / 4
    assert stats.masked_variants == []
    # The plain column next to it is read, never decrypted.
    stats = ReadStats()
    got = read_orc(path, ["id"], [stripe], _provider(), stats)
    assert got.column("id").to_pylist() == list(range(first, first + rows))
    assert stats.bytes_decrypted == 0


def test_several_columns_and_stripes(many_stripes):
    table, path = many_stripes
    tail = read_tail(str(path))
    starts = [0]
    for s in tail.footer.stripes:
        starts.append(starts[-1] + s.numberOfRows)
    chosen = [0, 2, 3]
    got = read_orc(path, ["salary", "email", "id"], chosen, _provider())
    assert got.column_names == ["salary", "email", "id"]
    ids = [i for s in chosen for i in range(starts[s], starts[s + 1])]
    assert got.column("id").to_pylist() == ids
    assert got.column("email").to_pylist() == [table.column("email")[i].as_py() for i in ids]
    assert got.column("salary").to_pylist() == [table.column("salary")[i].as_py() for i in ids]
    # The whole file through the projected reader equals the full decrypt.
    assert read_orc(path, provider=_provider()).equals(read_table(path, _provider()))


def test_without_a_key_the_masked_copy(many_stripes):
    table, path = many_stripes
    stats = ReadStats()
    got = read_orc(path, ["ssn", "email"], [1], None, stats)
    # Variants go by key name (fin: salary = 0; pii: ssn = 1, email = 2), as ORC Java orders them.
    assert stats.bytes_decrypted == 0 and stats.masked_variants == [1, 2]
    assert set(got.column("ssn").to_pylist()) == {None}
    expected_first = read_table(path).slice(read_tail(str(path)).footer.stripes[0].numberOfRows, got.num_rows)
    assert got.column("email").to_pylist() == expected_first.column("email").to_pylist()
    hashed = [v for v in got.column("email").to_pylist() if v is not None]
    assert hashed and all(len(v) == 64 and v == v.upper() for v in hashed)
    # A provider that lacks one key: that key's columns masked, the other's plaintext.
    only_fin = InMemoryKeyProvider({"fin": b"f" * 16})
    stats = ReadStats()
    got = read_orc(path, ["ssn", "salary"], [0], only_fin, stats)
    assert stats.masked_variants == [1]
    assert set(got.column("ssn").to_pylist()) == {None}
    rows = got.num_rows
    assert got.column("salary").to_pylist() == table.column("salary").to_pylist()[:rows]


def test_a_range_from_the_middle_of_a_stream(many_stripes):
    """A range decrypted from its own counter block equals the same bytes of the whole stream."""
    _, path = many_stripes
    data = path.read_bytes()
    tail = read_tail(str(path), data)
    stripe = 2
    footer = read_stripe_footer(tail, data, stripe)
    place = max(
        (p for p in stream_places(tail, stripe, footer) if p.variant is not None), key=lambda p: p.length
    )
    assert place.length > 100
    provider = _provider()
    key = provider.decrypt_local_key(
        tail.footer.encryption.key[tail.footer.encryption.variants[place.variant].key].keyName,
        0,
        tail.footer.encryption.variants[place.variant].encryptedKey,
    )
    whole = aes_ctr(
        key, stream_iv(place.column, place.kind, stripe + 1), data[place.offset : place.offset + place.length]
    )
    stats = ReadStats()
    start, length = 37, place.length - 60
    got = read_stream_range(path, stripe, place.column, place.kind, start, length, provider, stats)
    assert got == whole[start : start + length]
    assert stats.bytes_decrypted == length


def test_bad_selections_name_the_input(many_stripes):
    _, path = many_stripes
    with pytest.raises(UnsupportedOrcError, match="no top-level column 'nope'"):
        read_orc(path, ["nope"])
    with pytest.raises(UnsupportedOrcError, match="no stripe 999"):
        read_orc(path, ["id"], [999])
    assert parse_stripes("0,2-3, 5") == [0, 2, 3, 5]
    with pytest.raises(ValueError, match="'x'"):
        parse_stripes("1,x")


def test_spark_written_file(spark_encrypted_orc, kms_server):
    """Spark's file (3 stripes, keys pii and fin, a struct column): stripe 1's rows, by key."""
    from watershed.orc_crypto.keys.kms_client import KmsClient

    from .conftest import masked_row

    path = spark_encrypted_orc.files[0]
    tail = read_tail(str(path))
    rows = spark_encrypted_orc.rows
    first = tail.footer.stripes[0].numberOfRows
    count = tail.footer.stripes[1].numberOfRows
    with KmsClient(kms_server.provider_path) as client:
        stats = ReadStats()
        got = read_orc(path, ["address", "email", "id"], [1], client, stats)
    assert stats.masked_variants == [] and stats.bytes_decrypted > 0
    by_id = {r["id"]: r for r in rows}
    ids = got.column("id").to_pylist()
    assert len(ids) == count and ids == sorted(ids) and ids[0] == first
    assert got.to_pylist() == [{k: by_id[i][k] for k in ("address", "email", "id")} for i in ids]
    masked = read_orc(path, ["ssn", "email", "salary"], [1])
    assert masked.to_pylist() == [
        {k: masked_row(by_id[i])[k] for k in ("ssn", "email", "salary")} for i in ids
    ]


class _FailingKms:
    """A real HTTP server on a free loopback port that accepts the pseudo-auth handshake and
    answers every key operation with HTTP 500: a KMS that is up but failing."""

    def __enter__(self) -> str:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_OPTIONS(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = b'{"RemoteException": {"message": "keystore locked"}}'
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"kms://http@127.0.0.1:{self.server.server_address[1]}/kms"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_unreachable_kms_is_an_error_not_masked_data(many_stripes):
    from watershed.orc_crypto.errors import OrcKeyError
    from watershed.orc_crypto.keys.kms_client import KmsClient
    from watershed.orc_crypto.kms.server import free_port

    _table, path = many_stripes
    uri = f"kms://http@127.0.0.1:{free_port()}/kms"
    with KmsClient(uri, user="reader", timeout=2) as client, pytest.raises(OrcKeyError) as caught:
        read_orc(path, ["ssn"], [0], client)
    assert str(path) in str(caught.value) and "unreachable" in str(caught.value)


@pytest.mark.services  # no fixture: the test serves a failing KMS itself
def test_a_kms_answering_5xx_is_an_error_not_masked_data(many_stripes):
    from watershed.orc_crypto.errors import OrcKeyError
    from watershed.orc_crypto.keys.kms_client import KmsClient

    _table, path = many_stripes
    with (
        _FailingKms() as uri,
        KmsClient(uri, user="reader", timeout=5) as client,
        pytest.raises(OrcKeyError) as caught,
    ):
        read_orc(path, ["ssn", "salary"], [0], client)
    assert str(path) in str(caught.value) and "HTTP 500" in str(caught.value)
