"""Masked values of an encrypted column subtree, as Arrow arrays (ORC Java's mask semantics).

A mask applies to the whole subtree under the encrypted column: compound types keep
their shape (struct, list and map nulls and lengths stay) and mask their children;
a sub-column with a mask of its own uses that one below it. `nullify` makes a column
entirely null at the level it applies to (a nullified struct is null itself).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from watershed.graph.errors import WatershedError
from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.codec.tail import column_ancestors
from watershed.orc_crypto.masking.redact import RedactMask
from watershed.orc_crypto.masking.sha256 import sha256_array
from watershed.orc_crypto.options import MaskSpec
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

NULLIFY = MaskSpec("nullify", (), "nullify")
MASK_NAMES = ("nullify", "redact", "sha256")


class MaskError(WatershedError, ValueError):
    """A mask that cannot be applied (unknown name, bad parameters, unsupported type)."""


def check_mask(spec: MaskSpec) -> None:
    """Raise MaskError unless `spec` names a mask this module applies, with valid parameters."""
    if spec.name not in MASK_NAMES:
        raise MaskError(f"unknown mask {spec.name!r} (known: {', '.join(MASK_NAMES)})")
    if spec.name == "redact":
        try:
            RedactMask.parse(spec.parameters)
        except ValueError as exc:
            raise MaskError(f"mask {spec.text!r}: {exc}") from exc
    elif spec.parameters:
        raise MaskError(f"mask {spec.text!r}: {spec.name} takes no parameters")


class SubtreeMasker:
    """Applies the masks of one encrypted subtree (its root's and its sub-columns' own)."""

    def __init__(self, types: list[pb.Type], root: int, masks: Mapping[int, MaskSpec]) -> None:
        self.types, self.root = types, root
        self.masks = dict(masks)
        for spec in self.masks.values():
            check_mask(spec)
        self._redact: dict[tuple[str, ...], RedactMask] = {}

    @property
    def root_mask(self) -> MaskSpec:
        return self.masks.get(self.root, NULLIFY)

    def effective_mask(self, column: int) -> MaskSpec:
        """The mask that decides `column`'s values (a nullified ancestor decides for its subtree)."""
        path = column_ancestors(self.types, column)
        spec = NULLIFY
        for node in path[path.index(self.root) :]:
            spec = self.masks.get(node, spec)
            if spec.name == "nullify":
                return spec
        return spec

    def needs_values(self) -> bool:
        """False when the root is nullified: the masked copy is all null, whatever the data."""
        return self.root_mask.name != "nullify"

    def mask(self, values: pa.Array) -> pa.Array:
        return self._mask(values, self.root, self.root_mask)

    def _mask(self, values: pa.Array, column: int, inherited: MaskSpec) -> pa.Array:
        spec = self.masks.get(column, inherited)
        if spec.name == "nullify":
            return pa.nulls(len(values), type=values.type)
        column_type = self.types[column]
        kind = column_type.kind
        children = list(column_type.subtypes)
        if kind == kinds.STRUCT:
            fields = [values.type.field(i) for i in range(values.type.num_fields)]
            masked = [self._mask(values.field(i), child, spec) for i, child in enumerate(children)]
            return pa.StructArray.from_arrays(masked, fields=fields, mask=_null_mask(values))
        if kind in (kinds.LIST, kinds.MAP) and values.offset:
            values = pa.concat_arrays([values])  # offsets from 0, so keys and items line up
        if kind == kinds.LIST:
            items = self._mask(values.values, children[0], spec)
            return pa.ListArray.from_arrays(values.offsets, items, type=values.type, mask=_null_mask(values))
        if kind == kinds.MAP:
            keys = self._mask(values.keys, children[0], spec)
            items = self._mask(values.items, children[1], spec)
            return pa.MapArray.from_arrays(
                values.offsets, keys, items, type=values.type, mask=_null_mask(values)
            )
        if kind == kinds.UNION:
            raise MaskError("masks other than nullify are not supported on union columns")
        if spec.name == "sha256":
            return sha256_array(values, column_type)
        redact = self._redact.get(spec.parameters)
        if redact is None:
            redact = self._redact[spec.parameters] = RedactMask.parse(spec.parameters)
        return redact.mask(values, kind)


def _null_mask(values: pa.Array) -> pa.Array | None:
    return values.is_null() if values.null_count else None
