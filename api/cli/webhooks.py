"""`watershed webhooks`: webhook subscriptions, their deliveries and dead letters, in the graph.

The CLI runs with the graph's own access, like `watershed users`: no token, and its changes are
audited with the OS user as the actor (`cli:NAME`). A subscription's secret is generated, or read
from a file (never from the command line, which other users of the machine can see); it is printed
once, when the subscription is made.
"""

from __future__ import annotations

import getpass
import time
from pathlib import Path

import typer
from rich.table import Table

from watershed.api.cli.output import OutputFormat, console, fail, format_option

app = typer.Typer(
    help="Webhook subscriptions (signed POSTs of events), their deliveries and dead letters.",
    no_args_is_help=True,
)


def _actor() -> str:
    return f"cli:{getpass.getuser()}"


def _graph():
    from watershed.api.cli.graph import open_store

    store = open_store()
    store.ensure_schema()
    return store


def _json_list(models) -> None:
    typer.echo("[" + ",".join(m.model_dump_json() for m in models) + "]")


@app.command("add")
def add_command(
    url: str = typer.Argument(..., help="The http or https URL that receives the POSTs."),
    kinds: list[str] = typer.Option(
        ..., "--kind", help="An event kind to send; repeatable (`watershed webhooks kinds` lists them)."
    ),
    secret_file: Path = typer.Option(
        None,
        "--secret-file",
        help="Read the signing secret from this file (at least 16 characters); default: a generated one.",
        exists=True,
        dir_okay=False,
    ),
    inactive: bool = typer.Option(
        False, "--inactive", help="Make it paused (no deliveries until activated)."
    ),
) -> None:
    """Subscribe a URL to event kinds and print its signing secret (once)."""
    from watershed.api.service.notifications import subscriptions
    from watershed.api.service.notifications.events import UnknownEventKindError

    secret = secret_file.read_text().strip() if secret_file is not None else None
    try:
        created = subscriptions.add(_graph(), url, kinds, actor=_actor(), secret=secret, active=not inactive)
    except (subscriptions.WebhookError, UnknownEventKindError) as exc:
        fail(str(exc))
    console.print(f"webhook {created.id}: {created.url} for {', '.join(created.kinds)}")
    if secret_file is None:
        console.print("its signing secret, shown only now (keep it for the receiver):")
        # plain print: the secret must come out whole on one line, whatever the terminal width
        typer.echo(created.secret)


@app.command("kinds")
def kinds_command() -> None:
    """The event kinds a subscription may ask for."""
    from watershed.api.service.notifications.events import KINDS

    for kind, description in KINDS.items():
        console.print(f"{kind}: {description}")


@app.command("list")
def list_command(
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of Subscription)."),
) -> None:
    """Every subscription (never its secret)."""
    from watershed.api.service.notifications import subscriptions

    graph, found, after = _graph(), [], ""
    while batch := subscriptions.listing(graph, after=after, limit=500):
        found += batch
        after = batch[-1].id
    if output is OutputFormat.json:
        _json_list(found)
        return
    table = Table()
    for header in ("id", "url", "kinds", "active", "created by", "created"):
        table.add_column(header)
    for sub in found:
        table.add_row(
            sub.id,
            sub.url,
            ", ".join(sub.kinds),
            "yes" if sub.active else "no",
            sub.created_by or "",
            sub.created_at or "",
        )
    console.print(table)


@app.command("remove")
def remove_command(subscription: str = typer.Argument(..., help="The subscription's id (wh_...).")) -> None:
    """Remove a subscription with its pending deliveries, dead letters and history."""
    from watershed.api.service.notifications import subscriptions

    try:
        subscriptions.remove(_graph(), subscription, actor=_actor())
    except subscriptions.UnknownSubscriptionError as exc:
        fail(str(exc))
    console.print(f"webhook {subscription} removed")


@app.command("deliveries")
def deliveries_command(
    subscription: str = typer.Argument(..., help="The subscription's id (wh_...)."),
    limit: int = typer.Option(50, "--limit", min=1, max=1000, help="The newest attempts to show."),
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of Attempt)."),
) -> None:
    """A subscription's delivery attempts, newest first: status code, error in words, outcome."""
    from watershed.api.service.notifications import delivery, subscriptions

    graph = _graph()
    try:
        subscriptions.get(graph, subscription)
    except subscriptions.UnknownSubscriptionError as exc:
        fail(str(exc))
    found = delivery.history(graph, subscription, limit=limit)
    if output is OutputFormat.json:
        _json_list(found)
        return
    table = Table()
    for header in ("at", "delivery", "kind", "attempt", "status", "outcome", "error"):
        table.add_column(header)
    for a in found:
        code = "" if a.status_code is None else str(a.status_code)
        table.add_row(a.at, a.delivery, a.kind, str(a.attempt), code, a.outcome, a.error or "")
    console.print(table)


@app.command("dead-letters")
def dead_letters_command(
    subscription: str = typer.Option(None, "--subscription", help="Only this subscription's (wh_...)."),
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of Delivery)."),
) -> None:
    """Deliveries that failed every attempt (`watershed webhooks retry ID` sends one again)."""
    from watershed.api.service.notifications import delivery

    graph, found, after = _graph(), [], ""
    while batch := delivery.dead_letters(graph, subscription=subscription, after=after, limit=500):
        found += batch
        after = batch[-1].id
    if output is OutputFormat.json:
        _json_list(found)
        return
    table = Table()
    for header in ("delivery", "kind", "created", "attempts", "last error"):
        table.add_column(header)
    for d in found:
        table.add_row(d.id, d.kind, d.created_at, str(d.attempts), d.last_error or "")
    console.print(table)


@app.command("retry")
def retry_command(
    delivery_id: str = typer.Argument(..., help="A dead letter's id (from dead-letters)."),
) -> None:
    """Put a dead letter back in the outbox, due now (the next delivery pass sends it)."""
    from watershed.api.service.notifications import delivery

    try:
        delivery.retry(_graph(), delivery_id, actor=_actor())
    except delivery.UnknownDeliveryError as exc:
        fail(str(exc))
    console.print(f"delivery {delivery_id} is due again")


@app.command("deliver")
def deliver_command(
    loop: bool = typer.Option(False, "--loop", help="Keep delivering, a pass every webhook_poll_seconds."),
) -> None:
    """Send the due deliveries now (the API process does this while it serves)."""
    from watershed.api.service.notifications import delivery
    from watershed.api.service.notifications.settings import WebhookSettings

    graph, settings = _graph(), WebhookSettings()
    while True:
        report = delivery.deliver_due(graph, settings)
        console.print(f"{report.delivered} delivered, {report.retried} to retry, {report.dead} dead")
        if not loop:
            return
        time.sleep(settings.webhook_poll_seconds or 5.0)


def _set_active(subscription: str, active: bool) -> None:
    from watershed.api.service.notifications import subscriptions

    try:
        subscriptions.update(_graph(), subscription, actor=_actor(), active=active)
    except subscriptions.UnknownSubscriptionError as exc:
        fail(str(exc))
    console.print(f"webhook {subscription} {'active' if active else 'paused'}")


@app.command("pause")
def pause_command(subscription: str = typer.Argument(..., help="The subscription's id (wh_...).")) -> None:
    """Stop a subscription's deliveries (new events skip it; its pending ones wait)."""
    _set_active(subscription, False)


@app.command("resume")
def resume_command(subscription: str = typer.Argument(..., help="The subscription's id (wh_...).")) -> None:
    """Deliver to a paused subscription again (its waiting deliveries first)."""
    _set_active(subscription, True)
