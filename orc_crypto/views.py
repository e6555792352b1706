"""What the read commands (and later the API) show of keys and ORC files: pydantic models.

A key's view is its metadata only: the model has no field that could hold key material.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from watershed.orc_crypto.keys.material import MasterKeyRecord


class KeyMetadata(BaseModel):
    name: str
    cipher: str
    bit_length: int
    #: number of versions; the current one is `name@current_version`
    versions: int
    current_version: int
    created_ms: int
    created: str
    description: str | None = None
    attributes: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, record: MasterKeyRecord) -> KeyMetadata:
        return cls(
            name=record.name,
            cipher=record.cipher,
            bit_length=record.bit_length,
            versions=len(record.versions),
            current_version=record.current_version,
            created_ms=record.created_ms,
            created=datetime.fromtimestamp(record.created_ms / 1000, tz=UTC).isoformat(timespec="seconds"),
            description=record.description,
            attributes=dict(record.attributes),
        )


class KeyList(BaseModel):
    """`kms list`: the keys of one keystore."""

    keystore: str
    keys: list[KeyMetadata] = Field(default_factory=list)


class OrcStream(BaseModel):
    kind: int  # the ORC Stream.Kind number (1 DATA, 2 LENGTH, ..., 6 ROW_INDEX, ...)
    column: int
    length: int


class OrcKeyRef(BaseModel):
    name: str
    version: int
    algorithm: int  # the ORC EncryptionAlgorithm number (1 AES_CTR_128, 2 AES_CTR_256)


class OrcMask(BaseModel):
    name: str
    parameters: list[str] = Field(default_factory=list)
    columns: list[int] = Field(default_factory=list)


class OrcColumnLength(BaseModel):
    column: int
    length: int


class OrcVariant(BaseModel):
    root: int
    key: str
    stripe_statistics: list[OrcColumnLength] = Field(default_factory=list)
    file_statistics_bytes: int


class OrcStripe(BaseModel):
    offset: int
    rows: int
    index_length: int
    data_length: int
    footer_length: int
    encrypt_stripe_id: int | None = None
    streams: list[OrcStream] = Field(default_factory=list)
    #: the encrypted streams of each variant, in the order of the file's variants
    variant_streams: list[list[OrcStream]] = Field(default_factory=list)


class OrcFileDescription(BaseModel):
    """`orc inspect`: an ORC file's tail and encryption layout (no key needed, none shown)."""

    file: str
    file_length: int
    version: str
    compression: str
    compression_block_size: int
    writer_version: int
    rows: int
    content_length: int
    stripe_statistics_length: int
    stripe_statistics_offset: int
    metadata_length: int
    footer_length: int
    encrypted: bool
    keys: list[OrcKeyRef] = Field(default_factory=list)
    masks: list[OrcMask] = Field(default_factory=list)
    variants: list[OrcVariant] = Field(default_factory=list)
    stripes: list[OrcStripe] = Field(default_factory=list)


def describe_orc(path) -> OrcFileDescription:
    """Read an ORC file's tail and stripe footers into an OrcFileDescription (raises OrcCryptoError)."""
    from pathlib import Path

    from watershed.orc_crypto.codec.compression import CODEC_NAMES
    from watershed.orc_crypto.codec.stripes import read_stripe_footer
    from watershed.orc_crypto.codec.tail import read_tail

    path = Path(path)
    tail = read_tail(path)
    data = path.read_bytes()
    ps, footer = tail.postscript, tail.footer
    enc = footer.encryption

    def streams(items) -> list[OrcStream]:
        return [OrcStream(kind=x.kind, column=x.column, length=x.length) for x in items]

    stripes = []
    for index, stripe in enumerate(footer.stripes):
        stripe_footer = read_stripe_footer(tail, data, index)
        stripes.append(
            OrcStripe(
                offset=stripe.offset,
                rows=stripe.numberOfRows,
                index_length=stripe.indexLength,
                data_length=stripe.dataLength,
                footer_length=stripe.footerLength,
                encrypt_stripe_id=stripe.encryptStripeId if stripe.HasField("encryptStripeId") else None,
                streams=streams(stripe_footer.streams),
                variant_streams=[streams(variant.streams) for variant in stripe_footer.encryption],
            )
        )
    return OrcFileDescription(
        file=str(path),
        file_length=tail.file_length,
        version=".".join(map(str, ps.version)),
        compression=str(CODEC_NAMES.get(ps.compression, ps.compression)),
        compression_block_size=ps.compressionBlockSize,
        writer_version=ps.writerVersion,
        rows=footer.numberOfRows,
        content_length=footer.contentLength,
        stripe_statistics_length=ps.stripeStatisticsLength,
        stripe_statistics_offset=tail.stripe_statistics_offset,
        metadata_length=ps.metadataLength,
        footer_length=ps.footerLength,
        encrypted=tail.is_encrypted,
        keys=[OrcKeyRef(name=k.keyName, version=k.keyVersion, algorithm=k.algorithm) for k in enc.key],
        masks=[
            OrcMask(name=m.name, parameters=list(m.maskParameters), columns=list(m.columns)) for m in enc.mask
        ],
        variants=[
            OrcVariant(
                root=v.root,
                key=enc.key[v.key].keyName,
                stripe_statistics=[
                    OrcColumnLength(column=s.column, length=s.length) for s in v.stripeStatistics
                ],
                file_statistics_bytes=len(v.fileStatistics),
            )
            for v in enc.variants
        ],
        stripes=stripes,
    )
