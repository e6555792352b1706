"""The one root of every error Watershed raises on purpose.

`except WatershedError` catches a bad input, a refused operation or a service that is
down, with a message naming what was wrong; anything else is a bug. Each package
subclasses it (keeping the builtin base its callers already catch, such as ValueError).
"""


class WatershedError(Exception):
    """An error Watershed reports to its user: the message names the input or service at fault."""
