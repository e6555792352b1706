"""Tags are checked against the policy once (seeds, `tag set`, `tag block`); a run failed by bad input is over.

Item 18 of issue 11: a seed with an unknown level passed validation, crashed the
run and left every later run "resuming" it; a misspelt top-level key silently
dropped all seeds; `tag block` took keys the policy lacks.
"""

from __future__ import annotations

import os

import pytest

from tests.support.cli import invoke
from watershed.propagation.policy import Policy, PolicyError, default_policy
from watershed.propagation.run_state import RunState

LEVELS = (
    "sensitivity:\n  pii:\n    levels: [L1, L2, L3, L4]\n    types_key: pii_type\n    types: [ssn, email]\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (LEVELS + "seeds:\n  - {pattern: '*ssn*', tags: {pii: L9}}\n", "seeds[0] (*ssn*): pii=L9"),
        (LEVELS + "seeds:\n  - {pattern: '*ssn*', tags: {pii_type: passport}}\n", "passport: not a pii_type"),
        (LEVELS + "seeds:\n  - {pattern: '*x*', tags: {colour: red}}\n", "colour: not a tag of the policy"),
        (LEVELS + "seed:\n  - {pattern: '*ssn*', tags: {pii: L4}}\n", "seed: unknown key"),
        (LEVELS + "seeds:\n  - {pattern: '*ssn*', tag: {pii: L4}}\n", "seeds.0.tag: unknown key"),
        ("sensitivity:\n  pii:\n    levels: [L1]\n    level: L1\n", "sensitivity.pii.level: unknown key"),
    ],
)
def test_policy_seeds_and_keys_are_validated(tmp_path, text, message):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as error:
        Policy.load(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)


def test_one_check_for_seeds_and_stewards_tags():
    policy = default_policy()
    policy.check_tag("pii", ["L3"])
    policy.check_tag("app", ["douyin", "toutiao"])
    for key, values in (("pii", ["L9"]), ("app", ["tiktok"]), ("colour", ["red"]), ("pii", ["L1", "L2"])):
        with pytest.raises(ValueError, match=key):
            policy.check_tag(key, values)


def test_tag_block_refuses_a_key_the_policy_lacks(cli_env):
    result = invoke("tag", "block", "ods.users.uid", "colour")
    assert result.exit_code == 1
    assert "colour: not a tag of the policy" in " ".join(result.output.split())
    assert invoke("tag", "block", "ods.users.uid", "pii").exit_code == 0


@pytest.mark.parametrize("where", ["--local", "workers"])
def test_a_run_failed_by_bad_input_is_marked_failed_and_not_resumed(cli_env, tmp_path, workers, where):
    """A steward's tag that a narrower policy lacks fails the run; the next run starts anew and says why."""
    narrower = tmp_path / "policy.yaml"
    narrower.write_text("sensitivity:\n  pii:\n    levels: [L1, L2, L3]\n")
    local = ["--local"] if where == "--local" else []
    assert invoke("tag", "set", "ods.users.uid", "pii=L4").exit_code == 0

    failed = invoke("propagate", *local, "--policy", str(narrower))
    assert failed.exit_code == 1, failed.output
    flat = " ".join(failed.output.split())
    assert "do not fit the policy" in flat and "'L4' is not in list" in flat and "failed" in flat
    assert "Traceback" not in failed.output
    state = RunState.from_url(os.environ["WATERSHED_CELERY_BROKER"], cli_env.graph_name)
    record = state.current()
    assert record.status == "failed" and "do not fit the policy" in record.error

    assert invoke("tag", "unset", "ods.users.uid", "pii").exit_code == 0
    after = invoke("propagate", *local, "--policy", str(narrower))
    assert after.exit_code == 0, after.output
    assert f"the previous run {record.run_id} failed" in after.output
    assert "resuming" not in after.output
    done = state.current()
    assert done.run_id != record.run_id and done.status == "done" and done.mode == "full"
