"""`watershed tag` and `watershed propagate` against FalkorDB and the Celery Redis."""

from __future__ import annotations

import pytest

from tests.support.cli import invoke


def test_set_propagate_show_and_why(cli_env):
    result = invoke("tag", "set", "ods.users.uid", "pii=L2", "pii_type=id_card", "--by", "alice")
    assert result.exit_code == 0, result.output
    result = invoke("propagate", "--local")
    assert result.exit_code == 0, result.output
    assert "full run" in result.output and "layer   0" in result.output

    shown = invoke("tag", "show", "dws.all_apps.uid")
    assert shown.exit_code == 0, shown.output
    assert "pii" in shown.output and "L2" in shown.output and "propagated" in shown.output

    why = invoke("tag", "why", "dws.all_apps.uid", "pii")
    assert why.exit_code == 0, why.output
    for hop in ("ods.users.uid", "dwd.douyin.uid", "dwd.xigua.uid", "t_union", "t_eq", "(manual)"):
        assert hop in why.output
    assert "2 path(s) to a seed" in why.output
    assert "[direct]" in why.output and "rule keep" in why.output

    own = invoke("tag", "show", "ods.users.uid")
    assert "by alice" in own.output and "pii=L2 (manual)" in own.output


def test_incremental_run_after_unset(cli_env):
    invoke("tag", "set", "ods.users.uid", "pii=L2")
    invoke("propagate", "--local")
    assert invoke("tag", "unset", "ods.users.uid", "pii").exit_code == 0
    result = invoke("propagate", "--local", "--format", "json")
    assert result.exit_code == 0 and '"mode": "incremental"' in result.output
    assert invoke("tag", "why", "dws.all_apps.uid", "pii").exit_code == 1


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (("tag", "set", "ods.users.uid", "pii=L9"), "a pii tag is one level of", 1),
        (("tag", "set", "ods.users.uid", "colour=red"), "colour: not a tag of the policy", 1),
        (("tag", "set", "ods.users.uid", "app=tiktok"), "tiktok: not a value of app", 1),
        (("tag", "set", "ods.users.uid", "pii"), "expected KEY=VALUE", 2),
        (("tag", "set", "ods.nope.uid", "pii=L2"), "ods.nope.uid: no such column", 1),
        (("tag", "set", "nodots", "pii=L2"), "expected db.table or db.table.column", 2),
        (("tag", "unset", "ods.users.uid", "pii"), "no steward's tag pii", 1),
        (("tag", "unblock", "ods.users.uid", "pii"), "pii is not blocked", 1),
        (("tag", "why", "ods.users.uid", "pii"), "has no pii tag", 1),
    ],
)
def test_bad_input_is_a_clear_error(cli_env, args, message, code):
    """Bad input is a failure (exit 1); a malformed argument is a usage error (exit 2)."""
    result = invoke(*args)
    assert result.exit_code == code
    assert message in " ".join(result.output.split())


def test_bad_policy_file_names_the_key(cli_env, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("sensitivity:\n  pii:\n    levels: [L1, L1]\n")
    result = invoke("propagate", "--local", "--policy", str(policy))
    assert result.exit_code == 1 and "sensitivity.pii" in result.output


def test_propagate_without_workers_says_how_to_start_one(cli_env, monkeypatch):
    monkeypatch.setattr(
        "watershed.api.service.propagation_runs.workers_alive", lambda settings, app=None, timeout=2.0: 0
    )
    result = invoke("propagate")
    assert result.exit_code == 1 and "watershed worker" in result.output


def test_names_that_look_like_markup_print_literally(cli_env):
    """`tag set`, `tag show`, `tag why` and `graph lineage` print identifiers such as `[red]x` and `[/]` as they are."""
    from tests.support.rules_warehouse import load

    load(cli_env, {"t_markup": "INSERT OVERWRITE TABLE dw.`[/]` SELECT `[red]x` AS `[/]` FROM ods.`[b]t`"})
    source, target = "ods.[b]t.[red]x", "dw.[/].[/]"
    result = invoke("tag", "set", source, "pii=L3", "--by", "[bold]eve")
    assert result.exit_code == 0, result.output
    assert source in result.output
    assert invoke("propagate", "--local").exit_code == 0

    shown = invoke("tag", "show", target)
    assert shown.exit_code == 0, shown.output
    assert target in shown.output and source in shown.output and "t_markup" in shown.output
    own = invoke("tag", "show", source)
    assert "by [bold]eve" in own.output and "pii=L3 (manual)" in own.output

    why = invoke("tag", "why", target, "pii")
    assert why.exit_code == 0, why.output
    assert f"{target} pii=L3 (propagated)" in why.output and f"{source} pii=L3 (manual)" in why.output
    assert "[direct]" in why.output

    lineage = invoke("graph", "lineage", target)
    assert lineage.exit_code == 0, lineage.output
    assert target in lineage.output and source in lineage.output
