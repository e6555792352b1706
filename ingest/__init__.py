"""SQL task sources, the sqlglot lineage extractor and the Spark harvest job."""

from ingest.extract import extract_lineage
from ingest.model import SqlTask, TaskLineage

__all__ = ["SqlTask", "TaskLineage", "extract_lineage"]
