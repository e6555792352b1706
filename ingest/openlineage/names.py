"""OpenLineage dataset names (namespace, name) and Watershed ids, both ways.

The rules are `IngestSettings.openlineage_namespaces`, ordered `[pattern, target]` pairs; the
first whose pattern (fnmatch, case-insensitive) matches the namespace decides:

- `table`: the name is `db.table` or `catalog.db.table` (Hive, Spark's session catalog): the
  session's catalog is dropped, any other kept, `cat2.db2.t` → `cat2:db2.t`, as the extractor
  reads a three-part name; a one-part name is in the default database;
- `table:<catalog>`: the name is `db.table` of that catalog;
- `path`: files: the namespace is a file system's URI (`s3://bucket`, `hdfs://nn:8020`) and the
  name a path in it, `path:fs.s3://bucket/data/x`, the id the extractor gives
  `INSERT OVERWRITE DIRECTORY 's3://bucket/data/x'`;
- `path:fs`: files of the cluster's default file system (`file` for a local Spark, or the default
  name node): `path:fs./data/x`, the id of `INSERT OVERWRITE DIRECTORY '/data/x'`.

A namespace no rule matches is never guessed at: the dataset keeps both parts in a catalog of its
own, `openlineage:<namespace>.<name>` (each part quoted as `graph.ids` quotes), so two events
naming it meet in one node and `to_openlineage` gives the pair back unchanged.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from watershed.graph import ids
from watershed.graph.catalog import DEFAULT_CATALOG
from watershed.graph.errors import WatershedError
from watershed.ingest.settings import IngestSettings

#: the catalog of a dataset whose namespace no rule reads: its id keeps namespace and name
UNKNOWN_CATALOG = "openlineage"
_TARGETS = ("table", "path", "path:fs")


class DatasetNameError(WatershedError, ValueError):
    """A dataset name that its namespace's rule cannot read (an empty name, too many parts)."""


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: str
    target: str

    def matches(self, namespace: str) -> bool:
        return fnmatch.fnmatchcase(namespace.lower(), self.pattern.lower())


def rules_of(pairs: Sequence[Sequence[str]]) -> list[Rule]:
    """The rules of a setting's pairs; a target that is none of the documented ones is an error."""
    rules = []
    for position, pair in enumerate(pairs):
        if len(pair) != 2:
            raise DatasetNameError(
                f"openlineage_namespaces[{position}]: expected [pattern, target], got {pair!r}"
            )
        pattern, target = pair
        if target not in _TARGETS and not (target.startswith("table:") and target[len("table:") :].strip()):
            raise DatasetNameError(
                f"openlineage_namespaces[{position}]: target {target!r} is none of table, table:<catalog>, "
                "path, path:fs"
            )
        rules.append(Rule(pattern, target))
    return rules


class Names:
    """The mapping of one configuration (the settings' rules, default catalog and database)."""

    def __init__(self, settings: IngestSettings | None = None) -> None:
        settings = settings or IngestSettings()
        self.rules = rules_of(settings.openlineage_namespaces)
        self.default_catalog = (settings.default_catalog or DEFAULT_CATALOG).strip().lower()
        self.default_database = settings.default_database.strip().lower()
        self.table_namespace = settings.openlineage_table_namespace
        fs = [r.pattern for r in self.rules if r.target == "path:fs" and not _is_pattern(r.pattern)]
        #: where a path of the default file system is emitted
        self.default_fs_namespace = fs[0] if fs else "file"
        self._cache: dict[tuple[str, str], str] = {}

    def rule(self, namespace: str) -> Rule | None:
        for rule in self.rules:
            if rule.matches(namespace):
                return rule
        return None

    def table_id(self, namespace: str, name: str) -> str:
        """The Watershed table id of the dataset (namespace, name)."""
        key = (namespace, name)
        found = self._cache.get(key)
        if found is None:
            found = self._table_id(namespace, name)
            if len(self._cache) < 100_000:
                self._cache[key] = found
        return found

    def _table_id(self, namespace: str, name: str) -> str:
        if not name.strip():
            raise DatasetNameError(f"dataset of namespace {namespace!r}: empty name")
        rule = self.rule(namespace)
        if rule is None:
            return ids.join(ids.qualify(UNKNOWN_CATALOG, namespace), name)
        if rule.target == "path:fs":
            return ids.path_table(name)
        if rule.target == "path":
            return ids.path_table(_uri(namespace, name))
        parts = [part.strip().lower() for part in name.split(".")]
        if "" in parts:
            raise DatasetNameError(f"dataset {namespace!r} {name!r}: empty part in a table name")
        if rule.target != "table":
            catalog = rule.target[len("table:") :].strip().lower()
            if len(parts) != 2:
                raise DatasetNameError(
                    f"dataset {namespace!r} {name!r}: a table of catalog {catalog} is named db.table"
                )
        elif len(parts) == 1:
            catalog, parts = None, [self.default_database, parts[0]]
        elif len(parts) == 2:
            catalog = None
        elif len(parts) == 3:
            catalog, parts = parts[0], parts[1:]
        else:
            raise DatasetNameError(
                f"dataset {namespace!r} {name!r}: a table is named [catalog.]db.table, not {len(parts)} parts"
            )
        if catalog == self.default_catalog:
            catalog = None
        return ids.join(ids.qualify(catalog, parts[0]), parts[1])

    def column_id(self, namespace: str, name: str, field: str) -> str:
        """The column id of a dataset's field: column names are lower case, as the extractor's."""
        if not field.strip():
            raise DatasetNameError(f"dataset {namespace!r} {name!r}: empty field name")
        return ids.child(self.table_id(namespace, name), field.strip().lower())

    def to_openlineage(self, table_id: str) -> tuple[str, str]:
        """The (namespace, name) a Watershed table is known by in OpenLineage: the inverse of
        `table_id` for every id it gives (a LOCAL path is emitted as a `file` path)."""
        database, table = ids.split(table_id)
        catalog, separator, db = database.partition(ids.CATALOG_SEPARATOR)
        if not separator:
            return self.table_namespace, f"{database}.{table}"
        if catalog == UNKNOWN_CATALOG:
            return db, table
        if catalog == ids.PATH_CATALOG:
            if db == "local":
                return "file", table
            scheme, found, rest = table.partition("://")
            if not found:
                return self.default_fs_namespace, table
            authority, slash, path = rest.partition("/")
            return f"{scheme}://{authority}", slash + path
        return self.table_namespace, f"{catalog}.{db}.{table}"


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def _uri(namespace: str, name: str) -> str:
    """A file's location from its file system's URI and its path (`s3://b` + `/x` or `x`)."""
    if name.startswith(namespace.rstrip("/") + "/"):
        return name  # a producer that repeats the namespace in the name
    return namespace.rstrip("/") + "/" + name.lstrip("/")


def table_id(namespace: str, name: str, settings: IngestSettings | None = None) -> str:
    """`Names(settings).table_id`: for one look-up; a loop keeps one `Names`."""
    return Names(settings).table_id(namespace, name)


def to_openlineage(table_id_: str, settings: IngestSettings | None = None) -> tuple[str, str]:
    """`Names(settings).to_openlineage`: the (namespace, name) of a Watershed table id."""
    return Names(settings).to_openlineage(table_id_)
