"""Column-level TTL recommendations from how far back downstream tasks read."""
