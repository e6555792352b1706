"""The use cases of the service, one module each, below the faces.

The faces (`api/cli`, `api/http`, `api/web`) parse input, call a use case here and render its
model; the nightly chain and the Celery tasks call the same modules. A use case imports the
feature layers (propagation, ttl_advisor, orc_crypto, ingest) and graph, never a face.
"""
