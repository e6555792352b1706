"""The steward service's HTTP side: one FastAPI app for the JSON API (/api/v1) and the web UI."""
