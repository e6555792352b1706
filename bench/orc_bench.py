"""ORC encryption benchmark: orc_crypto vs raw AES-CTR vs Spark rewriting the same file, in one run.

    .venv/bin/python bench/orc_bench.py [--size-mb 1024]

Generates (once, cached under var/bench/) a deterministic snappy ORC file of
about `--size-mb` MB with pyarrow, starts the embedded KMS on a free port, and
encrypts the two string columns `ssn` and `email`:

- orc_crypto: `encrypt_file` (read, encrypt, write, read back and verify with
  `--verify`, default auto), through the KMS;
- raw AES-CTR over the file's bytes with `cryptography`, alone and as
  read + AES-CTR + write of the same bytes, written as orc_crypto writes
  (temp file, fsync, rename): the floor a rewriter can reach;
- Spark (local[2], after one untimed warm-up) reading the file and writing it
  with `orc.encrypt` and `orc.mask` through the same KMS.

With nullify masks, with redact masks, and with a sha256 mask on `ssn`; each
timing is the best of `--repeat` runs, each after `sync`. Prints MB/s (of the
source file's size), the ratios the targets are stated in, and whether each
target is met:

- nullify and redact: orc_crypto >= 3x Spark, and >= 0.5x read + AES-CTR + write;
- sha256: orc_crypto >= 1.5x Spark.

ORC Java 2.3 (Spark 4.3) fails to write redact on string columns (a NullPointerException
in its mask); the run records Spark's error and holds orc_crypto's redact rewrite to Spark's
nullify rewrite of the same file instead.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

COLUMNS = "pii:ssn,email"
ROWS_PER_BATCH = 1_000_000


def generate(path: Path, size_mb: int, seed: int = 7) -> Path:
    """A snappy ORC file of about `size_mb` MB: ids, two PII strings, a hex payload, amounts (cached)."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.orc as orc

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    rng = random.Random(seed)
    width = 48  # hex characters of random payload per row: barely compressible, like real blobs
    offsets = pa.array(range(0, (ROWS_PER_BATCH + 1) * width, width), type=pa.int32()).buffers()[1]
    writer = orc.ORCWriter(str(partial), compression="snappy", stripe_size=64 * 1024 * 1024)
    start = 0
    try:
        # The writer flushes a stripe at a time, so the file's size trails by at most one stripe.
        while not partial.exists() or partial.stat().st_size < size_mb * 1_000_000:
            ids = pa.array(range(start, start + ROWS_PER_BATCH), type=pa.int64())
            text_ids = pc.cast(ids, pa.string())
            hex_text = rng.randbytes(ROWS_PER_BATCH * width // 2).hex().encode()
            payload = pa.StringArray.from_buffers(ROWS_PER_BATCH, offsets, pa.py_buffer(hex_text))
            writer.write(
                pa.table(
                    {
                        "id": ids,
                        "ssn": pc.utf8_lpad(text_ids, 9, "0"),
                        "email": pc.binary_join_element_wise("user", text_ids, "@example.com", ""),
                        "payload": payload,
                        "amount": pc.multiply(pc.random(ROWS_PER_BATCH, initializer=seed + start), 1000.0),
                    }
                )
            )
            start += ROWS_PER_BATCH
    finally:
        writer.close()
    partial.rename(path)
    return path


def mb_per_s(size: int, seconds: float) -> float:
    return round(size / 1_000_000 / seconds, 1)


def start_kms(directory: Path):
    """The embedded KMS with one 256-bit key `pii` the OS user may use, in its default token mode:
    the OS user's delegation token goes to `directory/kms.token`, which HADOOP_TOKEN_FILE_LOCATION
    names for our client and Spark's."""
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
    from watershed.orc_crypto.keys.tokens import load_or_create_secret
    from watershed.orc_crypto.kms.acl import AclConfig, KeyAcl, KeyAcls
    from watershed.orc_crypto.kms.server import KmsServer, KmsSettings, free_port, prepare_auth

    keystore = EmbeddedKeystore.create(directory / "keystore.json", "orc-bench", scrypt_n=2**10)
    keystore.create_key("pii", bits=256, description="orc bench key")
    user = getpass.getuser()
    acl = AclConfig(
        listers=[user], keys={"pii": KeyAcl(metadata=[user], decrypt_eek=[user], generate_eek=[user])}
    )
    settings = KmsSettings(kms_secret_file=directory / "kms.secret", kms_token_file=directory / "kms.token")
    load_or_create_secret(settings.kms_secret_file)
    port = free_port()
    auth = prepare_auth(settings, "127.0.0.1", port, owner=user)
    os.environ["HADOOP_TOKEN_FILE_LOCATION"] = str(settings.kms_token_file)
    server = KmsServer(keystore, KeyAcls(acl), port=port, audit_path=directory / "audit.log", auth=auth)
    return server.start()


def _first_cause(exc: Exception) -> str:
    """The innermost Java exception line of a Spark failure, or the Python one."""
    text = str(exc)
    causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
    return (causes[-1] if causes else text.splitlines()[0])[:300]


def targets(result: dict) -> list[str]:
    """The issue's targets, each as a line saying met or MISSED with the measured ratio."""
    lines = []
    runs = result["runs"]
    redact, nullify = runs.get("redact", {}), runs.get("nullify", {})
    if "spark_error" in redact and "spark_mb_s" in nullify and "orc_crypto_mb_s" in redact:
        # Spark cannot write redact on strings; its nullify rewrite of the same columns is the
        # cheapest rewrite it can do, so that is the baseline redact is held to.
        redact["orc_crypto_vs_spark_nullify"] = round(redact["orc_crypto_mb_s"] / nullify["spark_mb_s"], 2)
        verdict = "met" if redact["orc_crypto_vs_spark_nullify"] >= 3.0 else "MISSED"
        lines.append(
            f"redact: Spark failed ({redact['spark_error']}); orc_crypto_vs_spark_nullify = "
            f"{redact['orc_crypto_vs_spark_nullify']} (target >= 3.0): {verdict}"
        )
    for name, run in runs.items():
        wanted = [("orc_crypto_vs_spark", 1.5 if name == "sha256" else 3.0)]
        if name != "sha256":
            wanted.append(("orc_crypto_vs_read_aes_write", 0.5))
        for key, floor in wanted:
            if key in run:
                verdict = "met" if run[key] >= floor else "MISSED"
                lines.append(f"{name}: {key} = {run[key]} (target >= {floor}): {verdict}")
    return lines


def timed(fn, repeat: int = 1) -> float:
    """Best of `repeat` runs, each after the disk has written back what came before."""
    best = float("inf")
    for _ in range(repeat):
        os.sync()
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=1024, help="size of the generated file (default 1024)")
    parser.add_argument("--cache", type=Path, default=REPO / "var" / "bench", help="where the file is kept")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "orc_bench.json")
    parser.add_argument("--skip-spark", action="store_true", help="leave Spark's rewrite out")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many runs of each (default 2)")
    parser.add_argument(
        "--verify",
        choices=("auto", "fast", "full"),
        default="auto",
        help="how orc_crypto checks what it wrote (default auto: fast for this snappy file)",
    )
    args = parser.parse_args()

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
    from watershed.orc_crypto.errors import UnsupportedOrcError
    from watershed.orc_crypto.files import write_atomically
    from watershed.orc_crypto.keys.kms_client import KmsClient

    began = time.perf_counter()
    source = generate(args.cache / f"orc_bench_{args.size_mb}mb.snappy.orc", args.size_mb)
    size = source.stat().st_size
    print(f"source: {source} ({size / 1e6:.0f} MB, ready in {time.perf_counter() - began:.0f} s)", flush=True)
    work = Path(tempfile.mkdtemp(prefix="watershed-orc-bench-", dir=args.cache))
    kms = start_kms(work)
    result: dict = {
        "source_mb": round(size / 1e6, 1),
        "columns": COLUMNS,
        "repeat": args.repeat,
        "verify": args.verify,
        "runs": {},
    }
    try:
        # Raw AES-CTR over the same bytes, alone and as read + encrypt + write.
        def aes_only(data: bytes = source.read_bytes()) -> bytes:
            encryptor = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16))).encryptor()
            return encryptor.update(data) + encryptor.finalize()

        aes_seconds = timed(aes_only, args.repeat)
        del aes_only  # drops the file's bytes held as its default

        def read_aes_write() -> None:
            payload = source.read_bytes()
            encryptor = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16))).encryptor()
            # written the way orc_crypto writes: temp file, fsync, rename
            write_atomically(work / "aes.bin", [encryptor.update(payload), encryptor.finalize()])

        floor_seconds = timed(read_aes_write, args.repeat)
        (work / "aes.bin").unlink()
        result["aes_ctr_mb_s"] = mb_per_s(size, aes_seconds)
        result["read_aes_write_mb_s"] = mb_per_s(size, floor_seconds)
        print(
            f"AES-CTR alone {result['aes_ctr_mb_s']} MB/s; read + AES-CTR + write {result['read_aes_write_mb_s']} MB/s",
            flush=True,
        )

        mask_sets = {
            "nullify": "nullify:ssn,email",
            "redact": "redact:ssn,email",
            "sha256": "sha256:ssn;nullify:email",
        }
        for name, masks in mask_sets.items():
            run: dict = {"masks": masks}
            target = work / f"orc_crypto_{name}.orc"
            try:
                with KmsClient(kms.provider_path) as client:
                    seconds = timed(
                        lambda t=target, m=masks, c=client: encrypt_file(
                            source,
                            t,
                            c,
                            parse_encrypt_option(COLUMNS),
                            parse_mask_option(m),
                            verify=args.verify,
                        ),
                        args.repeat,
                    )
                run["orc_crypto_mb_s"] = mb_per_s(size, seconds)
                run["orc_crypto_vs_read_aes_write"] = round(floor_seconds / seconds, 3)
                target.unlink()
            except UnsupportedOrcError as exc:
                run["orc_crypto_unsupported"] = str(exc)
            result["runs"][name] = run
            print(name, json.dumps(run), flush=True)

        # Spark last, so its JVM and its own writes do not run while orc_crypto is timed.
        spark = None
        if not args.skip_spark:
            from pyspark.sql import SparkSession

            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            spark = (
                SparkSession.builder.master("local[2]")
                .appName("orc-bench")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.memory", "4g")
                .config("spark.hadoop.hadoop.security.key.provider.path", kms.provider_path)
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            # One untimed rewrite first, so the JVM's warm-up is not charged to the first timed run.
            spark.read.orc(str(source)).limit(100_000).write.option("orc.encrypt", COLUMNS).option(
                "orc.key.provider", "hadoop"
            ).mode("overwrite").orc(str(work / "warmup"))
            for name, masks in mask_sets.items():
                run = result["runs"][name]
                out = work / f"spark_{name}"

                def spark_rewrite(o=out, m=masks) -> None:
                    (
                        spark.read.orc(str(source))
                        .write.option("orc.compress", "SNAPPY")
                        .option("orc.key.provider", "hadoop")
                        .option("orc.encrypt", COLUMNS)
                        .option("orc.mask", m)
                        .mode("overwrite")
                        .orc(str(o))
                    )

                try:
                    seconds = timed(spark_rewrite, args.repeat)
                except Exception as exc:  # py4j's error: ORC Java fails on some masks (module docstring)
                    run["spark_error"] = _first_cause(exc)
                    shutil.rmtree(out, ignore_errors=True)
                    print(name, json.dumps(run), flush=True)
                    continue
                shutil.rmtree(out, ignore_errors=True)
                run["spark_mb_s"] = mb_per_s(size, seconds)
                if "orc_crypto_mb_s" in run:
                    run["orc_crypto_vs_spark"] = round(run["orc_crypto_mb_s"] / run["spark_mb_s"], 2)
                print(name, json.dumps(run), flush=True)
        if spark is not None:
            spark.stop()
        result["targets"] = targets(result)
        for line in result["targets"]:
            print(line, flush=True)
    finally:
        kms.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
