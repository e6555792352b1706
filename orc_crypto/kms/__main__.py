"""`python -m watershed.orc_crypto.kms`: the KMS process `watershed services up` starts.

The same server as `watershed kms serve`, over the embedded keystore, with the ACLs, auth
and limits of the settings (WATERSHED_KMS_*). It lives here rather than behind the CLI so
that orc_crypto never starts a layer above it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from watershed.orc_crypto.keys.base import KeyProviderError
from watershed.orc_crypto.keys.embedded import EmbeddedKeystore, passphrase_from_environment
from watershed.orc_crypto.kms.acl import AclError, KeyAcls
from watershed.orc_crypto.kms.server import KmsSettings, prepare_auth, provider_uri, serve_forever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m watershed.orc_crypto.kms", description=__doc__)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--keystore", type=Path, required=True)
    parser.add_argument("--audit-log", type=Path, required=True)
    args = parser.parse_args(argv)
    settings = KmsSettings()
    try:
        backend = EmbeddedKeystore.open(args.keystore, passphrase_from_environment())
        acls = (
            KeyAcls.load(settings.kms_acl_file)
            if settings.kms_acl_file
            else KeyAcls.owner_only(getpass.getuser())
        )
        auth = prepare_auth(settings, args.host, args.port)
    except (KeyProviderError, AclError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    args.audit_log.parent.mkdir(parents=True, exist_ok=True)
    print(f"KMS on {provider_uri(args.host, args.port)} serving {len(backend.names())} keys", flush=True)
    serve_forever(backend, acls, host=args.host, port=args.port, audit_path=args.audit_log, auth=auth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
