"""ORC's `orc.encrypt` and `orc.mask` option syntax (as ORC Java's ParserUtils reads it).

    orc.encrypt:  key:field,field;key2:field
    orc.mask:     mask[,param...]:field,field;mask2:field

A name or parameter made of anything but letters, digits and `_` is back-quoted, a
doubled backquote standing for a literal one; a field is a column number or a dotted
path of names (struct fields, `_elem` of a list, `_key`/`_value` of a map). The whole
mask text (name plus parameters, quotes included) identifies a mask: ORC sorts and
de-duplicates masks by it.
"""

from __future__ import annotations

from dataclasses import dataclass

from watershed.graph.errors import WatershedError


class OptionError(WatershedError, ValueError):
    """An `orc.encrypt`/`orc.mask` value ORC would not parse; the message points at the spot."""


@dataclass(frozen=True)
class MaskSpec:
    """One mask of `orc.mask`: its name, its (unquoted) parameters, and its text as written."""

    name: str
    parameters: tuple[str, ...]
    text: str


class _Cursor:
    def __init__(self, text: str, what: str) -> None:
        self.text, self.what, self.position = text, what, 0

    def error(self, message: str) -> OptionError:
        return OptionError(
            f"{self.what} {self.text!r}: {message} at position {self.position} "
            "(back-quote names and parameters made of anything but letters, digits and _)"
        )

    def at_end(self) -> bool:
        return self.position >= len(self.text)

    def take(self, char: str) -> bool:
        if not self.at_end() and self.text[self.position] == char:
            self.position += 1
            return True
        return False

    def require(self, char: str) -> None:
        if not self.take(char):
            raise self.error(f"expected {char!r}")

    def name(self) -> str:
        """A simple name (letters, digits, `_`) or a back-quoted one."""
        text, start = self.text, self.position
        if self.at_end():
            raise self.error("missing name")
        if text[start] == "`":
            out: list[str] = []
            position = start + 1
            while position < len(text):
                char = text[position]
                position += 1
                if char != "`":
                    out.append(char)
                elif position < len(text) and text[position] == "`":
                    out.append("`")
                    position += 1
                else:
                    if not out:
                        raise self.error("empty quoted name")
                    self.position = position
                    return "".join(out)
            raise self.error("unmatched backquote")
        position = start
        while position < len(text) and (text[position].isalnum() or text[position] == "_"):
            position += 1
        if position == start:
            raise self.error(f"unexpected {text[start]!r}")
        self.position = position
        return text[start:position]

    def field(self) -> str:
        """A field name as written (quotes kept), to be resolved against a schema later."""
        start = self.position
        self.name()
        while self.take("."):
            self.name()
        return self.text[start : self.position]

    def fields(self) -> list[str]:
        """field (',' field)*"""
        found = [self.field()]
        while self.take(","):
            found.append(self.field())
        return found


def quote_name(name: str) -> str:
    """`name` as ORC's option syntax needs it: bare if simple, else back-quoted."""
    if name and all(c.isalnum() or c == "_" for c in name):
        return name
    return "`" + name.replace("`", "``") + "`"


def split_field(field: str) -> list[str]:
    """The parts of a dotted field name, unquoted: "a.`b.c`" -> ["a", "b.c"]."""
    cursor = _Cursor(field.strip(), "column")
    parts = [cursor.name()]
    while cursor.take("."):
        parts.append(cursor.name())
    if not cursor.at_end():
        raise cursor.error("unexpected text after the column name")
    return parts


def parse_encrypt_option(text: str) -> dict[str, list[str]]:
    """`key:col,col;key2:col` -> {key: [field, ...]}; a column under two keys is an error."""
    result: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    cursor = _Cursor(text.strip(), "orc.encrypt")
    if cursor.at_end():
        return result
    while True:
        key = cursor.name()
        cursor.require(":")
        for field in cursor.fields():
            if owner.setdefault(field, key) != key:
                raise OptionError(
                    f"orc.encrypt {text!r}: column {field} has two keys, {owner[field]} and {key}"
                )
            if field not in result.setdefault(key, []):
                result[key].append(field)
        if not cursor.take(";"):
            break
    if not cursor.at_end():
        raise cursor.error("unexpected text")
    return result


def parse_mask_option(text: str) -> dict[str, str]:
    """`mask[,param]:col,col;mask2:col` -> {field: mask text}; two masks on one column are an error."""
    result: dict[str, str] = {}
    cursor = _Cursor((text or "").strip(), "orc.mask")
    if cursor.at_end():
        return result
    while True:
        start = cursor.position
        cursor.name()
        while cursor.take(","):
            cursor.name()
        mask = cursor.text[start : cursor.position]
        cursor.require(":")
        for field in cursor.fields():
            if result.setdefault(field, mask) != mask:
                raise OptionError(
                    f"orc.mask {text!r}: column {field} has two masks, {result[field]} and {mask}"
                )
        if not cursor.take(";"):
            break
    if not cursor.at_end():
        raise cursor.error("unexpected text")
    return result


def parse_mask(text: str) -> MaskSpec:
    """`redact,Xx,`0:3`` -> MaskSpec("redact", ("Xx", "0:3"), text)."""
    cursor = _Cursor(text.strip(), "mask")
    name = cursor.name()
    parameters: list[str] = []
    while cursor.take(","):
        parameters.append(cursor.name())
    if not cursor.at_end():
        raise cursor.error("unexpected text")
    return MaskSpec(name, tuple(parameters), text.strip())


def format_mask(name: str, parameters: tuple[str, ...] | list[str] = ()) -> str:
    """The mask text for a name and parameters, quoting what needs it."""
    return ",".join(quote_name(part) for part in (name, *parameters))
