"""Protection runs: a plan, an apply and a rewrap, written once for every face.

Called by `watershed protect plan|apply|rewrap` (api/cli/protect.py, api/cli/protect_apply.py),
the service's plan and background apply (api/http/routers/protection.py, api/http/protect_runs.py)
and the nightly chain's protection steps (api/service/nightly/steps.py). Which KMS each of them talks to is
the one rule of graph/protection.py (`kms_uri`): the URI the face was given (its --kms option or its
setting, named `given_as` in errors), else the policy's (or the plan's) kms:// provider path.

Each face keeps its own way of saying an error (a CLI line, an HTTP status, a nightly step's
error) and its own audit actor; what a run counts is `run_counts`, one dict for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from watershed.api.service.audit import record
from watershed.graph.errors import WatershedError
from watershed.graph.protection import (
    ProtectionPlan,
    ProtectionPolicy,
    ProtectionRun,
    ddl_provider_path,
    kms_uri,
)
from watershed.graph.store import GraphStore
from watershed.orc_crypto.keys.base import KeyProvider, KeyProviderError
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.protect.plan import now, plan_protection
from watershed.orc_crypto.protect.spark_apply import apply_plan, rewrap_files
from watershed.propagation.policy import Policy

#: files finished so far and files in the run, as an apply or a rewrap moves on
Progress = Callable[[int, int], None]


class ProtectionRunError(WatershedError, RuntimeError):
    """A protection run cannot start: its KMS is unusable or missing; the message names it."""


def protection_section(policy: Policy) -> ProtectionPolicy | None:
    """The tag policy's protection section, or None when it has no rules (nothing to protect)."""
    protection = policy.protection
    return protection if protection is not None and protection.rules else None


def kms_client(uri: str | None, *, token_file: Path | None = None) -> KmsClient | None:
    """A client of the KMS at `uri` (None for no URI); ProtectionRunError naming the URI when it
    cannot be one. `token_file` holds the delegation token (default: Hadoop's own token files)."""
    if uri is None:
        return None
    try:
        return KmsClient(uri, token_file=token_file)
    except (KeyProviderError, ValueError) as exc:
        raise ProtectionRunError(f"KMS {uri}: {exc}") from None


def plan(
    store: GraphStore,
    policy: ProtectionPolicy,
    *,
    kms: str | None = None,
    given_as: str = "--kms",
    tables: list[str] | None = None,
    read_files: bool = True,
    create: bool = False,
    provider: KeyProvider | None = None,
    token_file: Path | None = None,
    keys: bool = True,
    incremental: bool = False,
) -> ProtectionPlan:
    """What protecting the sensitive columns of `tables` (default: every table) would change.

    `incremental` (the nightly chain's whole-graph plan): only the tables whose tags, catalog
    entry, record or files changed since the last incremental plan are planned again, the others'
    plans carried forward from the graph (orc_crypto/protect/plan.py; the same plan as a full one).

    With a KMS (the rule's) and `keys`, every key the policy names must exist there (checked
    through `provider` when the caller holds one open, else through a client opened for the plan).
    The DDL names the KMS, else the policy's provider path.
    """
    uri = kms_uri(kms, policy.key_provider_path, given_as=given_as)
    opened = kms_client(uri, token_file=token_file) if provider is None and keys else None
    try:
        return plan_protection(
            store,
            policy,
            tables=tables,
            provider=(provider or opened) if keys else None,
            read_files=read_files,
            create=create,
            key_provider_path=ddl_provider_path(kms, policy.key_provider_path, given_as=given_as),
            incremental=incremental,
        )
    finally:
        if opened is not None:
            opened.close()


def empty_plan(
    policy: ProtectionPolicy, *, kms: str | None = None, given_as: str = "--kms"
) -> ProtectionPlan:
    """The plan of no table (a page past the catalog's end), as `plan` would have made it."""
    return ProtectionPlan(
        created_at=now(),
        policy_digest=policy.digest(),
        key_provider_path=ddl_provider_path(kms, policy.key_provider_path, given_as=given_as),
    )


def apply(
    store: GraphStore,
    planned: ProtectionPlan,
    *,
    kms: str | None = None,
    given_as: str = "--kms",
    spark=None,
    provider: KeyProvider | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
    token_file: str | None = None,
) -> ProtectionRun:
    """Apply `planned`: the DDL and the file rewrites on Spark (`spark`), or the files in this
    process through `provider` or the rule's KMS; the run record, also kept in the graph."""
    return apply_plan(
        planned,
        store,
        spark=spark,
        kms=kms_uri(kms, planned.key_provider_path, given_as=given_as),
        token_file=token_file,
        provider=provider,
        progress=progress,
        run_id=run_id,
    )


def rewrap_kms(policy: ProtectionPolicy | None, kms: str | None, *, given_as: str = "--kms") -> str:
    """The KMS a rewrap re-keys through (the rule's); ProtectionRunError when there is none."""
    uri = kms_uri(kms, policy.key_provider_path if policy else None, given_as=given_as)
    if uri is None:
        raise ProtectionRunError(
            f"rewrap needs the KMS: give {given_as} kms://http@HOST:PORT/kms (or set the policy's key_provider_path)"
        )
    return uri


def rewrap(
    store: GraphStore,
    uri: str,
    *,
    tables: list[str] | None = None,
    spark=None,
    progress: Progress | None = None,
) -> ProtectionRun:
    """After `watershed kms roll KEY`: the protected files of `tables` (default: all) re-keyed to
    their master keys' current versions through the KMS at `uri` (see `rewrap_kms`)."""
    return rewrap_files(store, tables=tables, spark=spark, kms=uri, progress=progress)


def run_counts(run: ProtectionRun) -> dict[str, int | str]:
    """What a run did, in numbers: what its audit entry and a nightly step's result hold (no KMS
    address, token or key material)."""
    return {
        "status": run.status,
        "tables": run.tables,
        "files_done": run.files_done,
        "files_unchanged": run.files_unchanged,
        "files_skipped": len(run.skipped),
        "files_failed": len(run.errors),
        "bytes_rewritten": run.bytes_rewritten,
    }


def audit_run(store: GraphStore, actor: str, action: str, run: ProtectionRun, /, **extra) -> None:
    """The audit entry of a finished run: its counts and what the face adds (`extra`)."""
    record(store, actor, action, f"protection-run:{run.id}", None, {**extra, **run_counts(run)})
