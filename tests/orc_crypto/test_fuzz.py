"""Mutated ORC files give OrcCryptoError (or decode), never another exception or a hang.

Duration: WATERSHED_ORC_FUZZ_SECONDS, else 60 s when CI=true, else 20 s.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import decrypt_bytes
from watershed.orc_crypto.encrypt import encrypt_bytes
from watershed.orc_crypto.errors import OrcCryptoError
from watershed.orc_crypto.keys.jceks import JceksKeystore
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

DATA = Path(__file__).parent / "data"
CI = os.environ.get("CI", "").lower() == "true"
SECONDS = float(os.environ.get("WATERSHED_ORC_FUZZ_SECONDS", "60" if CI else "20"))
#: sample1.orc's own master key (apache/orc's sample keystore), so its mutants are decrypted past
#: the key, as the other seeds are encrypted with it
PROVIDER = InMemoryKeyProvider(
    {"pii": JceksKeystore(DATA / "kms.keystore", "ORC_KEY").get("pii").versions[0]}
)


def _seeds(tmp: Path) -> list[bytes]:
    plain = tmp / "plain.orc"
    table = pa.table({"id": list(range(500)), "s": [f"v{i}" for i in range(500)]})
    orc.write_table(table, str(plain), compression="zlib", stripe_size=2048)
    data = plain.read_bytes()
    encrypted = encrypt_bytes("seed", data, PROVIDER, {"pii": ["s"]})
    return [(DATA / "sample1.orc").read_bytes(), data, encrypted]


def _exercise(data: bytes) -> str:
    """`read` when the file decodes (and encrypts or decrypts), `rejected` when it is an
    OrcCryptoError naming the file; anything else raises."""
    try:
        tail = read_tail("fuzz.orc", data)
        for index in range(len(tail.footer.stripes)):
            stream_places(tail, index, read_stripe_footer(tail, data, index))
        if tail.is_encrypted:
            decrypt_bytes("fuzz.orc", data, PROVIDER)
        else:
            encrypt_bytes("fuzz.orc", data, PROVIDER, {"pii": ["1"]})
    except OrcCryptoError as exc:
        assert "fuzz.orc" in str(exc)
        return "rejected"
    return "read"


def test_fuzz_mutations(tmp_path):
    seeds = _seeds(tmp_path)
    deadline = time.monotonic() + SECONDS
    outcomes: Counter[str] = Counter()

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(
        seed=st.sampled_from(range(len(seeds))),
        edits=st.lists(
            st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8
        ),
        cut=st.one_of(st.none(), st.floats(0, 1)),
        tail_focus=st.booleans(),
    )
    def run(seed, edits, cut, tail_focus):
        if time.monotonic() > deadline:
            return
        data = bytearray(seeds[seed])
        for where, value in edits:
            # Bias half the edits into the last 600 bytes, where the metadata lives.
            span = min(len(data), 600) if tail_focus else len(data)
            data[len(data) - span + int(where * span)] = value
        if cut is not None:
            data = data[: int(cut * len(data))]
        started = time.monotonic()
        outcomes[_exercise(bytes(data))] += 1
        assert time.monotonic() - started < 5, "a single file took too long"

    while time.monotonic() < deadline:  # hypothesis has no time budget: run bounded batches until it is spent
        run()
    # The mutations reached both ends of the code: files the reader still takes (and encrypts or
    # decrypts whole) and files it refuses naming them. Only one outcome means the mutations
    # stopped at the first check, or that every file is refused: either way nothing was shown.
    assert outcomes["read"] > 0 and outcomes["rejected"] > 0, dict(outcomes)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_seeds_are_valid(tmp_path, seed):
    assert _exercise(_seeds(tmp_path)[seed]) == "read"


def test_a_type_tree_with_a_cycle_is_an_error(tmp_path):
    """Found by the fuzzer: a child id pointing back up the tree made the subtree walk run forever."""
    from watershed.orc_crypto.codec import compression
    from watershed.orc_crypto.proto import orc_proto_pb2 as pb

    data = _seeds(tmp_path)[1]
    tail = read_tail("seed.orc", data)
    footer = pb.Footer()
    footer.CopyFrom(tail.footer)
    footer.types[0].subtypes.append(0)
    footer.types[0].fieldNames.append("loop")
    packed = compression.compress(tail.codec, footer.SerializeToString(), tail.block_size)
    postscript = pb.PostScript()
    postscript.CopyFrom(tail.postscript)
    postscript.footerLength = len(packed)
    ps = postscript.SerializeToString()
    footer_start = len(data) - 1 - len(tail.postscript.SerializeToString()) - tail.postscript.footerLength
    bad = data[:footer_start] + packed + ps + bytes([len(ps)])
    with pytest.raises(OrcCryptoError, match="outside the type tree"):
        encrypt_bytes("bad.orc", bad, PROVIDER, {"pii": ["1"]})
