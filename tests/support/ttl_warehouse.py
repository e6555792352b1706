"""The hand-made warehouse of the TTL advice tests, whose windows are known: its catalog and one
task per predicate form (tests/ttl_advisor/)."""

from __future__ import annotations

CATALOG = {
    "tables": {
        "ods.events": {
            "columns": [
                "uid",
                "app",
                "a_eq",
                "b_ge",
                "c_gt",
                "d_diff",
                "e_between",
                "f_in",
                "g_hour",
                "h_old",
            ],
            "partitioned_by": ["dt", "hour"],
            "ttl_days": 365,
        },
        "ods.profile": {
            "columns": ["uid", "email", "phone", "unused_col"],
            "partitioned_by": ["dt"],
            "ttl_days": 30,
        },
        "ods.logs": {"columns": ["uid", "msg", "level"], "partitioned_by": ["dt"], "ttl_days": 90},
    }
}

# One task per predicate form; each reads one column of ods.events over a known window.
TASKS = {
    "t_eq": "INSERT OVERWRITE TABLE dw.o1 SELECT a_eq FROM ods.events WHERE dt = '${date}'",
    "t_ge": "INSERT OVERWRITE TABLE dw.o2 SELECT b_ge FROM ods.events WHERE dt >= date_sub('${date}', 20)",
    "t_gt": "INSERT OVERWRITE TABLE dw.o3 SELECT c_gt FROM ods.events WHERE dt > date_add('${date}', -7)",
    "t_diff": "INSERT OVERWRITE TABLE dw.o4 SELECT d_diff FROM ods.events WHERE datediff('${date}', dt) <= 13",
    "t_between": (
        "INSERT OVERWRITE TABLE dw.o5 SELECT e_between FROM ods.events "
        "WHERE dt BETWEEN date_add('${date}', -29) AND '${date}'"
    ),
    "t_in": (
        "INSERT OVERWRITE TABLE dw.o6 SELECT f_in FROM ods.events "
        "WHERE dt IN ('${date}', date_sub('${date}', 7), date_sub('${date}', 44))"
    ),
    "t_hour": "INSERT OVERWRITE TABLE dw.o7 SELECT g_hour FROM ods.events WHERE dt = '${date}' AND hour = '10'",
    "t_old_a": "INSERT OVERWRITE TABLE dw.o8 SELECT h_old FROM ods.events WHERE dt = '${date}'",
    "t_old_b": "INSERT OVERWRITE TABLE dw.o9 SELECT h_old FROM ods.events WHERE dt >= date_sub('${date}', 89)",
    # profile: email read over 60 days, more than the table keeps -> capped at 30
    "t_cap": "INSERT OVERWRITE TABLE dw.p1 SELECT email FROM ods.profile WHERE dt >= date_sub('${date}', 59)",
    # phone used only as a filter (a weak reference) over 2 days
    "t_weak": "INSERT OVERWRITE TABLE dw.p2 SELECT uid FROM ods.profile WHERE dt >= date_sub('${date}', 1) AND phone IS NOT NULL",
    # logs: msg read with no partition filter; level with an unparseable one
    "t_unbounded": "INSERT OVERWRITE TABLE dw.l1 SELECT msg FROM ods.logs",
    "t_unparsed": "INSERT OVERWRITE TABLE dw.l2 SELECT level FROM ods.logs WHERE dt LIKE '2024%'",
}
