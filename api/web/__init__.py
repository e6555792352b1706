"""The web UI: a single page (static/index.html) and its ES modules, served by the HTTP API.

static/vendor/ holds the npm libraries the page imports; scripts/bootstrap.sh copies them
from node_modules (package-lock.json pins them), so nothing is fetched from a CDN at run time.
"""
