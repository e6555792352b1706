"""A tokenizer and a parser per dialect and thread, shared by everything in `ingest` that parses.

Building them costs more than parsing a small statement, and sqlglot's own `parse` builds both
on every call. A parser resets itself at each `parse`, so one per thread is safe to reuse.
"""

from __future__ import annotations

import threading

from sqlglot.dialects.dialect import Dialect
from sqlglot.parser import Parser
from sqlglot.tokens import Tokenizer


class _DialectTools(threading.local):
    def __init__(self) -> None:
        self.by_name: dict[str, tuple[Dialect, Tokenizer, Parser]] = {}


_tools = _DialectTools()


def dialect_tools(name: str) -> tuple[Dialect, Tokenizer, Parser]:
    """The dialect `name` (lower case), with this thread's tokenizer and parser of it; ValueError
    (sqlglot's) for a dialect sqlglot does not know."""
    tools = _tools.by_name.get(name)
    if tools is None:
        if not name:
            # sqlglot's base dialect: no real engine's SQL
            raise ValueError("no dialect given")
        dialect = Dialect.get_or_raise(name)
        tools = _tools.by_name[name] = (dialect, dialect.tokenizer(), dialect.parser())
    return tools
