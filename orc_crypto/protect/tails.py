"""What an ORC file's tail says about its protection, in the names the plan and the records use:
each encrypted column as ORC's option syntax writes it (`ssn`, `addr.zip`, `tags._elem`) with its
key name, key version and mask. The planner compares it with the policy; apply checks a rewritten
(or already rewritten) file against it."""

from __future__ import annotations

from watershed.graph.protection import ColumnKey
from watershed.orc_crypto.codec.kinds import LIST, MAP, STRUCT
from watershed.orc_crypto.codec.tail import OrcTail
from watershed.orc_crypto.errors import OrcFormatError
from watershed.orc_crypto.options import format_mask, quote_name


def column_names(tail: OrcTail) -> dict[int, str]:
    """ORC column id -> its name as ORC's option syntax writes it (`a`, `addr.zip`, `tags._elem`)."""
    types = tail.footer.types
    names: dict[int, str] = {}

    def visit(column: int, prefix: str) -> None:
        node = types[column]
        if node.kind == STRUCT:
            children = list(zip(node.fieldNames, node.subtypes, strict=False))
        elif node.kind == LIST:
            children = [("_elem", node.subtypes[0])] if node.subtypes else []
        elif node.kind == MAP:
            children = list(zip(("_key", "_value"), node.subtypes, strict=False))
        else:
            children = [(f"_{i}", child) for i, child in enumerate(node.subtypes)]
        for child_name, child in children:
            name = f"{prefix}.{quote_name(child_name)}" if prefix else quote_name(child_name)
            names[child] = name
            visit(child, name)

    visit(0, "")
    return names


def file_protection(tail: OrcTail) -> dict[str, ColumnKey]:
    """What a file's tail says it encrypts: variant root column name -> key name, version, mask."""
    if not tail.is_encrypted:
        return {}
    names = column_names(tail)
    encryption = tail.footer.encryption
    masks: dict[int, str] = {}
    for mask in encryption.mask:
        for column in mask.columns:
            masks[column] = format_mask(mask.name, tuple(mask.maskParameters))
    current: dict[str, ColumnKey] = {}
    for number, variant in enumerate(encryption.variants):
        # indexes come from the file: a corrupt tail must be a clear error, not an IndexError
        if not 0 <= variant.key < len(encryption.key):
            raise OrcFormatError(
                tail.path,
                f"encryption variant {number} names key {variant.key}, "
                f"but the footer has {len(encryption.key)} key(s)",
            )
        if variant.root not in names:
            raise OrcFormatError(
                tail.path,
                f"encryption variant {number} roots at column {variant.root}, "
                f"which the file's {len(tail.footer.types)} type(s) do not have",
            )
        key = encryption.key[variant.key]
        name = names[variant.root]
        current[name] = ColumnKey(
            key=key.keyName, mask=masks.get(variant.root, "nullify"), version=key.keyVersion
        )
    return current
