"""Package layout and the optional C extension; everything else is in pyproject.toml.

The repo keeps one folder per layer at its root (graph/, ingest/, ...); the wheel installs
them under the one `watershed` namespace (`watershed.graph`, ...), so Watershed never adds
generic top-level modules such as `api` or `graph` beside other software.
"""

from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: the repo's product folders, bottom layer first, then dags/ (the Airflow DAG, above them all);
#: bench/ and tests/ are not shipped
LAYERS = ("graph", "ingest", "propagation", "ttl_advisor", "orc_crypto", "discovery", "api", "dags")


def _packages() -> tuple[list[str], dict[str, str]]:
    packages, package_dir = [], {}
    for layer in LAYERS:
        package_dir[f"watershed.{layer}"] = layer
        for init in sorted(Path(layer).rglob("__init__.py")):
            packages.append(".".join(("watershed", *init.parent.parts)))
    return packages, package_dir


class OptionalBuildExt(build_ext):
    """Build the SHA-256 mask extension when a compiler and OpenSSL's headers are there.

    Without them the install still succeeds: the mask falls back to hashlib
    (watershed.orc_crypto.masking.sha256), the same bytes, several times slower.
    """

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._skip(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skip(exc)

    def _skip(self, exc: Exception) -> None:
        print(f"warning: the C SHA-256 mask extension was not built ({exc}); using the pure-Python fallback")


PACKAGES, PACKAGE_DIR = _packages()

setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    cmdclass={"build_ext": OptionalBuildExt},
    ext_modules=[
        # SHA-256 over Arrow buffers for the ORC sha256 mask (OpenSSL's libcrypto; the source says why C)
        Extension(
            "watershed.orc_crypto.masking._sha256",
            sources=["orc_crypto/masking/_sha256.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2", "-Wno-deprecated-declarations"],
            optional=True,
        )
    ],
)
