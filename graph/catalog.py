"""The schema catalog: tables with their ordered columns and partition columns.

JSON file format (documented in the README):

    {
      "default_database": "dw",                       # optional
      "tables": {
        "ods.user_log": {
          "columns": [{"name": "uid", "type": "bigint"}, {"name": "app", "type": "string"}],
          "partitioned_by": [{"name": "dt", "type": "string"}],   # optional
          "format": "orc", "location": "...", "owner": "...", "ttl_days": 90,  # optional
          "external_readers": ["superset"],  # optional: tools outside the warehouse that read it
          "description": "..."   # optional, and on a column: {"name": "uid", "description": "..."}
        }
      }
    }

`columns` may also be a list of names, or an object mapping names to types.
Partition columns follow the data columns in `SELECT *`, as in Hive.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from pathlib import Path

import cramjam
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from watershed.graph import ids
from watershed.graph.errors import WatershedError

#: the session catalog Spark 3 names `spark_catalog`: its tables are read as plain db.table
DEFAULT_CATALOG = "spark_catalog"


class CatalogError(WatershedError, ValueError):
    """A catalog file or entry is invalid; the message names the file and the entry."""


class CatalogColumn(BaseModel):
    # frozen: an unpacked catalog shares one instance among every table with that column
    # (`PackedTables`); a change is a copy (`model_copy(update=...)`)
    model_config = ConfigDict(frozen=True)

    name: str
    type: str = "string"
    #: the catalog's comment on the column (`COMMENT '...'`): its description until a steward sets one
    description: str | None = None

    @field_validator("name")
    @classmethod
    def _lower(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("column name must not be blank")
        return value.strip().lower()


def _coerce_columns(value: object) -> object:
    if isinstance(value, dict):
        return [{"name": name, "type": type_} for name, type_ in value.items()]
    if isinstance(value, list):
        return [{"name": item} if isinstance(item, str) else item for item in value]
    return value


class CatalogTable(BaseModel):
    name: str
    columns: list[CatalogColumn] = Field(default_factory=list)
    partitioned_by: list[CatalogColumn] = Field(default_factory=list)
    format: str | None = None
    location: str | None = None
    owner: str | None = None
    #: the catalog's comment on the table (`COMMENT '...'`): its description until a steward sets one
    description: str | None = None
    layer: str | None = None
    ttl_days: int | None = None
    #: tools outside the warehouse that read the table (a BI dashboard: `superset`): its lineage
    #: shows no reader, and TTL advice never calls its columns unused
    external_readers: list[str] = Field(default_factory=list)
    #: a persistent view: its definition (the query, in `view_dialect`); query-time analysis reads
    #: through it to the base tables (`ingest.points`)
    view_sql: str | None = None
    view_dialect: str | None = None
    #: False when the order of `columns` is not known (a table only lineage created, its columns
    #: listed by name): `SELECT *` positions cannot be told from it
    columns_ordered: bool = True

    _coerce_columns = field_validator("columns", "partitioned_by", mode="before")(
        lambda cls, value: _coerce_columns(value)
    )

    # Cached: the extractor asks for these on every table reference.
    @cached_property
    def all_columns(self) -> list[str]:
        return [c.name for c in self.columns] + [c.name for c in self.partitioned_by]

    @cached_property
    def column_set(self) -> frozenset[str]:
        return frozenset(self.all_columns)

    @cached_property
    def partition_column_names(self) -> list[str]:
        return [c.name for c in self.partitioned_by]

    @cached_property
    def partition_set(self) -> frozenset[str]:
        return frozenset(self.partition_column_names)


class Catalog(BaseModel):
    """Tables by fully qualified lower-case name (`db.table`)."""

    default_database: str | None = None
    tables: dict[str, CatalogTable] = Field(default_factory=dict)

    def get(self, table_id: str) -> CatalogTable | None:
        return self.tables.get(table_id)

    def with_table(self, table: CatalogTable) -> None:
        self.tables[table.name] = table

    @classmethod
    def from_dict(
        cls, data: dict, *, source: str = "<catalog>", default_catalog: str = DEFAULT_CATALOG
    ) -> Catalog:
        if not isinstance(data, dict):
            raise CatalogError(f"{source}: a catalog must be a JSON object with a 'tables' object")
        raw_tables = data.get("tables", {})
        if not isinstance(raw_tables, dict):
            raise CatalogError(f"{source}: 'tables' must be an object mapping db.table to its schema")
        return cls._from_tables(data.get("default_database"), raw_tables.items(), source, default_catalog)

    @classmethod
    def _from_tables(
        cls,
        default_db: str | None,
        raw_tables: Iterable[tuple[str, object]],
        source: str,
        default_catalog: str,
    ) -> Catalog:
        """The catalog of `raw_tables` ((name, spec) pairs, read one at a time), each column one
        shared object per distinct (name, type, description).

        Column names repeat across a warehouse's tables (uid, dt, app...): at 100,000 columns of
        bench/harvest_memory_bench.py's warehouse 5,400 are distinct, and an object per column
        was most of the harvest driver's memory (about 560 bytes a column, 1.1 GB at 2 million)."""
        tables: dict[str, CatalogTable] = {}
        columns: dict[CatalogColumn, CatalogColumn] = {}
        for raw_name, spec in raw_tables:
            try:
                parts = ids.split(str(raw_name).strip().lower())
            except ids.InvalidIdError as exc:
                raise CatalogError(f"{source}: table {raw_name!r}: {exc}") from None
            if len(parts) == 3:
                # catalog.db.table, as Spark 3 names it: the session's catalog drops, another one
                # stays in the database part (graph/ids.py qualify)
                catalog, database, table = parts
                parts = [database if catalog == default_catalog else ids.qualify(catalog, database), table]
            elif len(parts) > 3:
                raise CatalogError(f"{source}: table {raw_name!r}: expected db.table or catalog.db.table")
            if len(parts) == 1:
                if not default_db:
                    raise CatalogError(
                        f"{source}: table {raw_name!r} is not qualified as db.table "
                        "and the catalog has no default_database"
                    )
                parts.insert(0, default_db.lower())
            # One spelling per table: a name holding a dot is quoted, ods.`t` is ods.t.
            name = ids.join(*parts)
            if not isinstance(spec, dict):
                spec = {"columns": spec}
            # A dumped catalog repeats each table's name inside its entry.
            spec = {key: value for key, value in spec.items() if key != "name"}
            try:
                table = CatalogTable(name=name, **spec)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
                )
                raise CatalogError(f"{source}: table {raw_name!r}: {problems}") from None
            # frozen, so one instance may serve every table that has the column
            table.columns = [columns.setdefault(column, column) for column in table.columns]
            table.partitioned_by = [columns.setdefault(column, column) for column in table.partitioned_by]
            tables[name] = table
        return cls.model_construct(default_database=default_db, tables=tables)

    def packed(self) -> dict:
        """The catalog with each table as its JSON text compressed (an LZ4 block;
        `Catalog.unpacked` reads it back).

        What the harvest broadcasts to its executors: a few bytes per column instead of an object,
        so a worker holds a warehouse-sized catalog in a fraction of the memory. Compressed, a
        table of bench/harvest_memory_bench.py's warehouse is a quarter of its text (1,840 bytes
        of JSON for 30 columns): about 150 MB for 10 million columns, where the texts were 600 MB
        in the driver and in every executor's Python worker.
        """
        return {
            "default_database": self.default_database,
            "tables": {
                name: bytes(cramjam.lz4.compress_block(table.model_dump_json().encode()))
                for name, table in self.tables.items()
            },
        }

    @classmethod
    def unpacked(cls, packed: dict, *, parsed_tables: int = 4096) -> Catalog:
        """A catalog over `Catalog.packed` output that parses a table when first asked for it and
        keeps at most `parsed_tables` parsed (the least recently used go first).

        The texts are trusted as `packed` wrote them, from tables already validated: they are read
        back without validating them again."""
        return cls.model_construct(
            default_database=packed.get("default_database"),
            tables=PackedTables(packed.get("tables") or {}, parsed_tables),
        )

    @classmethod
    def load(cls, path: str | Path) -> Catalog:
        path = Path(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise CatalogError(f"{path}: catalog file not found") from None
        except IsADirectoryError:
            raise CatalogError(f"{path}: is a directory, not a catalog file") from None
        except OSError as exc:
            raise CatalogError(f"{path}: cannot read the catalog file ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise CatalogError(
                f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
            ) from None
        try:
            default_db, raw_tables = _scan_catalog_text(text)
            # checked whole first: a file that is not JSON fails before any table is built
            # (and `json.loads` names the place)
            return cls._from_tables(default_db, raw_tables, str(path), DEFAULT_CATALOG)
        except _NotScannableError:
            pass
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CatalogError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        return cls.from_dict(data, source=str(path))


class _NotScannableError(Exception):
    """The catalog text is not the plain shape `_scan_catalog_text` reads: `json.loads` it whole."""


_WHITESPACE = " \t\n\r"


def _scan_catalog_text(text: str) -> tuple[str | None, Iterator[tuple[str, object]]]:
    """A catalog file's default database and its tables as (name, spec) pairs, decoded one table
    at a time: the file's JSON as Python dicts is several times its size (3 GB at 10 million
    columns), where one table's is a few kilobytes. Raises `_NotScannableError` for anything but a
    JSON object of `tables` (an object) and other keys, each key once; the whole text is checked
    valid JSON first, at the scanner's own pace (no objects kept)."""
    decoder = json.JSONDecoder()

    def skip(at: int) -> int:
        while at < len(text) and text[at] in _WHITESPACE:
            at += 1
        return at

    def members(at: int, on_value) -> int:
        """Walk the object opening at `at`: `on_value(key, at)` returns where its value ends."""
        if text[at : at + 1] != "{":
            raise _NotScannableError
        at = skip(at + 1)
        if text[at : at + 1] == "}":
            return at + 1
        while True:
            if text[at : at + 1] != '"':
                raise _NotScannableError
            key, at = decoder.raw_decode(text, at)
            at = skip(at)
            if text[at : at + 1] != ":":
                raise _NotScannableError
            at = skip(on_value(key, skip(at + 1)))
            if text[at : at + 1] == "}":
                return at + 1
            if text[at : at + 1] != ",":
                raise _NotScannableError
            at = skip(at + 1)

    top: dict[str, object] = {}
    tables_at: list[int] = []

    def top_value(key: str, at: int) -> int:
        if key in top:
            raise _NotScannableError
        if key == "tables":
            tables_at.append(at)
            top[key] = None
            # skipped here, decoded table by table below
            return members(at, lambda _name, inner: decoder.raw_decode(text, inner)[1])
        top[key], end = decoder.raw_decode(text, at)
        return end

    try:
        end = members(skip(0), top_value)
    except (json.JSONDecodeError, IndexError, RecursionError):
        raise _NotScannableError from None
    if skip(end) != len(text) or not isinstance(top.get("default_database"), str | None):
        raise _NotScannableError

    def tables() -> Iterator[tuple[str, object]]:
        if not tables_at:
            return
        at = skip(tables_at[0] + 1)
        while text[at] != "}":
            name, at = decoder.raw_decode(text, at)
            # past the colon: the scan above checked the shape
            spec, at = decoder.raw_decode(text, skip(skip(at) + 1))
            yield name, spec
            at = skip(at)
            if text[at] == ",":
                at = skip(at + 1)

    return top.get("default_database"), tables()


class PackedTables(Mapping[str, CatalogTable]):
    """Tables by name held as their compressed JSON text (`Catalog.packed`), parsed on first use,
    a bounded number kept parsed.

    The texts are `Catalog.packed`'s dumps of validated tables, so a table is built from them
    without validating again, and each distinct column (name and type) is one shared, frozen
    object: validating measured about five times the time of this, and a column object per table
    seven times the memory (bench/harvest_bench.py's warehouse, every table parsed).
    """

    def __init__(self, texts: dict[str, bytes], parsed_tables: int) -> None:
        if parsed_tables < 1:
            raise ValueError(f"parsed_tables must be 1 or more, not {parsed_tables}")
        self._texts = texts
        self._limit = parsed_tables
        self._parsed: OrderedDict[str, CatalogTable] = OrderedDict()
        #: one column object per (name, type) met so far: never more than the texts' own columns
        self._columns: dict[tuple[str, str], CatalogColumn] = {}

    def __getitem__(self, name: str) -> CatalogTable:
        table = self._parsed.get(name)
        if table is not None:
            self._parsed.move_to_end(name)
            return table
        table = self._build(json.loads(bytes(cramjam.lz4.decompress_block(self._texts[name]))))
        self._parsed[name] = table
        if len(self._parsed) > self._limit:
            self._parsed.popitem(last=False)
        return table

    def _build(self, fields: dict) -> CatalogTable:
        fields["columns"] = [self._column(column) for column in fields["columns"]]
        fields["partitioned_by"] = [self._column(column) for column in fields["partitioned_by"]]
        return CatalogTable.model_construct(**fields)

    def _column(self, fields: dict) -> CatalogColumn:
        key = (fields["name"], fields["type"])
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = CatalogColumn.model_construct(**fields)
        return column

    def __contains__(self, name: object) -> bool:
        return name in self._texts

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)
