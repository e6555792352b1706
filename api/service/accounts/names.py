"""User names: one spelling per account, from an alphabet that is safe in a path, a log and a query.

A name is compared without regard to case (`Admin2` is `admin2`): it is folded to lower case
wherever it enters (creating a user, looking one up, a token, a data-role member, the user of
a query check) and stored folded. The alphabet is ASCII only, so no two different-looking
strings fold to one name and no look-alike letter of another script makes a second account.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from watershed.graph.errors import WatershedError

MAX_LENGTH = 64
#: the rule as errors and docs state it
RULE = (
    f"1-{MAX_LENGTH} characters: ASCII letters, digits, '.', '_', '-', '@', starting with a letter "
    "or digit, no '..'; case does not matter"
)
_ALPHABET = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._@-]{{0,{MAX_LENGTH - 1}}}")
#: the rule as a JSON-schema pattern, with `maxLength` MAX_LENGTH beside it: a dot is followed
#: by another character or ends the name, so no ".." (no lookaround: schema generators and
#: pydantic's regex engine take none); tests/api/test_user_names.py checks it is the rule
PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_@-]|\.[A-Za-z0-9_@-])*\.?$"


class InvalidUserNameError(WatershedError, ValueError):
    """A user name outside the rule; the message names the name (shown safely) and the rule."""


def user_name(text: str) -> str:
    """The folded form of a user name; InvalidUserNameError when it breaks the rule."""
    if not isinstance(text, str) or not _ALPHABET.fullmatch(text) or ".." in text:
        # ascii(): a refused name may hold control characters or a lone surrogate
        raise InvalidUserNameError(f"user name {text!a}: {RULE}")
    return text.lower()


def validated_user_name(text: str) -> str:
    """`user_name` for a pydantic validator: its error is the rule, without pydantic's prefix."""
    try:
        return user_name(text)
    except InvalidUserNameError as exc:
        # a custom error type: pydantic would prefix a ValueError's message with "Value error, "
        raise PydanticCustomError(
            "user_name", "user name {name}: {rule}", {"name": ascii(text), "rule": RULE}
        ) from exc


#: a user name field of a request model or a route parameter: 422 naming it when it breaks the rule
UserName = Annotated[
    str,
    AfterValidator(validated_user_name),
    WithJsonSchema({"type": "string", "pattern": PATTERN, "minLength": 1, "maxLength": MAX_LENGTH}),
]
