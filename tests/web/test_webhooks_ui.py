"""The admins' Webhooks page in the browser: a subscription added through its form shows its secret
once, the API process delivers a steward's tag change to a real local receiver signed with that
secret, the page lists the subscriptions, a subscription's deliveries and the dead letters, and a
dead letter is retried from it. Stewards have no Webhooks page."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from bench.ui_render import login
from tests.support.webhook_receiver import start_receiver
from watershed.api.service.notifications import delivery
from watershed.api.service.notifications.settings import WebhookSettings

#: a column no other browser test reads; its tag is set and taken back
NODE = "ods.users.uid"


def test_an_admin_adds_a_webhook_reads_its_deliveries_and_retries_a_dead_letter(web_stack, page, shots):
    receiver, server = start_receiver()
    admin, steward = web_stack.tokens["admin"], web_stack.tokens["steward"]
    added: list[str] = []
    try:
        login(page, web_stack.base_url, steward)
        assert page.locator(".nav a[href='#/webhooks']").count() == 0
        page.context.clear_cookies()

        login(page, web_stack.base_url, admin)
        page.click(".nav a[href='#/webhooks']")
        form = page.locator("[data-testid=webhook-add]")
        form.locator("input[name=url]").fill(f"{receiver.url}/ok")
        form.locator("input[value='tag.changed']").check()
        form.locator("button[type=submit]").click()
        secret = page.locator("[data-testid=webhook-secret]").inner_text()
        receiver.secrets["/ok"] = secret
        ok = page.locator("[data-testid=webhook-created]").inner_text().split()[1]
        added.append(ok)
        status, down = web_stack.call(
            "POST", "/webhooks", admin, {"url": f"{receiver.url}/down", "kinds": ["tag.changed"]}
        )
        assert status == 201, down
        added.append(down["id"])

        assert web_stack.call("PUT", f"/nodes/{NODE}/tags/region", steward, {"values": ["cn"]})[0] == 200
        assert web_stack.call("DELETE", f"/nodes/{NODE}/tags/region", steward)[0] == 200
        deadline = time.monotonic() + 60
        while len(receiver.at("/ok")) < 2:
            assert time.monotonic() < deadline, "the API process did not deliver the tag changes"
            time.sleep(0.1)
        assert all(post.signed for post in receiver.at("/ok"))
        # the failing receiver's deliveries, past any claim and backoff, on their last attempt
        delivery.deliver_due(web_stack.graph, WebhookSettings(webhook_max_attempts=1), now=time.time() + 3600)

        page.reload()
        expect(page.locator("tr[data-subscription]")).to_have_count(2)
        page.locator(f"tr[data-subscription='{ok}'] button[data-action=deliveries]").click()
        expect(page.locator("[data-testid=webhook-deliveries] tr[data-outcome=delivered]")).to_have_count(2)
        dead = page.locator("[data-testid=webhook-dead-letters] tr[data-dead]")
        expect(dead).to_have_count(2)
        assert "HTTP 500 Internal Server Error" in dead.first.inner_text()
        shots("webhooks")
        dead.first.locator("button[data-action=retry]").click()
        expect(dead).to_have_count(1)
    finally:
        for subscription in added:
            web_stack.call("DELETE", f"/webhooks/{subscription}", admin)
        server.shutdown()
