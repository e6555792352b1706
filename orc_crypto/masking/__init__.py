"""ORC data masks (nullify, sha256, redact) and the unencrypted masked copy of encrypted columns."""
