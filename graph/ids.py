"""Node ids: building them from names and taking them apart, in one place.

An id is its parts joined by dots: a table `db.table`, a column
`db.table.column` (nothing here assumes how many parts a table id has). Names are lower case.
A table of a catalog other than the session's default (Spark 3's `iceberg`,
`cat2`, ...) keeps its catalog in its database part, `cat2:db2.t1` (see
`qualify`): a table id stays two dot-separated parts, a column id three, so the
label of any id follows from its depth without knowing which catalogs exist. A part that
contains a dot or a backtick is written between backticks, a backtick inside
doubled, so every name has exactly one id and every id one reading:

    ods.x.`y.z`   the column `y.z` of table ods.x
    ods.`x.y`.z   the column z of table ods.`x.y`

Parse ids with `split` (or the helpers built on it), never with
`str.split('.')` or `rpartition('.')`.
"""

from __future__ import annotations

from watershed.graph.errors import WatershedError

_QUOTE = "`"


class InvalidIdError(WatershedError, ValueError):
    """An id whose quoting is broken (an unterminated or stray backtick, an empty part)."""


#: between a catalog and its database in the database part of an id
CATALOG_SEPARATOR = ":"


def qualify(catalog: str | None, database: str) -> str:
    """The database part of an id: `cat2:db2` for database db2 of catalog cat2, `db2` without a catalog.

    A dot-separated catalog part would make `cat2.db2.t1` (a table) read like
    `db.t.c` (a column): every reader of ids would need the list of catalogs.
    """
    return f"{catalog}{CATALOG_SEPARATOR}{database}" if catalog else database


#: the catalog of a path node: files written or read by location, not through a table
PATH_CATALOG = "path"


def path_table(location: str, local: bool = False) -> str:
    """The table id of files at `location`: `path:fs./data/out`, `path:local./tmp/x` for a LOCAL one.

    A directory written by `INSERT OVERWRITE DIRECTORY` and the same files read back as
    ``parquet.`/data/out` `` must meet in one node, so the file format is not part of the id;
    the location is kept as written (paths are case-sensitive), less a trailing slash.
    `local` is the client machine's file system (Hive's `LOCAL`), `fs` the cluster's default one.
    """
    location = location.strip()
    if len(location) > 1:
        location = location.rstrip("/") or "/"
    if not location:
        raise InvalidIdError("empty path")
    return join(qualify(PATH_CATALOG, "local" if local else "fs"), location)


def is_path(node_id: str) -> bool:
    """Whether the id names files by location (`path_table`) rather than a table."""
    return node_id.startswith(PATH_CATALOG + CATALOG_SEPARATOR)


def quote(name: str) -> str:
    """One part of an id: the name as is, or between backticks when it holds a dot or a backtick."""
    if "." in name or _QUOTE in name:
        return _QUOTE + name.replace(_QUOTE, _QUOTE * 2) + _QUOTE
    return name


def join(*names: str) -> str:
    """The id of the names, outermost first: `join("ods", "x", "y.z")` is ``ods.x.`y.z` ``."""
    return ".".join(quote(name) for name in names)


def child(parent_id: str, name: str) -> str:
    """The id of `name` inside the node `parent_id` (a column of a table, a table of a database)."""
    # quote() inlined: the extractor builds an id for every column reference
    if "." in name or _QUOTE in name:
        name = _QUOTE + name.replace(_QUOTE, _QUOTE * 2) + _QUOTE
    return f"{parent_id}.{name}"


def split(node_id: str) -> list[str]:
    """The names an id is made of, quotes removed; `InvalidIdError` when its quoting is broken."""
    if _QUOTE not in node_id:
        parts = node_id.split(".")
        if "" in parts:
            raise InvalidIdError(f"{node_id!r}: empty part in id")
        return parts
    parts: list[str] = []
    position, end = 0, len(node_id)
    while True:
        if position < end and node_id[position] == _QUOTE:
            name: list[str] = []
            position += 1
            while True:
                close = node_id.find(_QUOTE, position)
                if close < 0:
                    raise InvalidIdError(f"{node_id!r}: unterminated backtick in id")
                name.append(node_id[position:close])
                if node_id.startswith(_QUOTE * 2, close):
                    name.append(_QUOTE)
                    position = close + 2
                    continue
                position = close + 1
                break
            parts.append("".join(name))
            if position < end and node_id[position] != ".":
                raise InvalidIdError(f"{node_id!r}: text after a closing backtick in id")
        else:
            dot = node_id.find(".", position)
            stop = end if dot < 0 else dot
            part = node_id[position:stop]
            if not part or _QUOTE in part:
                raise InvalidIdError(f"{node_id!r}: empty part or stray backtick in id")
            parts.append(part)
            position = stop
        if position >= end:
            return parts
        position += 1  # the dot
        if position >= end:
            raise InvalidIdError(f"{node_id!r}: empty part in id")


def canonical(node_id: str) -> str:
    """The one spelling of an id (quotes only where needed): ods.`t` is ods.t."""
    return join(*split(node_id))


def parent(node_id: str) -> str:
    """The id without its last part: a column's table, a table's database."""
    if _QUOTE not in node_id:
        return node_id.rpartition(".")[0]
    return join(*split(node_id)[:-1])


def name(node_id: str) -> str:
    """The last part of an id, unquoted: a column's name, a table's name."""
    if _QUOTE not in node_id:
        return node_id.rpartition(".")[2]
    return split(node_id)[-1]


def split_last(node_id: str) -> tuple[str, str]:
    """`(parent, name)`: for a column id, its table id and its name."""
    if _QUOTE not in node_id:
        head, _, tail = node_id.rpartition(".")
        return head, tail
    parts = split(node_id)
    return join(*parts[:-1]), parts[-1]


def depth(node_id: str) -> int:
    """How many names the id is made of (2 for today's tables, 3 for their columns)."""
    if _QUOTE not in node_id:
        return node_id.count(".") + 1
    return len(split(node_id))
