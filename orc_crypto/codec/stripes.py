"""Stripe footers and the placement of every stream inside a stripe."""

from __future__ import annotations

from dataclasses import dataclass

from watershed.orc_crypto.codec.kinds import ENCRYPTED_DATA, ENCRYPTED_INDEX, INDEX_KINDS
from watershed.orc_crypto.codec.tail import OrcTail, decompress, parse_message
from watershed.orc_crypto.errors import OrcFormatError
from watershed.orc_crypto.proto import orc_proto_pb2 as pb


@dataclass(frozen=True)
class StreamPlace:
    kind: int
    column: int
    offset: int  # absolute file offset
    length: int
    variant: int | None  # None: unencrypted


def read_stripe_footer(tail: OrcTail, data: bytes, stripe_index: int) -> pb.StripeFooter:
    stripe = tail.footer.stripes[stripe_index]
    start = stripe.offset + stripe.indexLength + stripe.dataLength
    raw = data[start : start + stripe.footerLength]
    plain = decompress(tail.path, tail.codec, raw, tail.block_size, f"stripe {stripe_index} footer")
    return parse_message(pb.StripeFooter(), plain, tail.path, f"stripe {stripe_index} footer")


def stream_places(tail: OrcTail, stripe_index: int, footer: pb.StripeFooter) -> list[StreamPlace]:
    """Every real stream of the stripe with its file offset: areas 1..4 in order (doc §3.6)."""
    stripe = tail.footer.stripes[stripe_index]
    if not footer.encryption:
        # Without variants the areas are exactly the list order.
        return _sequential_places(tail, stripe_index, footer)
    groups: list[tuple[int | None, list]] = [(None, list(footer.streams))]
    groups += [(v, list(variant.streams)) for v, variant in enumerate(footer.encryption)]
    places: list[StreamPlace] = []
    offset = stripe.offset
    for want_index in (True, False):
        for variant, streams in groups:
            for stream in streams:
                if stream.kind in (ENCRYPTED_INDEX, ENCRYPTED_DATA):
                    continue
                if (stream.kind in INDEX_KINDS) != want_index:
                    continue
                places.append(StreamPlace(stream.kind, stream.column, offset, stream.length, variant))
                offset += stream.length
    if offset - stripe.offset != stripe.indexLength + stripe.dataLength:
        raise OrcFormatError(
            tail.path,
            f"stripe {stripe_index}: stream lengths add up to {offset - stripe.offset}, "
            f"expected {stripe.indexLength + stripe.dataLength}",
        )
    return places


def _sequential_places(tail: OrcTail, stripe_index: int, footer: pb.StripeFooter) -> list[StreamPlace]:
    stripe = tail.footer.stripes[stripe_index]
    offset = stripe.offset
    places = []
    for stream in footer.streams:
        if stream.kind in (ENCRYPTED_INDEX, ENCRYPTED_DATA):
            continue
        places.append(StreamPlace(stream.kind, stream.column, offset, stream.length, None))
        offset += stream.length
    if offset - stripe.offset != stripe.indexLength + stripe.dataLength:
        raise OrcFormatError(
            tail.path,
            f"stripe {stripe_index}: stream lengths add up to {offset - stripe.offset}, "
            f"expected {stripe.indexLength + stripe.dataLength}",
        )
    return places
