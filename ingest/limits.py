"""Limits on the analysis of one statement, checked before the expensive part (docs/api.md).

The analysis (sqlglot's parse, then the resolver) is linear in a statement's size, but a
statement can still be large enough, or nested deeply enough, to tie up a worker or exhaust
the stack; and a small statement can be costly (a CTE read twice by each of twenty others is
walked 2^20 times). So each statement is measured on its tokens before it is parsed (its
length first, without tokenizing), and the analysis of a request or a task runs against a
deadline that the extractor checks at each statement and each query scope it enters.

| setting (WATERSHED_…)             | default  | refused with |
|-----------------------------------|----------|--------------|
| `analysis_max_chars`              | 262144   | 413          |
| `analysis_max_tokens`             | 50000    | 413          |
| `analysis_max_depth`              | 100      | 422          |
| `analysis_max_nesting`            | 250      | 422          |
| `analysis_seconds` (a request)    | 10       | 422          |
| `analysis_task_seconds` (a task)  | 600      | 422          |

A breach raises `AnalysisLimitError`, which names the limit, its setting and value. It is no
`ValueError`: the extractor turns those into a statement's error and goes on, while a breach
must stop the whole analysis (an HTTP request is refused, a harvest task fails as a whole).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

from sqlglot.tokens import Token, TokenType

from watershed.graph.errors import WatershedError
from watershed.graph.settings import Count, Seconds, WatershedSettings


class AnalysisLimits(WatershedSettings):
    #: characters of one statement (WATERSHED_ANALYSIS_MAX_CHARS)
    analysis_max_chars: Count = 262_144
    #: tokens of one statement -- words, literals, operators, brackets: a bound on its
    #: expression nodes that is known before parsing (WATERSHED_ANALYSIS_MAX_TOKENS)
    analysis_max_tokens: Count = 50_000
    #: brackets open at once in one statement, with the CASEs, NOTs and prefix signs open
    #: inside them (WATERSHED_ANALYSIS_MAX_DEPTH): sqlglot's parser recurses once or more per
    #: level, and gives up near 500
    analysis_max_depth: Count = 100
    #: expressions nested in one another as the resolver walks them, brackets or not (`a IS
    #: NULL IS NULL …`, `a + b || c + d …`); a chain of one operator family is one level
    #: (WATERSHED_ANALYSIS_MAX_NESTING). The resolver recurses about twice per level, and
    #: Python's stack holds about 1000 calls
    analysis_max_nesting: Count = 250
    #: the analysis of one HTTP request (/authz/*, /lineage/sql) (WATERSHED_ANALYSIS_SECONDS)
    analysis_seconds: Seconds = 10.0
    #: the analysis of one task: a harvested script, or `watershed lineage` of a file
    #: (WATERSHED_ANALYSIS_TASK_SECONDS)
    analysis_task_seconds: Seconds = 600.0


class AnalysisLimitError(WatershedError):
    """A statement or an analysis beyond one of the limits: `setting` names it, `limit` is its
    value, `status` the HTTP answer (413 too large, 422 too deep or too slow)."""

    def __init__(self, message: str, setting: str, limit: float, status: int) -> None:
        super().__init__(message)
        self.setting = setting
        self.limit = limit
        self.status = status


@dataclass(frozen=True)
class _Active:
    limits: AnalysisLimits
    #: time.monotonic() after which the analysis stops, and the setting that set it
    deadline: float | None = None
    seconds: float = 0.0
    setting: str = ""


_active: ContextVar[_Active | None] = ContextVar("watershed_analysis_limits", default=None)


@cache
def default_limits() -> AnalysisLimits:
    """The limits of the settings, read once per process."""
    return AnalysisLimits()


def current_limits() -> AnalysisLimits:
    """The limits in force here: the enclosing `analysis_limits` block's, else the settings'."""
    active = _active.get()
    return active.limits if active is not None else default_limits()


@contextmanager
def analysis_limits(
    limits: AnalysisLimits | None = None, *, deadline: str | None = None
) -> Iterator[AnalysisLimits]:
    """Analyse under `limits` (default: the settings') inside the block, and, with `deadline`
    ("analysis_seconds" or "analysis_task_seconds"), stop it once that many seconds passed."""
    limits = limits or default_limits()
    if deadline is None:
        active = _Active(limits)
    else:
        seconds = float(getattr(limits, deadline))
        active = _Active(limits, time.monotonic() + seconds, seconds, deadline)
    token = _active.set(active)
    try:
        yield limits
    finally:
        _active.reset(token)


def check_deadline() -> None:
    """Raise `AnalysisLimitError` when the enclosing block's deadline has passed (a context
    variable read and a clock reading: called at each statement and query scope)."""
    active = _active.get()
    if active is not None and active.deadline is not None and time.monotonic() > active.deadline:
        raise AnalysisLimitError(
            f"the analysis took longer than the limit of {active.seconds:g} seconds "
            f"(setting {active.setting})",
            active.setting,
            active.seconds,
            422,
        )


def _check_length(length: int, where: str) -> None:
    limit = current_limits().analysis_max_chars
    if length > limit:
        raise AnalysisLimitError(
            f"{where} is {length} characters long, more than the limit of {limit} "
            "(setting analysis_max_chars)",
            "analysis_max_chars",
            limit,
            413,
        )


_OPENING = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE})
_CLOSING = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE})
#: prefix operators: a run of them nests one level each (`- - - x`, `~ ~ x`)
_PREFIX = frozenset(
    {TokenType.DASH, TokenType.PLUS, TokenType.TILDE, TokenType.PIPE_SLASH, TokenType.DPIPE_SLASH}
)
#: tokens that end the operand of every NOT open in the current bracket: a NOT takes in a
#: whole comparison, so `NOT a = NOT b = NOT c …` nests with no bracket at all
_NOT_ENDS = frozenset(
    {
        TokenType.AND,
        TokenType.OR,
        TokenType.COMMA,
        TokenType.SEMICOLON,
        TokenType.WHEN,
        TokenType.THEN,
        TokenType.ELSE,
        TokenType.END,
        TokenType.SELECT,
        TokenType.FROM,
        TokenType.WHERE,
        TokenType.ON,
        TokenType.HAVING,
        TokenType.GROUP_BY,
        TokenType.ORDER_BY,
        TokenType.QUALIFY,
        TokenType.LIMIT,
        TokenType.UNION,
    }
)


def _check_depth(tokens: Sequence[Token], where: str) -> None:
    """Refuse tokens that open more levels at once than sqlglot's parser can take: brackets,
    and inside each the CASEs and NOTs not yet closed and the current run of prefix signs.
    An upper bound from the tokens alone (a NOT ends at the next AND, comma, clause, ...)."""
    limit = current_limits().analysis_max_depth
    # per bracket open: [CASEs, NOTs] open inside it; a stray closing bracket lowers nothing
    frames = [[0, 0]]
    depth = run = 0
    for token in tokens:
        kind = token.token_type
        run = run + 1 if kind in _PREFIX else 0
        if kind in _OPENING:
            frames.append([0, 0])
            depth += 1
        elif kind in _CLOSING:
            if len(frames) > 1:
                cases, nots = frames.pop()
                depth -= 1 + cases + nots
        elif kind is TokenType.CASE:
            frames[-1][0] += 1
            depth += 1
        elif kind is TokenType.NOT:
            frames[-1][1] += 1
            depth += 1
        elif kind in _NOT_ENDS:
            frame = frames[-1]
            depth -= frame[1]
            frame[1] = 0
            if kind is TokenType.END and frame[0]:
                frame[0] -= 1
                depth -= 1
        if depth + run > limit:
            raise AnalysisLimitError(
                f"{where} nests brackets, CASEs, NOTs and signs more than {limit} deep "
                "(setting analysis_max_depth)",
                "analysis_max_depth",
                limit,
                422,
            )


def check_tokens(tokens: Sequence[Token], length: int, where: str = "the statement") -> None:
    """Refuse one statement's tokens (its text `length` characters long) beyond the limits:
    its length, then how deep it nests, then how many tokens it has."""
    _check_length(length, where)
    _check_depth(tokens, where)
    limits = current_limits()
    if len(tokens) > limits.analysis_max_tokens:
        raise AnalysisLimitError(
            f"{where} has {len(tokens)} tokens, more than the limit of {limits.analysis_max_tokens} "
            "(setting analysis_max_tokens)",
            "analysis_max_tokens",
            limits.analysis_max_tokens,
            413,
        )


def check_nesting(level: int, where: str = "the statement") -> None:
    """Refuse an expression the resolver reached `level` levels deep beyond analysis_max_nesting
    (the resolver counts its levels as it walks; a chain of one operator family is one)."""
    limit = current_limits().analysis_max_nesting
    if level > limit:
        raise AnalysisLimitError(
            f"{where} nests expressions more than {limit} deep (setting analysis_max_nesting)",
            "analysis_max_nesting",
            limit,
            422,
        )


def checked_tokens(tokenizer, sql: str) -> list[Token]:
    """`sql` tokenized, once its length passed, and its tokens checked (`check_tokens`): what
    a caller that parses one statement hands to the parser."""
    # the length first: a megabyte takes most of a second to tokenize
    _check_length(len(sql), "the statement")
    tokens = tokenizer.tokenize(sql)
    check_tokens(tokens, len(sql))
    return tokens
