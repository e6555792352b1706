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
