"""A tokenizer, a parser and a generator per dialect and thread, shared by everything in `ingest`
that parses or writes SQL.

Building them costs more than parsing a small statement (or writing an identifier), and sqlglot's
own `parse` and `Expression.sql` build them on every call. A parser and a generator reset
themselves at each `parse` / `generate`, so one per thread is safe to reuse.

`ansi` (and the empty name) is sqlglot's generic dialect: standard SQL that is no one engine's.
"""

from __future__ import annotations

import threading

from sqlglot.dialects.dialect import Dialect
from sqlglot.generator import Generator
from sqlglot.parser import Parser
from sqlglot.tokens import Tokenizer


class Ansi(Dialect):
    """sqlglot's generic dialect under the name `ansi`, for SQL written to the standard rather
    than to one engine. Defining the class registers the name with sqlglot (its documented way to
    add a dialect), so every `read=`/`dialect=` that takes a name takes this one too."""


class _DialectTools(threading.local):
    def __init__(self) -> None:
        self.by_name: dict[str, tuple[Dialect, Tokenizer, Parser]] = {}
        self.generators: dict[str, Generator] = {}


_tools = _DialectTools()


def dialect_tools(name: str) -> tuple[Dialect, Tokenizer, Parser]:
    """The dialect `name` (lower case; `ansi` or "" for sqlglot's generic one), with this thread's
    tokenizer and parser of it; ValueError (sqlglot's) for a dialect sqlglot does not know."""
    tools = _tools.by_name.get(name)
    if tools is None:
        dialect = Dialect.get_or_raise(name)
        tools = _tools.by_name[name] = (dialect, dialect.tokenizer(), dialect.parser())
    return tools


def dialect_generator(name: str) -> Generator:
    """This thread's generator of the dialect `name` (lower case), with the dialect's default
    settings; ValueError as `dialect_tools`."""
    generator = _tools.generators.get(name)
    if generator is None:
        generator = _tools.generators[name] = dialect_tools(name)[0].generator()
    return generator
