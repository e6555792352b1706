"""The tag policy of a CLI command: the `--policy` option's help, and the policy with a bad file as one error line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from watershed.api.cli.output import fail

if TYPE_CHECKING:
    from watershed.propagation.policy import Policy

POLICY_HELP = "The YAML tag policy (default: WATERSHED_POLICY_FILE, else the built-in policy)."


def command_policy(path: Path | None = None) -> Policy:
    """The service's tag policy (`path`, else WATERSHED_POLICY_FILE, else the built-in one)."""
    # imported here: loading the policy module is the cost of a command that needs it, not of `watershed --help`
    from watershed.api.service.policy import tag_policy
    from watershed.graph.errors import PolicyError

    try:
        return tag_policy(path)
    except PolicyError as exc:
        fail(str(exc))


__all__ = ["POLICY_HELP", "command_policy"]
