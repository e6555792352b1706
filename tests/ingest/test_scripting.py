"""Scripting blocks, routine bodies and T-SQL batches: which statements come out, and where.

The lineage of these scripts is checked by the case files (scripting_blocks.yaml,
procedures.yaml, tsql_batches.yaml); here: every statement inside a block keeps its
own index and its real line in the task's text, an unparsable statement or body is
one error and the rest is still analysed, and T-SQL statements without semicolons
are cut where SQL Server cuts them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage

CASES = Path(__file__).parent / "lineage_cases"


def _case_sql(family: str, name: str) -> tuple[str, str]:
    data = yaml.safe_load((CASES / f"{family}.yaml").read_text())
    case = next(c for c in data["cases"] if c["name"] == name)
    return case["sql"], case["dialect"]


def _run(sql: str, dialect: str) -> TaskLineage:
    return extract_lineage(SqlTask(task_id="t", sql=sql, dialect=dialect, vars={}))


def _writes_by_line(result: TaskLineage) -> list[tuple[int, str]]:
    return [(s.line, w) for s in result.statements for w in s.writes]


def _line_of(sql: str, text: str, occurrence: int = 1) -> int:
    """1-based line of the n-th line of `sql` that contains `text`."""
    found = [n for n, line in enumerate(sql.split("\n"), 1) if text in line]
    return found[occurrence - 1]


def test_spark_block_statements_keep_their_lines() -> None:
    sql, dialect = _case_sql("scripting_blocks", "spark-nested-for-if-while-repeat")
    result = _run(sql, dialect)
    assert result.errors == []
    assert _writes_by_line(result) == [
        (_line_of(sql, "UPDATE products SET"), "default.products"),
        (_line_of(sql, "INSERT INTO orders"), "default.orders"),
        (_line_of(sql, "INSERT INTO order_items"), "default.order_items"),
    ]
    # the FOR loops' queries are statements of their own, on the FOR lines
    for_reads = [(s.line, [r.table for r in s.reads]) for s in result.statements if s.reads]
    assert (_line_of(sql, "FOR cust AS SELECT"), ["default.customers"]) in for_reads
    assert (_line_of(sql, "FOR loop_var AS SELECT"), ["default.products"]) in for_reads
    indexes = [s.index for s in result.statements]
    assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes)


def test_unparsable_statement_in_a_block_is_one_error_at_its_line() -> None:
    sql, dialect = _case_sql("scripting_blocks", "unparsable-statement-inside-block")
    result = _run(sql, dialect)
    assert [(e.statement_index, e.line) for e in result.errors] == [
        (1, _line_of(sql, "INSERT INTO users VALUES"))
    ]
    assert [(s.index, s.line) for s in result.statements if s.writes] == [
        (0, _line_of(sql, "INSERT INTO error_logs")),
        (2, _line_of(sql, "INSERT INTO users VALUES", 2)),
    ]


def test_dollar_quoted_body_lines_count_from_the_task_text() -> None:
    sql, dialect = _case_sql("procedures", "postgres-plpgsql-trigger-function")
    result = _run(sql, dialect)
    assert result.errors == []
    assert _writes_by_line(result) == [
        (_line_of(sql, "CREATE TABLE emp ("), "default.emp"),
        (_line_of(sql, "CREATE TABLE emp_audit("), "default.emp_audit"),
        (_line_of(sql, "INSERT INTO emp_audit SELECT 'D'"), "default.emp_audit"),
        (_line_of(sql, "INSERT INTO emp_audit SELECT 'U'"), "default.emp_audit"),
        (_line_of(sql, "INSERT INTO emp_audit SELECT 'I'"), "default.emp_audit"),
    ]


def test_mysql_delimiter_trigger_bodies() -> None:
    sql, dialect = _case_sql("procedures", "mysql-delimiter-triggers")
    result = _run(sql, dialect)
    assert result.errors == []
    assert _writes_by_line(result) == [
        (_line_of(sql, "INSERT INTO film_text"), "default.film_text"),
        (_line_of(sql, "UPDATE film_text"), "default.film_text"),
        (_line_of(sql, "DELETE FROM film_text"), "default.film_text"),
    ]


def test_tsql_go_batches_and_procedure_without_semicolons() -> None:
    sql, dialect = _case_sql("tsql_batches", "go-batches-and-procedure-without-semicolons")
    result = _run(sql, dialect)
    assert result.errors == []
    table = "adventureworks2016ctp3.customersstate"
    assert _writes_by_line(result) == [
        (_line_of(sql, "CREATE TABLE CustomersState"), table),
        (_line_of(sql, "INSERT INTO CustomersState"), table),
        (_line_of(sql, "UPDATE CustomersState SET [State] = 'NY'"), table),
        (_line_of(sql, "UPDATE CustomersState SET [State] = 'WA'"), table),
    ]
    # the procedure's SELECT (inside AS BEGIN … END, no semicolon) reads both tables
    body = next(s for s in result.statements if s.line == _line_of(sql, "SELECT @CustomerID"))
    assert {r.table for r in body.reads} == {"sales.customer", table}


# from: microsoft/sql-server-samples/samples/containers/dtc/dtcinsert.sql
DTC = """set xact_abort on
go
begin distributed transaction
go
use dtclinux1
go
insert into dtctable values (1)
insert into dtc2.dtclinux2.dbo.dtctable values (1)
go
commit tran
go"""


def test_tsql_statements_on_consecutive_lines_are_two_statements() -> None:
    result = _run(DTC, "tsql")
    assert result.errors == []
    inserts = [(s.line, s.writes) for s in result.statements if s.writes]
    assert [line for line, _ in inserts] == [7, 8]
    assert inserts[0][1] == ["dtclinux1.dtctable"]


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        # a query after INSERT, a set operation, UPDATE's SET and FROM, a CTE's statement,
        # MERGE's branches and a cursor's query all continue the statement they belong to
        ("INSERT INTO d.t SELECT a FROM d.s UNION ALL SELECT a FROM d.u\nSELECT 1", [["d.t"]]),
        (
            "UPDATE x SET x.a = s.a FROM d.t AS x JOIN d.s AS s ON x.id = s.id\nDELETE FROM d.u",
            [["d.t"], ["d.u"]],
        ),
        ("WITH c AS (SELECT a FROM d.s) INSERT INTO d.t SELECT a FROM c\nPRINT 'done'", [["d.t"]]),
        (
            "MERGE d.t AS t USING d.s AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.a = s.a "
            "WHEN NOT MATCHED THEN INSERT (id, a) VALUES (s.id, s.a);",
            [["d.t"]],
        ),
        (
            "IF @x = 1 INSERT INTO d.t SELECT a FROM d.s ELSE INSERT INTO d.u SELECT a FROM d.s",
            [["d.t"], ["d.u"]],
        ),
        ("BEGIN TRY INSERT INTO d.t SELECT a FROM d.s END TRY BEGIN CATCH THROW END CATCH", [["d.t"]]),
        # END then IF: two statements in T-SQL (there is no END IF); DROP ... IF EXISTS is one
        (
            "IF @a = 1 BEGIN INSERT INTO d.t SELECT a FROM d.s END\nIF (SELECT 1) < 2 INSERT INTO d.u SELECT a FROM d.s",
            [["d.t"], ["d.u"]],
        ),
        (
            "DROP TABLE IF EXISTS d.x\nINSERT INTO d.t SELECT a FROM d.s\nEXECUTE AS USER = 'u'\nREVERT",
            [["d.t"]],
        ),
        (
            "SELECT a INTO #tmp FROM d.s WITH (NOLOCK) WHERE CASE WHEN a > 0 THEN 1 END = 1\nINSERT INTO d.t SELECT a FROM #tmp",
            None,
        ),
    ],
)
def test_tsql_statement_boundaries(sql: str, writes: list[list[str]] | None) -> None:
    result = _run(sql, "tsql")
    assert result.errors == []
    if writes is not None:
        assert [s.writes for s in result.statements if s.writes] == writes


def test_a_body_that_does_not_tokenize_is_one_error_and_the_script_goes_on() -> None:
    sql = (
        "CREATE PROCEDURE p() RETURNS VARCHAR LANGUAGE SQL AS $$\n"
        "BEGIN\n"
        "  INSERT INTO d.t SELECT 'unterminated FROM d.s;\n"
        "END;\n"
        "$$;\n"
        "INSERT INTO d.u SELECT a FROM d.s;\n"
    )
    result = _run(sql, "snowflake")
    assert [(e.statement_index, e.line) for e in result.errors] == [(0, 1)]
    assert "tokenize" in result.errors[0].message
    assert [(s.index, s.writes) for s in result.statements] == [(1, ["d.u"])]


def test_plain_scripts_are_untouched() -> None:
    """Statements that start with no scripting word keep their index per `;` and their lines."""
    sql = "SET x=1;\nINSERT INTO d.t SELECT a FROM d.s;\n\nINSERT INTO d.u SELECT a FROM d.s"
    result = _run(sql, "hive")
    assert [(s.index, s.line, s.writes) for s in result.statements] == [
        (0, 1, []),
        (1, 2, ["d.t"]),
        (2, 4, ["d.u"]),
    ]


def test_select_into_is_a_table_outside_blocks_and_a_variable_inside() -> None:
    # `BEGIN;` alone is a transaction (Postgres), not a block: SELECT INTO still creates d.t
    top = _run("BEGIN;\nSELECT a INTO d.t FROM d.s;\nCOMMIT;", "postgres")
    assert [s.writes for s in top.statements if s.writes] == [["d.t"]]
    # in a PL/pgSQL body it fills the variable v: a read only
    body = _run(
        "CREATE FUNCTION f() RETURNS int AS $$\nDECLARE v int;\nBEGIN\n"
        "  SELECT a INTO STRICT v FROM d.s;\n  RETURN v;\nEND\n$$ LANGUAGE plpgsql;",
        "postgres",
    )
    assert body.errors == []
    assert [(s.line, s.writes, [r.table for r in s.reads]) for s in body.statements] == [(4, [], ["d.s"])]


@pytest.mark.parametrize(
    ("dialect", "sql", "expected"),
    [
        # a Hive UDF's class name is no body: the CREATE stays the statement it was (index 0)
        (
            "hive",
            "CREATE TEMPORARY FUNCTION f AS 'com.x.Udf';\nINSERT INTO d.t SELECT f(a) FROM d.s",
            [(0, 1, [], []), (1, 2, ["d.t"], ["d.s"])],
        ),
        # WITH SCHEMABINDING is a view option, not a CTE; GO ends the batch
        (
            "tsql",
            "CREATE VIEW d.v WITH SCHEMABINDING AS SELECT a FROM d.s\nGO\nINSERT INTO d.t SELECT a FROM d.s",
            [(0, 1, ["d.v"], ["d.s"]), (1, 3, ["d.t"], ["d.s"])],
        ),
        # an inline table function's RETURN (query) reads
        (
            "tsql",
            "CREATE FUNCTION d.f(@d date) RETURNS TABLE AS RETURN (SELECT a FROM d.s WHERE b = @d)",
            [(0, 1, [], ["d.s"])],
        ),
        # PL/pgSQL: PERFORM reads, FOREACH's body runs, OPEN … FOR query reads
        (
            "postgres",
            "CREATE FUNCTION f() RETURNS int AS $$\nBEGIN\n  PERFORM 1 FROM d.s;\n"
            "  FOREACH x IN ARRAY arr LOOP\n    INSERT INTO d.t VALUES (x);\n  END LOOP;\n"
            "  EXIT WHEN x > 1;\n  OPEN c FOR SELECT a FROM d.u;\nEND\n$$ LANGUAGE plpgsql;",
            [(0, 3, [], ["d.s"]), (1, 5, ["d.t"], []), (2, 8, [], ["d.u"])],
        ),
        # Spark: dynamic SQL given as a literal is analysed
        ("spark", "EXECUTE IMMEDIATE 'INSERT INTO d.t SELECT a FROM d.s';", [(0, 1, ["d.t"], ["d.s"])]),
    ],
)
def test_routine_and_body_forms(dialect: str, sql: str, expected: list) -> None:
    result = _run(sql, dialect)
    assert result.errors == []
    assert [(s.index, s.line, s.writes, [r.table for r in s.reads]) for s in result.statements] == expected


def test_a_long_tsql_script_without_semicolons_is_cut_at_go_lines() -> None:
    """Larger than one tokenizer batch (128 KB): cut at GO lines, every statement still found at its line."""
    from watershed.ingest import extract
    from watershed.ingest.dialects import dialect_tools

    statements = "INSERT INTO d.t (a)\nSELECT a FROM d.s WHERE b = 'x'\nUPDATE d.u SET c = 1\nGO\n"
    comment = "-- " + "x" * 97 + "\n"
    filler = comment * (extract.BATCH_CHARS // len(comment) + 10) + "GO\n"
    sql = statements + filler + statements + filler + statements
    result = _run(sql, "tsql")
    assert result.errors == []
    lines = [s.line for s in result.statements]
    block = 4 + filler.count("\n")
    assert lines == [1, 3, 1 + block, 3 + block, 1 + 2 * block, 3 + 2 * block]
    pieces = list(extract._batches(dialect_tools("tsql")[1], sql, extract._TSQL_STATEMENT_END))
    assert len(pieces) >= 2


def test_sqlcmd_directives_are_skipped() -> None:
    # from: microsoft/sql-server-samples/samples/databases/adventure-works/oltp-install-script/instawdb.sql
    sql = ' :setvar SqlSamplesSourceDataPath "C:\\Samples\\AdventureWorks\\"\n\nINSERT INTO d.t SELECT a FROM d.s\nGO'
    result = _run(sql, "tsql")
    assert result.errors == []
    assert [(s.line, s.writes) for s in result.statements] == [(3, ["d.t"])]


def test_tsql_dynamic_sql_literals_keep_their_lines() -> None:
    sql, dialect = _case_sql("tsql_batches", "sp-executesql-literal-and-go-count")
    result = _run(sql, dialect)
    reads = [s.line for s in result.statements if s.reads]
    assert reads == [n for n, line in enumerate(sql.split("\n"), 1) if "EXEC sp_executesql" in line]
    # EXEC ('…') with one literal too; a built string stays opaque
    result = _run("EXEC ('INSERT INTO d.t SELECT a FROM d.s')\nEXEC (@sql)", "tsql")
    assert [s.writes for s in result.statements if s.writes] == [["d.t"]]


def test_tsql_trigger_pseudo_tables_read_the_trigger_table_until_go() -> None:
    sql = (
        "CREATE TRIGGER d.trg ON d.t AFTER UPDATE AS\n"
        "INSERT INTO d.log (a, b) SELECT i.a, x.b FROM inserted i JOIN deleted AS x ON i.id = x.id\n"
        "GO\n"
        "CREATE TRIGGER d.trg2 ON d.u AFTER DELETE AS\n"
        "BEGIN\n  INSERT INTO d.log (a, b) SELECT a, b FROM deleted\nEND\n"
        "GO\n"
    )
    result = _run(sql, "tsql")
    assert result.errors == []
    sources = {c.target: sorted(s.id for s in c.sources) for c in result.columns}
    assert sources == {"d.log.a": ["d.t.a", "d.u.a"], "d.log.b": ["d.t.b", "d.u.b"]}
    assert {r.table for r in result.reads} == {"d.t", "d.u"}


def test_mysql_row_trigger_new_and_old_read_the_trigger_table() -> None:
    sql = (
        "CREATE TRIGGER trg BEFORE UPDATE ON d.t FOR EACH ROW BEGIN\n"
        "  SET NEW.changed = NOW();\n"
        "  INSERT INTO d.audit (id, before_a, after_a) VALUES (OLD.id, OLD.a, NEW.a);\n"
        "END;\n"
        "INSERT INTO d.u (a) VALUES (1);\n"
    )
    result = _run(sql, "mysql")
    assert result.errors == []
    sources = {c.target: sorted(s.id for s in c.sources) for c in result.columns}
    assert sources["d.audit.before_a"] == ["d.t.a"] and sources["d.audit.after_a"] == ["d.t.a"]
    assert sources["d.u.a"] == []  # after the trigger's END nothing is rebound


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        (
            "databricks",
            "BEGIN\n  FOR r AS SELECT a FROM d.s DO\n    INSERT INTO d.t (a) VALUES (r.a);\n  END FOR;\nEND;",
        ),
        ("bigquery", "FOR r IN (SELECT a FROM d.s) DO\n  INSERT INTO d.t (a) VALUES (r.a);\nEND FOR;"),
        (
            "postgres",
            "DO $$\nDECLARE r record;\nBEGIN\n  FOR r IN SELECT a FROM d.s LOOP\n"
            "    LOOP EXIT; END LOOP;\n    INSERT INTO d.t (a) VALUES (r.a);\n  END LOOP;\nEND\n$$;",
        ),
    ],
)
def test_a_for_loop_variable_reads_the_loop_query(dialect: str, sql: str) -> None:
    result = _run(sql, dialect)
    assert result.errors == []
    assert [(c.target, [s.id for s in c.sources]) for c in result.columns] == [("d.t.a", ["d.s.a"])]


def test_tsql_variables_carry_the_query_assigned_to_them() -> None:
    sql, dialect = _case_sql("procedures", "tsql-procedure-body")
    result = _run(sql, dialect)
    sources = {c.target: [s.id for s in c.sources] for c in result.columns}
    # DECLARE @LineageKey int = (SELECT TOP(1) [Lineage Key] FROM Integration.Lineage …), then
    # INSERT … SELECT …, @LineageKey FROM Integration.PaymentMethod_Staging
    assert sources["dimension.payment method.lineage key"] == ["integration.lineage.lineage key"]
    # SELECT @v = … assigns too; a literal assignment forgets the query; GO ends the batch's variables
    result = _run(
        "SELECT TOP 1 @v = a FROM d.s ORDER BY a\nINSERT INTO d.t (a, b) SELECT @v, b FROM d.u\n"
        "SET @v = 1\nINSERT INTO d.t (a, b) SELECT @v, b FROM d.u\nGO\n"
        "INSERT INTO d.t (a, b) SELECT @v, b FROM d.u",
        "tsql",
    )
    assert result.errors == []
    per_statement = [
        [(c.target, [s.id for s in c.sources]) for c in st.columns] for st in result.statements if st.writes
    ]
    assert per_statement[0] == [("d.t.a", ["d.s.a"]), ("d.t.b", ["d.u.b"])]
    assert per_statement[1] == per_statement[2] == [("d.t.a", []), ("d.t.b", ["d.u.b"])]


def test_snowflake_cursor_and_resultset_queries_read() -> None:
    sql = (
        "CREATE OR REPLACE PROCEDURE p()\nRETURNS VARCHAR\nLANGUAGE SQL\nAS\n$$\nDECLARE\n"
        "  c1 CURSOR FOR SELECT a FROM d.s;\n  res RESULTSET DEFAULT (SELECT b FROM d.u);\nBEGIN\n"
        "  LET c2 CURSOR FOR SELECT c FROM d.v;\n  LET r2 RESULTSET := (SELECT e FROM d.w);\n"
        "  INSERT INTO d.t SELECT a FROM d.s;\n  RETURN 'ok';\nEND;\n$$;"
    )
    result = _run(sql, "snowflake")
    assert result.errors == []
    assert [(s.line, s.writes, [r.table for r in s.reads]) for s in result.statements] == [
        (7, [], ["d.s"]),
        (8, [], ["d.u"]),
        (10, [], ["d.v"]),
        (11, [], ["d.w"]),
        (12, ["d.t"], ["d.s"]),
    ]


@pytest.mark.parametrize(
    ("dialect", "sql", "writes"),
    [
        # transactions are no blocks: SELECT INTO after them still creates its table
        ("postgres", "BEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT a INTO d.t FROM d.s;\nCOMMIT;", [["d.t"]]),
        ("postgres", "BEGIN TRANSACTION READ ONLY;\nINSERT INTO d.t SELECT a FROM d.s;\nEND;", [["d.t"]]),
        ("tsql", "BEGIN TRAN t1\nINSERT INTO d.t SELECT a FROM d.s\nCOMMIT TRAN t1", [["d.t"]]),
        # BEGIN ATOMIC is a block
        ("databricks", "BEGIN ATOMIC\n  INSERT INTO d.t SELECT a FROM d.s;\nEND;", [["d.t"]]),
    ],
)
def test_transactions_and_atomic_blocks(dialect: str, sql: str, writes: list[list[str]]) -> None:
    result = _run(sql, dialect)
    assert result.errors == []
    assert [s.writes for s in result.statements if s.writes] == writes


def test_tsql_table_variable_lives_in_its_batch() -> None:
    sql = (
        "DECLARE @t TABLE (id int, name varchar(10))\n"
        "INSERT INTO d.x (id) SELECT id FROM @t\n"  # read before any row went in: no sources
        "INSERT INTO @t SELECT id, name FROM d.s WHERE id > 3\n"
        "INSERT INTO @t (id, name) SELECT id, label FROM d.u\n"
        "UPDATE @t SET name = upper(name)\n"
        "INSERT INTO d.x (id, name) SELECT t.id, t.name FROM @t AS t JOIN d.o AS o ON o.id = t.id\n"
        "GO\n"
        "INSERT INTO d.y SELECT id FROM @t"  # GO ended it: a variable again, not a table
    )
    result = _run(sql, "tsql")
    assert result.errors == []
    assert any("@t" in entry for entry in result.statements[-1].unresolved)
    assert all("@" not in table for s in result.statements for table in s.writes)
    assert all("@" not in r.table for s in result.statements for r in s.reads)
    first, last = (s for s in result.statements if "d.x" in s.writes)
    assert [(c.target, c.sources) for c in first.columns] == [("d.x.id", [])]
    sources = {c.target: sorted((s.id, s.kind) for s in c.sources) for c in last.columns}
    assert sources == {
        "d.x.id": [("d.s.id", "direct"), ("d.u.id", "direct")],
        # the inserted values, and the UPDATE's upper() of them (it may not touch every row)
        "d.x.name": [
            ("d.s.name", "direct"),
            ("d.s.name", "expression"),
            ("d.u.label", "direct"),
            ("d.u.label", "expression"),
        ],
    }
    weak = {(w.column, w.role) for w in last.weak_references}
    assert ("d.s.id", "filter") in weak and ("d.o.id", "join") in weak
    assert result.writes == ["d.x", "d.y"]


def test_tsql_table_variable_redeclared_after_go_starts_empty() -> None:
    sql = (
        "DECLARE @t TABLE (a int)\nINSERT INTO @t SELECT a FROM d.s\nGO\n"
        "DECLARE @t TABLE (a int)\nINSERT INTO @t SELECT a FROM d.u\n"
        "INSERT INTO d.x SELECT a FROM @t"
    )
    result = _run(sql, "tsql")
    assert result.errors == []
    assert [(c.target, [s.id for s in c.sources]) for c in result.columns] == [("d.x.a", ["d.u.a"])]


def test_mysql_select_into_never_creates_a_table() -> None:
    # top level and inside a procedure: variables only read, a file is an unload
    sql = (
        "SELECT a INTO v FROM d.t;\nSELECT a, b INTO v1, v2 FROM d.t;\n"
        "DELIMITER //\nCREATE PROCEDURE p()\nBEGIN\n"
        "  SELECT a, b INTO OUTFILE '/tmp/p' FIELDS TERMINATED BY ',' FROM d.s;\n"
        "  SELECT a INTO x FROM d.u LIMIT 1;\nEND //\nDELIMITER ;\n"
        "SELECT a INTO OUTFILE FROM d.t;"
    )
    result = _run(sql, "mysql")
    assert [(s.kind, s.writes, [r.table for r in s.reads]) for s in result.statements] == [
        ("select", [], ["d.t"]),
        ("select", [], ["d.t"]),
        ("unload", ["path:fs./tmp/p"], ["d.s"]),
        ("select", [], ["d.u"]),
    ]
    assert [(c.target, [s.id for s in c.sources]) for c in result.columns] == [
        ("path:fs./tmp/p.a", ["d.s.a"]),
        ("path:fs./tmp/p.b", ["d.s.b"]),
    ]
    assert [(e.statement_index, e.message) for e in result.errors] == [
        (4, "SELECT … INTO OUTFILE without a file name")
    ]
    # T-SQL's SELECT … INTO t still creates t
    assert _run("SELECT a INTO d.v FROM d.t", "tsql").writes == ["d.v"]


def test_tsql_output_into_table_variable() -> None:
    sql = (
        "DECLARE @changes TABLE (id int, old_a int, new_a int, delta int)\n"
        "UPDATE d.x SET a = s.a FROM d.x JOIN d.s s ON s.id = d.x.id\n"
        "  OUTPUT inserted.id, deleted.a, inserted.a, inserted.a - deleted.a INTO @changes\n"
        "INSERT INTO d.audit (id, old_a, new_a, delta) SELECT id, old_a, new_a, delta FROM @changes\n"
        "DECLARE @ids TABLE (id int)\n"
        "INSERT INTO d.y (id, b) OUTPUT inserted.id INTO @ids (id) SELECT id, b FROM d.u\n"
        "INSERT INTO d.z SELECT id FROM @ids"
    )
    result = _run(sql, "tsql")
    assert result.errors == []
    assert result.writes == ["d.x", "d.audit", "d.y", "d.z"]
    sources = {c.target: [(s.id, s.kind) for s in c.sources] for c in result.columns}
    # declared columns in order; the written table's columns, the UPDATE's own sources not repeated
    assert sources["d.audit.old_a"] == sources["d.audit.new_a"] == [("d.x.a", "direct")]
    assert sources["d.audit.delta"] == [("d.x.a", "expression")]
    assert sources["d.z.id"] == [("d.y.id", "direct")]
    assert {(e.source, e.target) for e in result.table_edges} >= {("d.x", "d.audit"), ("d.y", "d.z")}
