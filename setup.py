"""The one C extension; everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # SHA-256 over Arrow buffers for the ORC sha256 mask (OpenSSL's libcrypto; the source says why C)
        Extension(
            "orc_crypto.masking._sha256",
            sources=["orc_crypto/masking/_sha256.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2", "-Wno-deprecated-declarations"],
        )
    ]
)
