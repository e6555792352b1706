"""Names of the functions on a lineage path, as Hive spells them.

sqlglot parses many Hive functions into typed expressions (`nvl` becomes
`Coalesce`, `date_sub` becomes `TsOrDsAdd`); propagation rules are keyed by the
Hive name, so the typed expressions are mapped back here. Functions sqlglot
does not know keep the name they were written with.
"""

from __future__ import annotations

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


def spark_column_name(node: exp.Expression) -> str | None:
    """The name Spark gives an unaliased select item (`upper(name)`, `(a + 1)`, `count(1)`), the
    text of its analysed expression; None when the expression is too deep to name that way."""
    try:
        return _spark_text(node, 0)
    except _TooDeep:
        return None


def _spark_args(node: exp.Expression, depth: int) -> str:
    parts: list[str] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if value is None or isinstance(value, bool | str):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression):
                parts.append(_spark_text(item, depth))
    return ", ".join(parts)


def _spark_text(node: exp.Expression, depth: int) -> str:
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
        return f"({_spark_text(node.this, depth)} {operator} {_spark_text(node.expression, depth)})"
    if cls is exp.NEQ:
        return f"(NOT ({_spark_text(node.this, depth)} = {_spark_text(node.expression, depth)}))"
    if cls is exp.DPipe:
        return f"concat({_spark_text(node.this, depth)}, {_spark_text(node.expression, depth)})"
    if cls is exp.Neg:
        return f"(- {_spark_text(node.this, depth)})"
    if cls is exp.Not:
        inner = node.this
        if type(inner) is exp.Is:
            return f"({_spark_text(inner.this, depth)} IS NOT NULL)"
        return f"(NOT {_spark_text(inner, depth)})"
    if cls is exp.Is:
        return f"({_spark_text(node.this, depth)} IS NULL)"
    if cls is exp.Like:
        return f"{_spark_text(node.this, depth)} LIKE {_spark_text(node.expression, depth)}"
    if cls is exp.In:
        values = ", ".join(_spark_text(v, depth) for v in node.expressions)
        return f"({_spark_text(node.this, depth)} IN ({values}))"
    if cls is exp.Between:
        return f"between({_spark_text(node.this, depth)}, {_spark_text(node.args['low'], depth)}, {_spark_text(node.args['high'], depth)})"
    if cls is exp.Cast or cls is exp.TryCast:
        # a cast is named after what it casts
        return _spark_text(node.this, depth)
    if cls is exp.Bracket:
        index = ", ".join(_spark_text(i, depth) for i in node.expressions)
        return f"{_spark_text(node.this, depth)}[{index}]"
    if cls is exp.Case:
        operand = node.args.get("this")
        parts = ["CASE"]
        for branch in node.args.get("ifs") or []:
            condition = _spark_text(branch.this, depth)
            if operand is not None:
                # `CASE x WHEN v` is analysed as `CASE WHEN (x = v)`
                condition = f"({_spark_text(operand, depth)} = {condition})"
            parts.append(f"WHEN {condition} THEN {_spark_text(branch.args['true'], depth)}")
        default = node.args.get("default")
        if default is not None:
            parts.append(f"ELSE {_spark_text(default, depth)}")
        parts.append("END")
        return " ".join(parts)
    if cls is exp.If:
        false = node.args.get("false")
        false_text = _spark_text(false, depth) if false is not None else "NULL"
        return f"(IF({_spark_text(node.this, depth)}, {_spark_text(node.args['true'], depth)}, {false_text}))"
    if cls is exp.Count:
        inner = node.this
        if inner is None or type(inner) is exp.Star:
            return "count(1)"
        return f"count({_spark_text(inner, depth)})"
    if cls is exp.Distinct:
        return "DISTINCT " + ", ".join(_spark_text(e, depth) for e in node.expressions)
    if cls is exp.TsOrDsAdd:
        days = node.expression
        if type(days) is exp.Mul and type(days.expression) is exp.Neg:
            # `date_sub(dt, n)` parses as a date_add of n * -1
            return f"date_sub({_spark_text(node.this, depth)}, {_spark_text(days.this, depth)})"
        return f"date_add({_spark_text(node.this, depth)}, {_spark_text(days, depth)})"
    if cls is exp.JSONExtractScalar or cls is exp.JSONExtract:
        path = node.expression
        path_text = path.this if isinstance(path, exp.Literal) else path.sql().strip("'")
        return f"get_json_object({_spark_text(node.this, depth)}, {path_text})"
    if cls is exp.Window:
        return _spark_window(node, depth)
    if isinstance(node, exp.Func):
        if cls is exp.Anonymous:
            return f"{str(node.this).lower()}({', '.join(_spark_text(e, depth) for e in node.expressions)})"
        return f"{function_name(node)}({_spark_args(node, depth)})"
    raise _TooDeep  # a form this naming does not know


def _spark_window(node: exp.Window, depth: int) -> str:
    function = node.this
    text = _spark_text(function, depth)
    spec: list[str] = []
    partition = node.args.get("partition_by") or []
    if partition:
        spec.append("PARTITION BY " + ", ".join(_spark_text(p, depth) for p in partition))
    order = node.args.get("order")
    if order is not None:
        items = []
        for item in order.expressions:
            desc = bool(item.args.get("desc"))
            nulls_first = item.args.get("nulls_first")
            nulls = ("NULLS FIRST" if nulls_first else "NULLS LAST") if nulls_first is not None else ""
            if not nulls:
                nulls = "NULLS LAST" if desc else "NULLS FIRST"
            items.append(f"{_spark_text(item.this, depth)} {'DESC' if desc else 'ASC'} {nulls}")
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
