"""ORC protobuf messages (only those orc_crypto needs)."""
