"""Protection applies started from the API: planned and applied in a background thread of this
process, without Spark (each file rewritten here through the KMS, orc_crypto.protect.spark_apply
with spark=None), one at a time.

The run's record (ProtectionRun) is in the graph from the moment the route answers, and
apply_plan updates it as files finish; the files planned and finished so far are kept here too,
so GET /protect/runs/{id} shows progress while this process runs it. An apply is idempotent and
resumable (a file already as planned is left alone), so a run cut short by a restart is finished
by starting another; its record stays `running` and says so (no process holds it).

Without Spark the tables' options (the DDL) are not set: the run records that as one error per
table, and the table page keeps the DDL pending until `watershed protect apply` runs it on Spark.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from watershed.api.http.models import ProtectRunView
from watershed.api.http.problems import ApiProblem
from watershed.api.service import protection_runs
from watershed.api.service.protection_runs import ProtectionRunError, kms_client
from watershed.graph.protection import FileProblem, KmsUriError, ProtectionPolicy, ProtectionRun, kms_uri
from watershed.orc_crypto.protect import records

log = logging.getLogger("watershed.api.protect")

#: runs whose progress this process remembers (the graph keeps every record)
REMEMBERED = 50
#: the setting that gives the service its KMS (ApiSettings.protect_kms), as errors name it
KMS_SETTING = "WATERSHED_PROTECT_KMS"


@dataclass
class _Progress:
    actor: str
    planned: int | None = None
    finished: int = 0


def kms_provider(svc, policy: ProtectionPolicy):
    """A client of the service's KMS (the one rule: WATERSHED_PROTECT_KMS, else the policy's kms://
    provider path); None when neither is set, 503 naming it when it cannot be one."""
    try:
        uri = kms_uri(svc.settings.protect_kms, policy.key_provider_path, given_as=KMS_SETTING)
        return kms_client(uri, token_file=svc.settings.protect_token_file)
    except (KmsUriError, ProtectionRunError) as exc:
        raise ApiProblem(503, str(exc)) from None


class ProtectRunner:
    """Starts applies in a thread, one at a time, and keeps their progress."""

    def __init__(self, svc) -> None:
        self.svc = svc
        self._lock = threading.Lock()
        self._current: str | None = None
        self._progress: OrderedDict[str, _Progress] = OrderedDict()

    @property
    def current(self) -> str | None:
        return self._current

    def start(
        self,
        policy: ProtectionPolicy,
        tables: list[str] | None,
        actor: str,
        *,
        before_start: Callable[[str], None] | None = None,
    ) -> ProtectRunView:
        """Check the policy, its keys and the tables here (errors answer the request), call
        `before_start(run id)` (the audit entry: if it raises, nothing is recorded or started),
        record the run and start it; ApiProblem 409 while another apply of this process runs."""
        from watershed.orc_crypto.protect.checks import ProtectionError, check_keys, check_protection
        from watershed.orc_crypto.protect.plan import now, read_catalog
        from watershed.orc_crypto.protect.spark_apply import new_run_id

        if not self._lock.acquire(blocking=False):
            raise ApiProblem(409, f"protection run {self._current} is in progress; wait for it to end")
        provider = None
        try:
            provider = kms_provider(self.svc, policy)
            if provider is None:
                raise ApiProblem(
                    409,
                    "no KMS to encrypt with: set WATERSHED_PROTECT_KMS (kms://http@HOST:PORT/kms) or "
                    "the policy's protection.key_provider_path",
                )
            try:
                check_protection(policy)
                check_keys(policy, provider)
                if tables is not None:
                    read_catalog(self.svc.graph, tables)
            except ProtectionError as exc:
                raise ApiProblem(404 if str(exc).startswith("unknown table") else 400, str(exc)) from None
            run = ProtectionRun(id=new_run_id(), started_at=now(), policy_digest=policy.digest())
            if before_start is not None:
                before_start(run.id)
            records.save_run(self.svc.graph, run)
            self._remember(run.id, _Progress(actor=actor))
            self._current = run.id
            thread = threading.Thread(
                target=self._run, args=(run, policy, tables, provider), name="protect-apply", daemon=True
            )
            thread.start()
        except BaseException:
            self._current = None
            if provider is not None:
                provider.close()
            self._lock.release()
            raise
        return self._view(run)

    def _remember(self, run_id: str, progress: _Progress) -> None:
        self._progress[run_id] = progress
        while len(self._progress) > REMEMBERED:
            self._progress.popitem(last=False)

    def _run(self, run: ProtectionRun, policy: ProtectionPolicy, tables, provider) -> None:
        from watershed.orc_crypto.protect.plan import now

        progress = self._progress[run.id]

        def moved(finished: int, planned: int) -> None:
            progress.finished, progress.planned = finished, planned

        store = self.svc.graph
        kms = self.svc.settings.protect_kms
        try:
            # the keys were checked through this client when the run started
            planned = protection_runs.plan(
                store, policy, kms=kms, given_as=KMS_SETTING, tables=tables, provider=provider
            )
            progress.planned = planned.files
            protection_runs.apply(
                store,
                planned,
                kms=kms,
                given_as=KMS_SETTING,
                provider=provider,
                progress=moved,
                run_id=run.id,
            )
        except BaseException as exc:  # the thread's end: the run record says why
            log.warning("protection run %s failed: %s", run.id, type(exc).__name__)
            failed = records.run(store, run.id) or run
            failed.status = "failed"
            failed.finished_at = now()
            failed.errors.append(FileProblem(path="-", table="-", error=f"{type(exc).__name__}: {exc}"))
            try:
                records.save_run(store, failed)
            except Exception:  # the graph itself is gone: the log has it
                log.exception("protection run %s: cannot record the failure", run.id)
        finally:
            provider.close()
            self._current = None
            self._lock.release()

    def _view(self, run: ProtectionRun) -> ProtectRunView:
        progress = self._progress.get(run.id)
        # a table whose DDL did not run is an error of the run, not a file
        file_errors = [e for e in run.errors if not e.error.startswith("DDL ") and e.path != "-"]
        finished = run.files_done + run.files_unchanged + len(run.skipped) + len(file_errors)
        view = ProtectRunView(**run.model_dump(), files_finished=finished)
        if progress is not None:
            view.actor = progress.actor
            view.files_planned = progress.planned if progress.planned is not None else run.files_planned
            view.files_finished = max(progress.finished, finished)
        return view

    def view(self, run_id: str) -> ProtectRunView | None:
        found = records.run(self.svc.graph, run_id)
        return None if found is None else self._view(found)

    def view_of(self, record_json: str) -> ProtectRunView:
        return self._view(ProtectionRun.model_validate_json(record_json))


async def protect_runner(request: Request) -> ProtectRunner:
    """The app's runner (app.state.protect_runner, set by create_app)."""
    return request.app.state.protect_runner
