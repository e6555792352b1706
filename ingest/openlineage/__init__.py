"""OpenLineage intake: dataset names (`names`), the events at the boundary (`events`) and their
conversion into a task's lineage (`convert`). docs/openlineage.md says what is taken from each event."""
