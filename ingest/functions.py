"""Names of the functions on a lineage path, as Hive spells them.

sqlglot parses many Hive functions into typed expressions (`nvl` becomes
`Coalesce`, `date_sub` becomes `TsOrDsAdd`); propagation rules are keyed by the
Hive name, so the typed expressions are mapped back here. Functions sqlglot
does not know keep the name they were written with.
"""

from __future__ import annotations

import re
from typing import cast

from sqlglot import exp

_HIVE_NAMES: dict[type[exp.Expression], str] = {
    exp.AddMonths: "add_months",
    exp.ApproxDistinct: "approx_count_distinct",
    exp.ApproxQuantile: "percentile_approx",
    exp.ArrayAgg: "collect_list",
    exp.ArrayContains: "array_contains",
    exp.ArraySize: "size",
    exp.ArraySort: "sort_array",
    exp.ArrayToString: "array_join",
    exp.ArrayUniqueAgg: "collect_set",
    exp.CastToStrType: "cast",
    exp.Coalesce: "coalesce",
    exp.ConcatWs: "concat_ws",
    exp.DPipe: "concat",
    exp.DateDiff: "datediff",
    exp.FromBase64: "unbase64",
    exp.JSONExtractScalar: "get_json_object",
    exp.JSONExtract: "get_json_object",
    exp.JSONFormat: "to_json",
    exp.Lower: "lower",
    exp.Upper: "upper",
    exp.MD5: "md5",
    exp.Quantile: "percentile",
    exp.RegexpSplit: "split",
    exp.SHA: "sha1",
    exp.SHA2: "sha2",
    exp.StrPosition: "instr",
    exp.StrToUnix: "unix_timestamp",
    exp.Struct: "named_struct",
    exp.Substring: "substr",
    exp.TimeToStr: "date_format",
    exp.TimestampTrunc: "trunc",
    exp.ToBase64: "base64",
    exp.TsOrDsAdd: "date_add",
    exp.TsOrDsToDate: "to_date",
    exp.UnixToStr: "from_unixtime",
    exp.VarMap: "map",
    exp.Variance: "variance",
    exp.VariancePop: "var_pop",
    exp.Cast: "cast",
    exp.TryCast: "cast",
}

_cache: dict[type[exp.Expression], str] = {}


def function_name(node: exp.Expression) -> str:
    """The lower-case Hive name of a function or operator node."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    cls = type(node)
    name = _cache.get(cls)
    if name is None:
        name = _HIVE_NAMES.get(cls)
        if name is None:
            name = node.sql_name().lower() if isinstance(node, exp.Func) else node.key
        _cache[cls] = name
    if cls is exp.Count and isinstance(node.this, exp.Distinct):
        return "count_distinct"
    if cls is exp.Pad:
        return "lpad" if node.args.get("is_left") else "rpad"
    return name


# ------------------------------------------------------------ engine column names

#: Spark's text of the binary operators in a column name (`(a + 1)`, `((a > 1) AND (b < 2))`)
_SPARK_OPERATORS: dict[type[exp.Expression], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.IntDiv: "div",
    exp.EQ: "=",
    exp.NullSafeEQ: "<=>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.And: "AND",
    exp.Or: "OR",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseXor: "^",
}

#: ranking functions: with ORDER BY their default frame is ROWS ... CURRENT ROW
_RANKING = frozenset({"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile"})

#: a deeper expression is not named after its text (a generated thousand-term sum)
_MAX_NAME_DEPTH = 64


class _TooDeep(Exception):
    pass


def spark_column_name(node: exp.Expression, sql: str | None = None) -> str | None:
    """The name Spark gives an unaliased select item (`upper(name)`, `(a + 1)`, `count(1)`), the
    text of its analysed expression; None when the expression is too deep to name that way.

    `sql`, the text the statement was parsed from, gives functions the name they were written
    with, as Spark keeps it (`nvl(a, b)`, `ucase(n)`, which sqlglot parses as `coalesce`/`upper`).
    """
    try:
        return _spark_text(node, 0, sql)
    except _TooDeep:
        return None


_WRITTEN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _written_name(node: exp.Expression, sql: str | None) -> str | None:
    """The function name as written, from the parser's position of its name token in `sql`."""
    if sql is None:
        return None
    meta = node.meta
    start, end = meta.get("start"), meta.get("end")
    if start is None or end is None or end >= len(sql):
        return None
    name = sql[start : end + 1]
    # a node parsed from another text (a temporary view of an earlier batch) must not borrow
    # whatever stands at its offsets here: only a name followed by its parenthesis counts
    if _WRITTEN_NAME.fullmatch(name) is None or not sql[end + 1 :].lstrip().startswith("("):
        return None
    return name.lower()


def _spark_args(node: exp.Expression, depth: int, sql: str | None) -> str:
    parts: list[str] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if value is None or isinstance(value, bool | str):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression):
                parts.append(_spark_text(item, depth, sql))
    return ", ".join(parts)


def _spark_text(node: exp.Expression, depth: int, sql: str | None) -> str:
    depth += 1
    if depth > _MAX_NAME_DEPTH:
        raise _TooDeep
    cls = type(node)
    while cls is exp.Paren or cls is exp.Alias:
        node = node.this
        cls = type(node)
    if cls is exp.Column or cls is exp.Dot:
        # qualifiers and the struct a field is taken from are not part of the name
        return node.name.lower()
    if cls is exp.Literal:
        return str(node.this)
    if cls is exp.Boolean:
        return "true" if node.this else "false"
    if cls is exp.Null:
        return "NULL"
    if cls is exp.Star:
        return "*"
    operator = _SPARK_OPERATORS.get(cls)
    if operator is not None:
        return f"({_spark_text(node.this, depth, sql)} {operator} {_spark_text(node.expression, depth, sql)})"
    if cls is exp.NEQ:
        return f"(NOT ({_spark_text(node.this, depth, sql)} = {_spark_text(node.expression, depth, sql)}))"
    if cls is exp.DPipe:
        return f"concat({_spark_text(node.this, depth, sql)}, {_spark_text(node.expression, depth, sql)})"
    if cls is exp.Neg:
        return f"(- {_spark_text(node.this, depth, sql)})"
    if cls is exp.Not:
        inner = node.this
        if type(inner) is exp.Is:
            return f"({_spark_text(inner.this, depth, sql)} IS NOT NULL)"
        return f"(NOT {_spark_text(inner, depth, sql)})"
    if cls is exp.Is:
        return f"({_spark_text(node.this, depth, sql)} IS NULL)"
    if cls is exp.Like:
        return f"{_spark_text(node.this, depth, sql)} LIKE {_spark_text(node.expression, depth, sql)}"
    if cls is exp.In:
        values = ", ".join(_spark_text(v, depth, sql) for v in node.expressions)
        return f"({_spark_text(node.this, depth, sql)} IN ({values}))"
    if cls is exp.Between:
        return f"between({_spark_text(node.this, depth, sql)}, {_spark_text(node.args['low'], depth, sql)}, {_spark_text(node.args['high'], depth, sql)})"
    if cls is exp.Cast or cls is exp.TryCast:
        # a cast is named after what it casts
        return _spark_text(node.this, depth, sql)
    if cls is exp.Bracket:
        index = ", ".join(_spark_text(i, depth, sql) for i in node.expressions)
        return f"{_spark_text(node.this, depth, sql)}[{index}]"
    if cls is exp.Case:
        operand = node.args.get("this")
        parts = ["CASE"]
        for branch in node.args.get("ifs") or []:
            condition = _spark_text(branch.this, depth, sql)
            if operand is not None:
                # `CASE x WHEN v` is analysed as `CASE WHEN (x = v)`
                condition = f"({_spark_text(operand, depth, sql)} = {condition})"
            parts.append(f"WHEN {condition} THEN {_spark_text(branch.args['true'], depth, sql)}")
        default = node.args.get("default")
        if default is not None:
            parts.append(f"ELSE {_spark_text(default, depth, sql)}")
        parts.append("END")
        return " ".join(parts)
    if cls is exp.If:
        false = node.args.get("false")
        false_text = _spark_text(false, depth, sql) if false is not None else "NULL"
        return f"(IF({_spark_text(node.this, depth, sql)}, {_spark_text(node.args['true'], depth, sql)}, {false_text}))"
    if cls is exp.Count:
        inner = node.this
        if inner is None or type(inner) is exp.Star:
            return "count(1)"
        return f"count({_spark_text(inner, depth, sql)})"
    if cls is exp.Distinct:
        return "DISTINCT " + ", ".join(_spark_text(e, depth, sql) for e in node.expressions)
    if cls is exp.TsOrDsAdd:
        days = node.expression
        if type(days) is exp.Mul and type(days.expression) is exp.Neg:
            # `date_sub(dt, n)` parses as a date_add of n * -1
            return f"date_sub({_spark_text(node.this, depth, sql)}, {_spark_text(days.this, depth, sql)})"
        return f"date_add({_spark_text(node.this, depth, sql)}, {_spark_text(days, depth, sql)})"
    if cls is exp.JSONExtractScalar or cls is exp.JSONExtract:
        path = node.expression
        path_text = path.this if isinstance(path, exp.Literal) else path.sql().strip("'")
        return f"get_json_object({_spark_text(node.this, depth, sql)}, {path_text})"
    if cls is exp.Window:
        return _spark_window(cast(exp.Window, node), depth, sql)
    if cls is exp.TsOrDsToDate and sql is not None and "start" not in node.meta:
        # a to_date sqlglot wrapped around a date function's argument (`dayofmonth(dt)`): not written
        return _spark_text(node.this, depth, sql)
    if isinstance(node, exp.Func):
        if cls is exp.Anonymous:
            return (
                f"{str(node.this).lower()}({', '.join(_spark_text(e, depth, sql) for e in node.expressions)})"
            )
        name = _written_name(node, sql) or function_name(node)
        return f"{name}({_spark_args(node, depth, sql)})"
    raise _TooDeep  # a form this naming does not know


def _spark_window(node: exp.Window, depth: int, sql: str | None) -> str:
    function = node.this
    text = _spark_text(function, depth, sql)
    spec: list[str] = []
    partition = node.args.get("partition_by") or []
    if partition:
        spec.append("PARTITION BY " + ", ".join(_spark_text(p, depth, sql) for p in partition))
    order = node.args.get("order")
    if order is not None:
        items = []
        for item in order.expressions:
            desc = bool(item.args.get("desc"))
            nulls_first = item.args.get("nulls_first")
            nulls = ("NULLS FIRST" if nulls_first else "NULLS LAST") if nulls_first is not None else ""
            if not nulls:
                nulls = "NULLS LAST" if desc else "NULLS FIRST"
            items.append(f"{_spark_text(item.this, depth, sql)} {'DESC' if desc else 'ASC'} {nulls}")
        spec.append("ORDER BY " + ", ".join(items))
    if node.args.get("spec") is not None:
        raise _TooDeep  # an explicit frame: its text is not reproduced
    if order is None:
        spec.append("ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING")
    elif function_name(function) in _RANKING:
        spec.append("ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
    else:
        spec.append("RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
    return f"{text} OVER ({' '.join(spec)})"
