"""OpenLineage events at Watershed's boundary: RunEvent, DatasetEvent and JobEvent of spec 2-0-x.

Only what the intake reads is modelled, and checked as the spec says: the required fields, the
eventType enum, a UUID runId, an eventTime with its offset, producer and schemaURL as URIs, a
dataset's namespace and name, and the facets taken (`sql`, `jobType`, `nominalTime`,
`processing_engine`, `schema`, `columnLineage`, `symlinks`). Any other facet, and any property the
spec adds later, is accepted and ignored. `parse_event` raises `EventError` naming the JSON path
of the first bad field (`run.runId`, `outputs[0].facets.columnLineage.fields.x.inputFields[1].name`).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from watershed.graph.errors import WatershedError

EventType = Literal["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"]
_SPEC_VERSION = re.compile(r"/spec/(\d+)-(\d+)-(\d+)/")


class EventError(WatershedError, ValueError):
    """An event that is not a valid OpenLineage event; `path` is the JSON path of the bad field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message


class _Open(BaseModel):
    # Properties of later spec versions and facets nobody reads are accepted and dropped.
    model_config = ConfigDict(extra="ignore", frozen=True)


def _uri(value: str) -> str:
    parts = urlsplit(value)
    if not parts.scheme or not (parts.netloc or parts.path):
        raise ValueError(f"{value!r} is not a URI")
    return value


# ---------------------------------------------------------------- facets


class SqlJobFacet(_Open):
    query: str
    dialect: str | None = None


class JobTypeJobFacet(_Open):
    processingType: str
    integration: str
    jobType: str | None = None


class NominalTimeRunFacet(_Open):
    nominalStartTime: AwareDatetime
    nominalEndTime: AwareDatetime | None = None


class ProcessingEngineRunFacet(_Open):
    version: str
    name: str | None = None
    openlineageAdapterVersion: str | None = None


class SchemaField(_Open):
    name: str
    type: str | None = None
    description: str | None = None
    fields: list[SchemaField] = Field(default_factory=list)


class SchemaDatasetFacet(_Open):
    fields: list[SchemaField] = Field(default_factory=list)


class Transformation(_Open):
    type: Literal["DIRECT", "INDIRECT"]
    subtype: str | None = None
    description: str | None = None
    masking: bool = False


class InputField(_Open):
    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    field: str = Field(min_length=1)
    transformations: list[Transformation] = Field(default_factory=list)


class ColumnFields(_Open):
    inputFields: list[InputField]
    #: the facet's older form (before `transformations`): IDENTITY or MASKED, and a description
    transformationType: str | None = None
    transformationDescription: str | None = None


class ColumnLineageDatasetFacet(_Open):
    fields: dict[str, ColumnFields]
    #: columns that decide the whole dataset's rows (filters, joins, ...), not one column's value
    dataset: list[InputField] = Field(default_factory=list)


class SymlinkIdentifier(_Open):
    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    type: str


class SymlinksDatasetFacet(_Open):
    identifiers: list[SymlinkIdentifier] = Field(default_factory=list)


class JobFacets(_Open):
    sql: SqlJobFacet | None = None
    jobType: JobTypeJobFacet | None = None


class RunFacets(_Open):
    nominalTime: NominalTimeRunFacet | None = None
    processing_engine: ProcessingEngineRunFacet | None = None


class DatasetFacets(_Open):
    schema_: SchemaDatasetFacet | None = Field(default=None, alias="schema")
    columnLineage: ColumnLineageDatasetFacet | None = None
    symlinks: SymlinksDatasetFacet | None = None


# ---------------------------------------------------------------- the event's parts


class Dataset(_Open):
    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    facets: DatasetFacets = Field(default_factory=DatasetFacets)


class Job(_Open):
    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    facets: JobFacets = Field(default_factory=JobFacets)


class Run(_Open):
    runId: UUID
    facets: RunFacets = Field(default_factory=RunFacets)


class _Event(_Open):
    eventTime: AwareDatetime
    producer: str
    schemaURL: str

    @field_validator("producer")
    @classmethod
    def _producer_uri(cls, value: str) -> str:
        return _uri(value)

    @field_validator("schemaURL")
    @classmethod
    def _spec_2(cls, value: str) -> str:
        _uri(value)
        version = _SPEC_VERSION.search(value)
        if version and version.group(1) != "2":
            raise ValueError(f"spec {'-'.join(version.groups())}: only 2-0-x events are taken")
        return value


class RunEvent(_Event):
    eventType: EventType | None = None
    run: Run
    job: Job
    inputs: list[Dataset] = Field(default_factory=list)
    outputs: list[Dataset] = Field(default_factory=list)


class JobEvent(_Event):
    job: Job
    inputs: list[Dataset] = Field(default_factory=list)
    outputs: list[Dataset] = Field(default_factory=list)


class DatasetEvent(_Event):
    dataset: Dataset


Event = RunEvent | JobEvent | DatasetEvent


def _path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def parse_event(document: Any, where: str = "") -> Event:
    """The event a decoded JSON document is; `EventError` naming the bad field's path (after
    `where`, e.g. `[3]` for the fourth event of a batch) when it is not one."""
    if not isinstance(document, dict):
        raise EventError(where, f"an event is a JSON object, not {type(document).__name__}")
    if "run" in document:
        model: type[_Event] = RunEvent
    elif "dataset" in document:
        model = DatasetEvent
    elif "job" in document:
        model = JobEvent
    else:
        raise EventError(where, "an event has a run (RunEvent), a job (JobEvent) or a dataset (DatasetEvent)")
    try:
        return model.model_validate(document)  # type: ignore[return-value]
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        path = _path(error["loc"])
        if where:
            path = where + ("." + path if path and not path.startswith("[") else path)
        raise EventError(path, error["msg"]) from None


def parse_events(document: Any) -> list[Event]:
    """One event, or a batch (a JSON array) checked whole: the first bad event's field is named
    with its index, `[2].run.runId`."""
    if isinstance(document, list):
        return [parse_event(item, f"[{index}]") for index, item in enumerate(document)]
    return [parse_event(document)]


def event_key(event: Event) -> tuple[str, str, datetime]:
    """What makes an event itself: its run (or job), its type and its time."""
    if isinstance(event, RunEvent):
        return str(event.run.runId), event.eventType or "", event.eventTime
    if isinstance(event, JobEvent):
        return f"{event.job.namespace}/{event.job.name}", "JOB", event.eventTime
    return f"{event.dataset.namespace}/{event.dataset.name}", "DATASET", event.eventTime
