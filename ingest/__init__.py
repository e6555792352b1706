"""SQL task sources, the sqlglot lineage extractor and the Spark harvest job."""

from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage

__all__ = ["SqlTask", "TaskLineage", "extract_lineage"]
