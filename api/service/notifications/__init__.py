"""Webhook notifications: admin-managed subscriptions, an outbox in the graph, signed deliveries.

`subscriptions.py` the subscriptions (url, event kinds, secret) and their audited changes;
`events.py` the event kinds and the outbox statement a use case adds to its own write;
`delivery.py` the POSTs: claim what is due, sign, send, retry with backoff, dead-letter, history;
`signing.py` the HMAC signature a receiver checks; `settings.py` the `WATERSHED_WEBHOOK_*` settings.
docs/notifications.md describes the whole for a receiver's author.
"""
