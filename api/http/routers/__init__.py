"""One module per resource of /api/v1."""
