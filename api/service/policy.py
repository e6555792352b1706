"""Which tag policy a command or a run works with: one rule for every face.

Called by the CLI commands that take `--policy` (api/cli/policy_option.py renders its error) and
by the nightly chain (api/service/nightly/steps.py). The HTTP app reads the same setting from its own
settings object (api/http/deps.py).
"""

from __future__ import annotations

from pathlib import Path

from watershed.propagation.policy import Policy, load_policy
from watershed.propagation.settings import PropagationSettings


def tag_policy(path: Path | None = None) -> Policy:
    """The policy file `path`, else WATERSHED_POLICY_FILE, else the built-in policy.

    A bad file raises PolicyError naming the file and the entry.
    """
    return load_policy(path or PropagationSettings().policy_file)


__all__ = ["tag_policy"]
