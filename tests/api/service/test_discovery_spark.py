"""Discovery on Spark: the same labelled files (Parquet, ORC, an encrypted ORC) sampled in process
and on the local Spark session give the same proposals; files are listed and tails read through
Hadoop's FileSystem by byte ranges; an encrypted column is never projected, though the session has
a key provider; `watershed discover --master` sends the tables whose files reach
discovery_spark_min_bytes to Spark."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from tests.discovery.warehouse import EXPECTED, labelled_table, write_orc, write_parquet
from watershed.api.service import discovery
from watershed.discovery.sampling import LocationError, ParquetReader, SampleLimits, data_files, sample_files
from watershed.discovery.settings import DiscoverySettings
from watershed.discovery.spark_sampling import HadoopFiles, sample_on_spark
from watershed.graph.catalog import Catalog
from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
from watershed.propagation.policy import default_policy

ROWS = 120
POLICY = default_policy()
#: every table is "large": with a session or master given, it goes to Spark
ON_SPARK = DiscoverySettings(discovery_spark_min_bytes=1)


@pytest.fixture
def files(tmp_path):
    """ods/ext (Parquet, two files), ods/ext_orc (ORC), ods/secure (ORC, c17 and k3 encrypted)."""
    table = labelled_table(rows=ROWS)
    write_parquet(tmp_path / "ods" / "ext", table)
    plain = write_orc(tmp_path / "ods" / "ext_orc", table)
    secure = tmp_path / "ods" / "secure"
    secure.mkdir()
    encrypt_file(
        plain,
        secure / "000000_0",
        InMemoryKeyProvider({"pii": b"p" * 32}),
        parse_encrypt_option("pii:c17,k3"),
        parse_mask_option("nullify:c17,k3"),
    )
    return tmp_path


@pytest.fixture
def warehouse(graph_store, files):
    columns = dict.fromkeys(labelled_table(rows=1).column_names, "string")
    graph_store.upsert_catalog(
        Catalog.from_dict(
            {
                "tables": {
                    "ods.ext": {"columns": columns, "location": str(files / "ods" / "ext")},
                    "ods.ext_orc": {"columns": columns, "location": f"file://{files}/ods/ext_orc"},
                    "ods.secure": {"columns": columns, "location": str(files / "ods" / "secure")},
                }
            }
        )
    )
    return files


def _by_column(report) -> dict[str, tuple]:
    return {
        p.column: (p.tags, p.confidence, p.sampled, p.evidence.detectors, p.content) for p in report.proposals
    }


def test_hadoop_lists_the_files_and_reads_their_tails_by_range_as_the_local_reader_does(spark, files):
    hadoop = HadoopFiles(spark)
    for name in ("ext", "ext_orc", "secure"):
        local = data_files(files / "ods" / name)
        remote = hadoop.data_files(f"file://{files}/ods/{name}")
        assert [(os.path.basename(f.path), f.size, f.format) for f in remote] == [
            (os.path.basename(f.path), f.size, f.format) for f in local
        ]
        for here, there in zip(local, remote, strict=True):
            reader = discovery.readers()[here.format]
            assert reader.layout(there.path, hadoop.open(there)) == reader.layout(here.path)
    (secure,) = hadoop.data_files(f"file://{files}/ods/secure")
    assert discovery.OrcFiles().layout(secure.path, hadoop.open(secure)).protected == {"c17", "k3"}
    missing = f"file://{files}/ods/none"
    with pytest.raises(LocationError, match="no such file"):
        hadoop.data_files(missing)


def test_spark_samples_give_the_proposals_the_local_reader_gives(graph_store, warehouse, spark):
    tables = ["ods.ext", "ods.ext_orc", "ods.secure"]
    local = discovery.discover(graph_store, POLICY, ON_SPARK, tables=tables)
    on_spark = discovery.discover(graph_store, POLICY, ON_SPARK, tables=tables, spark=spark, force=True)
    assert [t.sampled_on for t in local.tables] == ["local"] * 3
    assert [t.sampled_on for t in on_spark.tables] == ["spark"] * 3
    for here, there in zip(local.tables, on_spark.tables, strict=True):
        assert (there.status, there.rows, there.errors) == ("sampled", ROWS, [])
        assert (there.files, there.values, there.protected) == (here.files, here.values, here.protected)
        assert _by_column(there) == _by_column(here)
    by_table = {t.table: t for t in on_spark.tables}
    assert {p.column.rsplit(".", 1)[1]: p.tags["pii_type"] for p in by_table["ods.ext"].proposals} == EXPECTED
    # encrypted under a key the session's KMS does not hold: read, the job would have failed
    assert by_table["ods.secure"].protected == ["c17", "k3"]
    assert {p.column for p in by_table["ods.secure"].proposals} == {
        f"ods.secure.{c}" for c in EXPECTED if c not in ("c17", "k3")
    }


def test_the_spark_sample_is_bounded_and_never_projects_an_encrypted_column(spark, files):
    hadoop = HadoopFiles(spark)
    secure = hadoop.data_files(f"file://{files}/ods/secure")
    orc = discovery.OrcFiles()
    sample = sample_on_spark(
        spark, secure, lambda f: orc.layout(f.path, hadoop.open(f)), SampleLimits(rows=50)
    )
    assert (sample.rows, sample.stopped_by, sample.errors) == (50, "rows", [])
    assert sample.protected == {"c17", "k3"}
    assert not {"c17", "k3"} & set(sample.values)
    parquet = data_files(files / "ods" / "ext")
    plain = sample_on_spark(spark, parquet, lambda f: ParquetReader().layout(f.path), SampleLimits())
    assert plain.rows == ROWS and plain.skipped == {"amount_num"} and "amount_num" not in plain.values
    table = labelled_table(rows=ROWS)
    assert sorted(plain.values["c17"]) == sorted(v for v in table.column("c17").to_pylist() if v)


def test_discover_master_sends_large_tables_to_spark(graph_store, warehouse, spark, monkeypatch):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    from watershed.api.cli import app

    runner = CliRunner()
    size = sum(f.size for f in data_files(warehouse / "ods" / "ext"))
    # below the size: read here even with a master; at it: on Spark (the master's session, which
    # in this process is the tests' own local[2] one)
    monkeypatch.setenv("WATERSHED_DISCOVERY_SPARK_MIN_BYTES", str(size + 1))
    small = runner.invoke(app, ["discover", "--table", "ods.ext", "--master", "local[2]", "--format", "json"])
    assert small.exit_code == 0, small.output
    assert discovery.DiscoveryRun.model_validate_json(small.stdout).tables[0].sampled_on == "local"
    monkeypatch.setenv("WATERSHED_DISCOVERY_SPARK_MIN_BYTES", str(size))
    args = ["discover", "--table", "ods.ext", "--force", "--format", "json"]
    unrouted = runner.invoke(app, args)
    assert discovery.DiscoveryRun.model_validate_json(unrouted.stdout).tables[0].sampled_on == "local"
    routed = runner.invoke(app, [*args, "--master", "local[2]"])
    assert routed.exit_code == 0, routed.output
    run = discovery.DiscoveryRun.model_validate_json(routed.stdout)
    assert (run.tables[0].sampled_on, run.tables[0].rows, run.proposed) == ("spark", ROWS, len(EXPECTED))


def test_a_partitioned_orc_table_is_read_in_one_job_of_the_files_its_rows_need(spark, tmp_path):
    table = labelled_table(rows=ROWS)
    for day in range(4):
        write_orc(tmp_path / "t" / f"dt=2024-01-0{day + 1}", table.slice(day * 30, 30))
    files = data_files(tmp_path / "t")
    orc = discovery.OrcFiles()
    whole = sample_on_spark(spark, files, lambda f: orc.layout(f.path), SampleLimits())
    assert (whole.files, whole.rows, whole.errors) == (4, ROWS, [])
    here = sample_files(files, discovery.readers(), SampleLimits())
    assert {c: sorted(v) for c, v in whole.values.items()} == {c: sorted(v) for c, v in here.values.items()}
    # 45 rows: the first two files' footers count 60, the other two tails are not read
    some = sample_on_spark(spark, files, lambda f: orc.layout(f.path), SampleLimits(rows=45))
    assert (some.files, some.rows, some.stopped_by, some.errors) == (2, 45, "rows", [])
