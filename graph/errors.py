"""The one root of every error Watershed raises on purpose.

`except WatershedError` catches a bad input, a refused operation or a service that is
down, with a message naming what was wrong; anything else is a bug. Each package
subclasses it (keeping the builtin base its callers already catch, such as ValueError).
"""

import re


class WatershedError(Exception):
    """An error Watershed reports to its user: the message names the input or service at fault."""


class PolicyError(WatershedError, ValueError):
    """A policy (the tag policy, a `watershed ddl` policy) or the input it is applied to (a tags
    file, a column type, a table name) is unreadable or invalid; the message names the file and
    the entry. One class for every policy, so one `except PolicyError` catches them all."""


class GraphUnavailableError(WatershedError, ConnectionError):
    """The graph server does not answer (down, restarting, refusing connections): retry later.

    A builtin ConnectionError too, so callers that treat a lost connection as transient keep doing
    so. `server` names the backend and where it is, never a credential.
    """

    def __init__(self, server: str, reason: str = "") -> None:
        self.server, self.reason = server, reason
        super().__init__(f"the graph server ({server}) is unavailable" + (f": {reason}" if reason else ""))

    def __reduce__(self):
        # rebuilt from its parts, not its message (a worker's error crosses to the coordinator pickled)
        return type(self), (self.server, self.reason)


_URL_CREDENTIALS = re.compile(r"//[^/@\s]*@")


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's first message line, short, with any `user:password@` of a URL in it removed."""
    line = (str(exc).strip().splitlines() or [""])[0]
    return _URL_CREDENTIALS.sub("//", line)[:limit]
