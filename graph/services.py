"""The embedded services: FalkorDB (the graph) and a plain Redis (Celery's broker), from settings."""

from __future__ import annotations

from dataclasses import dataclass

from graph.server import ServerSpec, answers, is_running, start, stop
from graph.settings import GraphSettings


def specs(settings: GraphSettings | None = None) -> list[ServerSpec]:
    settings = settings or GraphSettings()
    return [
        ServerSpec(
            "falkordb", settings.falkordb_host, settings.falkordb_port, settings.data_dir, with_falkordb=True
        ),
        ServerSpec("redis", settings.redis_host, settings.redis_port, settings.data_dir, with_falkordb=False),
    ]


@dataclass
class ServiceStatus:
    name: str
    port: int
    running: bool
    answering: bool


def up(settings: GraphSettings | None = None) -> list[ServiceStatus]:
    for spec in specs(settings):
        start(spec)
    return status(settings)


def down(settings: GraphSettings | None = None) -> list[str]:
    return [spec.name for spec in specs(settings) if stop(spec)]


def status(settings: GraphSettings | None = None) -> list[ServiceStatus]:
    return [ServiceStatus(s.name, s.port, is_running(s), answers(s)) for s in specs(settings)]
