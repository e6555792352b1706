"""Settings shared by every Watershed package.

Values come, highest priority first, from explicit arguments, `WATERSHED_*`
environment variables, and an optional TOML settings file named by
`WATERSHED_SETTINGS_FILE` (flat keys, the same names as the fields).
Each package declares its own settings class on top of `WatershedSettings`,
so a package only sees the knobs it owns.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from watershed.graph.errors import WatershedError

SETTINGS_FILE_ENV = "WATERSHED_SETTINGS_FILE"
ENV_PREFIX = "WATERSHED_"

# Natural ranges of numeric settings: a value outside them is an error naming the setting,
# never a silently odd behaviour (a negative margin, a zero batch size, a port of 70000).
Port = Annotated[int, Field(ge=1, le=65535)]
Count = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
#: a JVM or Neo4j memory size: digits and a unit (k, m, g)
MemorySize = Annotated[str, Field(pattern=r"^[1-9][0-9]*[kKmMgG]$")]


def _absolute(path: Path) -> Path:
    return path.expanduser().resolve()


#: A directory resolved once, when the settings are read: every later use (a server's
#: --dir, a pid file, a subprocess with another working directory) sees the same place.
AbsolutePath = Annotated[Path, AfterValidator(_absolute)]


class SettingsFileError(WatershedError, ValueError):
    """The settings file named by WATERSHED_SETTINGS_FILE is missing, unreadable or not TOML."""


def settings_file() -> Path | None:
    raw = os.environ.get(SETTINGS_FILE_ENV)
    if not raw:
        return None
    path = Path(raw)
    if not path.is_file():
        raise SettingsFileError(f"{SETTINGS_FILE_ENV}={raw}: no such settings file")
    return path


class WatershedSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WATERSHED_", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = settings_file()
        if path is not None:
            try:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
            except tomllib.TOMLDecodeError as exc:
                raise SettingsFileError(f"{SETTINGS_FILE_ENV}={path}: not a TOML file ({exc})") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise SettingsFileError(f"{SETTINGS_FILE_ENV}={path}: cannot read it ({exc})") from None
        return tuple(sources)


class DataDirSettings(WatershedSettings):
    #: where the embedded servers keep their data, logs and pid files (and, by default, the
    #: keystore, the KMS files and harvest records); a relative value is taken from the
    #: working directory once and kept absolute
    data_dir: AbsolutePath = Field(default=Path("var"), validate_default=True)


def data_dir() -> Path:
    """The absolute data directory (WATERSHED_DATA_DIR, the settings file, else ./var).

    The default of every path that lives "under the data directory" (keystore, KMS
    audit log, secret and token files, harvest records) is derived from it, so moving
    the data directory moves them all.
    """
    return DataDirSettings().data_dir


class GraphSettings(DataDirSettings):
    backend: str = "falkordb"
    falkordb_host: str = "127.0.0.1"
    falkordb_port: Port = 16379
    graph_name: str = "watershed"
    #: the plain Redis that Celery uses as broker and result backend
    redis_host: str = "127.0.0.1"
    redis_port: Port = 16380
    #: a `bolt://` URI on a loopback host is the local Neo4j `services up` starts; any other
    #: (`neo4j://`, `neo4j+s://`, `bolt+s://`, another host) a Neo4j run elsewhere (docs/graph.md)
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    #: from the settings file (or WATERSHED_NEO4J_PASSWORD), never a command-line option
    neo4j_password: str = ""
    #: a file holding the password (a mounted secret), read when neo4j_password is empty
    neo4j_password_file: AbsolutePath | None = None
    neo4j_database: str = "neo4j"
    #: the local Neo4j's JVM heap and page cache (Neo4j sizes: 512m, 2g)
    neo4j_heap: MemorySize = "512m"
    neo4j_pagecache: MemorySize = "256m"
    #: where the set-up put the local Neo4j (default: inside the virtualenv, graph/neo4j_server.py)
    neo4j_home: AbsolutePath | None = None
    #: rows per UNWIND batch when loading lineage
    load_batch_size: Count = 10000
    #: (WATERSHED_OPENLINEAGE_STALE_DAYS) a task of an OpenLineage source (`openlineage:*`) not seen
    #: for longer is reported stale by `watershed lineage sources` (never deleted)
    openlineage_stale_days: float = Field(default=7.0, gt=0)


def _settings_classes(root: type = BaseSettings) -> dict[str, type[BaseSettings]]:
    found: dict[str, type[BaseSettings]] = {}
    for cls in root.__subclasses__():
        found[cls.__name__] = cls
        found.update(_settings_classes(cls))
    return found


def describe_settings_error(exc: ValidationError) -> str | None:
    """One line naming each bad setting, where its value came from, and the value; None if `exc` is not about settings.

    A settings class's validation error carries the class name as its title and
    the field name as each error's location; the environment wins over the file,
    so a variable that is set is where the bad value came from.
    """
    if exc.title not in _settings_classes():
        return None
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        variable = f"{ENV_PREFIX}{field}".upper()
        environ = {name.upper(): value for name, value in os.environ.items()}
        if variable in environ:
            where = f"{variable}={environ[variable]!r}"
        elif os.environ.get(SETTINGS_FILE_ENV):
            where = f"{field} = {error.get('input')!r} in the settings file {os.environ[SETTINGS_FILE_ENV]}"
        else:
            where = f"{field}={error.get('input')!r}"
        problems.append(f"{where}: {error['msg']}")
    return "bad setting " + "; ".join(problems)
