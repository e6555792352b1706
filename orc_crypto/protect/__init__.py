"""From tags to protection: the planner that reads what the tag policy asks of each table's
columns against what its ORC files hold, the DDL that sets a table's options, and the records an
apply leaves in the graph (see graph/protection.py for the shared models)."""
