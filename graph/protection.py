"""What protection means, shared by the policy (`propagation`), the planner and its apply job
(`orc_crypto`) and the service (`api`): the policy's protection section, the plan, and the records
an apply leaves in the graph.

One vocabulary: a rule names a sensitivity family of the tag policy (`pii`), the levels of it that
it protects (`L4`), optionally the family's types (`ssn`), and the master key and ORC mask that
protect them. `pii=L4` then means the same thing to propagation, the DDL and the file encryption.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from watershed.graph.errors import WatershedError

#: what happens to an encrypted column whose tag no longer asks for protection (its level
#: dropped, or the tag went): `keep` leaves it encrypted and reports it; `decrypt` writes it back
#: in plaintext
OnRelease = Literal["keep", "decrypt"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProtectionRule(_Strict):
    """Columns tagged `tag` at one of `levels` (and, when `types` is given, of one of those types)
    are encrypted with master key `key`, and readers without the key see `mask`."""

    tag: str
    levels: list[str] = Field(min_length=1)
    types: list[str] = Field(default_factory=list)
    key: str
    #: ORC's `orc.mask` syntax: nullify | sha256 | redact[,params...]
    mask: str = "nullify"
    #: the tag key holding the family's types (`pii_type`); the tag policy fills it in from the
    #: family when a rule lists types
    types_key: str | None = None

    def matches(self, tags: Mapping[str, Sequence[str]]) -> str | None:
        """The level of `tags` this rule protects, or None."""
        level = next((v for v in tags.get(self.tag, ()) if v in self.levels), None)
        if level is None or not self.types:
            return level
        if self.types_key is None:
            return None
        return level if any(t in self.types for t in tags.get(self.types_key, ())) else None


class ProtectionPolicy(_Strict):
    """The `protection:` section of the tag policy. Rules are tried in order: list the most
    sensitive first; the first rule that matches a column decides its key and mask."""

    key_provider_path: str | None = None
    on_release: OnRelease = "keep"
    rules: list[ProtectionRule] = Field(default_factory=list)

    def rule_for(self, tags: Mapping[str, Sequence[str]]) -> tuple[ProtectionRule, str] | None:
        """The rule that protects a column with these tags ({key: [values]}) and the matched level."""
        for rule in self.rules:
            level = rule.matches(tags)
            if level is not None:
                return rule, level
        return None

    def digest(self) -> str:
        """A short fingerprint of the section: a plan says which policy it was made under."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ which KMS

#: the scheme of a Hadoop KMS provider URI (kms://http@HOST:PORT/kms); any other provider path
#: (jceks://file/...) is a keystore file the DDL may name, not a service to ask for keys
KMS_SCHEME = "kms://"


class KmsUriError(WatershedError, ValueError):
    """A KMS URI given explicitly is not a kms:// provider URI; the message names where it was given."""


def kms_uri(given: str | None, provider_path: str | None, *, given_as: str = "--kms") -> str | None:
    """The Hadoop KMS a protection plan, apply or rewrap talks to: the one rule of every face.

    1. `given`, the URI its caller was given for this (the CLI's --kms, the service's
       WATERSHED_PROTECT_KMS, the nightly chain's WATERSHED_NIGHTLY_KMS), named `given_as` in the
       KmsUriError raised when it is not a kms:// URI;
    2. else `provider_path` (the policy's key_provider_path, or a plan's, which was made from it)
       when it names a KMS;
    3. else None: no KMS is configured.
    """
    if given:
        if not given.startswith(KMS_SCHEME):
            raise KmsUriError(f"{given_as} {given}: expected a kms://http@HOST:PORT/kms provider URI")
        return given
    if provider_path and provider_path.startswith(KMS_SCHEME):
        return provider_path
    return None


def ddl_provider_path(given: str | None, provider_path: str | None, *, given_as: str = "--kms") -> str | None:
    """The `hadoop.security.key.provider.path` the DDL sets: the KMS `kms_uri` chooses, else the
    policy's provider path whatever it names (a JCEKS keystore the engines read keys from)."""
    return kms_uri(given, provider_path, given_as=given_as) or provider_path


# ------------------------------------------------------------------ the plan

ColumnAction = Literal["encrypt", "reencrypt", "keep", "release", "decrypt"]
FileAction = Literal["encrypt", "reencrypt", "decrypt"]


class ColumnKey(_Strict):
    """How one column is (or is to be) protected."""

    key: str
    mask: str
    #: the master key version its file keys are wrapped with (known once a file is written)
    version: int | None = None


class ColumnChange(_Strict):
    """One column of a table whose protection the plan changes or reports.

    `encrypt`: newly sensitive; `reencrypt`: already encrypted, but the policy now asks for another
    key or mask; `keep`: encrypted as the policy asks (listed only when some of its files are not);
    `release`: no longer needs protection and stays encrypted (`on_release: keep`), reported;
    `decrypt`: no longer needs protection and is written back in plaintext (`on_release: decrypt`).
    """

    column: str
    name: str
    action: ColumnAction
    want: ColumnKey | None = None
    have: ColumnKey | None = None
    #: the tag that decides it, `pii=L4`, and the first hop of its `why` path
    tag: str | None = None
    why: str = ""


class FilePlan(_Strict):
    """One ORC file to rewrite, as it was when planned: apply skips it if it changed since."""

    path: str
    partition: str | None = None
    size: int
    mtime_ns: int
    action: FileAction
    #: the columns to protect in this file and how (file column name -> key and mask), after the
    #: rewrite; an empty map decrypts everything
    columns: dict[str, ColumnKey] = Field(default_factory=dict)
    #: what its tail says it holds now (file column name -> key and mask)
    current: dict[str, ColumnKey] = Field(default_factory=dict)


class TablePlan(_Strict):
    table: str
    location: str | None = None
    #: every column the table's options protect once the plan is applied (file column name -> key
    #: and mask), the unchanged ones included: the DDL is made from it and an apply records it
    target: dict[str, ColumnKey] = Field(default_factory=dict)
    columns: list[ColumnChange] = Field(default_factory=list)
    #: Spark SQL statements that set the table's options for future writes
    ddl: list[str] = Field(default_factory=list)
    files: list[FilePlan] = Field(default_factory=list)
    #: what kept part of the table out of the plan (no location, a file whose tail is unreadable, ...)
    problems: list[str] = Field(default_factory=list)


class ProtectionPlan(_Strict):
    created_at: str
    policy_digest: str
    key_provider_path: str | None = None
    tables: list[TablePlan] = Field(default_factory=list)

    @property
    def files(self) -> int:
        return sum(len(t.files) for t in self.tables)


# ------------------------------------------------------------------ what an apply records


class ProtectedFile(_Strict):
    """The graph's record of one rewritten file: what it holds, so a second apply leaves it alone."""

    path: str
    table: str
    columns: dict[str, ColumnKey] = Field(default_factory=dict)
    size: int
    mtime_ns: int
    sha256: str
    at: str
    run: str


class TableProtection(_Strict):
    """The graph's record of a table's options: the DDL that was run and what it asks for."""

    table: str
    columns: dict[str, ColumnKey] = Field(default_factory=dict)
    ddl: list[str] = Field(default_factory=list)
    at: str
    run: str


class FileProblem(_Strict):
    path: str
    table: str
    error: str


#: how many skipped files and errors a run record lists (a KMS outage can fail every file)
MAX_RUN_PROBLEMS = 100

ProtectionRunKind = Literal["apply", "rewrap"]
ProtectionRunStatus = Literal["running", "done", "failed"]


class ProtectionRun(_Strict):
    """One apply or rewrap, recorded in the graph like the harvest and propagation runs."""

    id: str
    kind: ProtectionRunKind = "apply"
    started_at: str
    finished_at: str | None = None
    status: ProtectionRunStatus = "running"
    policy_digest: str | None = None
    tables: int = 0
    #: files the run set out to rewrite: with the counts below, its progress from any process
    files_planned: int = 0
    files_done: int = 0
    #: files already as planned (a re-run, or a resumed apply): left alone
    files_unchanged: int = 0
    #: files that changed between plan and apply: reported, never clobbered
    skipped: list[FileProblem] = Field(default_factory=list)
    errors: list[FileProblem] = Field(default_factory=list)
    #: skipped files and errors beyond the first MAX_RUN_PROBLEMS of each, counted but not listed
    more_skipped: int = 0
    more_errors: int = 0
    bytes_rewritten: int = 0
    seconds: float = 0.0
