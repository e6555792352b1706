"""The apache/orc example keystore (JCEKS, key `pii`) and the local keys of its example file
sample1.orc, under tests/orc_crypto/data: the keystore tests and the KMS tests read both."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "orc_crypto" / "data"
SAMPLE_KEYSTORE = DATA_DIR / "kms.keystore"
# The two encrypted local keys stored in apache/orc examples/encrypted/sample1.orc
# (EncryptionVariant.encrypted_key of variants 0 and 1) and the local keys of doc §8.4.
SAMPLE1_ENCRYPTED_KEYS = {
    "4c402d4b15b587593c70be548a4664d7afb83c173e5074a72df484a2ce1b14c5": (
        "59e63216ff2576c8c8c95504f46e8eab9819fe468df62c6e6a32b3f674b9c2ab"
    ),
    "794c5a9391fb448fe8cbbc93a186e86c5794dab9f5c9ac11c24270e69e6da8f9": (
        "9ea48be705f3b93cee3827bfcc421d3b17f8562650f49177d3d33cdf3d0dabd7"
    ),
}
