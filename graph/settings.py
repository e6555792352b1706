"""Settings shared by every Watershed package.

Values come, highest priority first, from explicit arguments, `WATERSHED_*`
environment variables, and an optional TOML settings file named by
`WATERSHED_SETTINGS_FILE` (flat keys, the same names as the fields).
Each package declares its own settings class on top of `WatershedSettings`,
so a package only sees the knobs it owns.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

SETTINGS_FILE_ENV = "WATERSHED_SETTINGS_FILE"


class SettingsFileError(ValueError):
    """The settings file named by WATERSHED_SETTINGS_FILE is missing or unreadable."""


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
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


class GraphSettings(WatershedSettings):
    #: where the embedded servers keep their data, logs and pid files
    data_dir: Path = Path("var")
    backend: str = "falkordb"
    falkordb_host: str = "127.0.0.1"
    falkordb_port: int = 16379
    graph_name: str = "watershed"
    #: the plain Redis that Celery uses as broker and result backend
    redis_host: str = "127.0.0.1"
    redis_port: int = 16380
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: str = ""
    neo4j_database: str = "neo4j"
    #: rows per UNWIND batch when loading lineage
    load_batch_size: int = 10000
