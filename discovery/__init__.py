"""PII discovery by content: sample tables' files, validate values with well-kept libraries, and
propose sensitivity tags with a confidence and masked evidence (docs/discovery.md).

A feature like ingest or propagation: it imports only `graph` and libraries. What it needs of
another feature (ORC reads through orc_crypto, the policy's name rules) the use case
(api/service/discovery.py) passes in.
"""
