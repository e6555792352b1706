"""ORC tail/stripe protobuf messages, built with the protobuf runtime API.

Field numbers follow apache/orc-format orc_proto.proto (see the encryption doc).
Enums are declared as uint32 so unknown values survive a read/write round trip;
statistics sub-messages orc_crypto never inspects are kept as opaque bytes (same
wire type), so they are copied unchanged.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_U64, _U32, _S64, _S32, _I32, _DBL, _STR, _BYTES, _BOOL, _MSG = (
    _F.TYPE_UINT64,
    _F.TYPE_UINT32,
    _F.TYPE_SINT64,
    _F.TYPE_SINT32,
    _F.TYPE_INT32,
    _F.TYPE_DOUBLE,
    _F.TYPE_STRING,
    _F.TYPE_BYTES,
    _F.TYPE_BOOL,
    _F.TYPE_MESSAGE,
)

_PACKAGE = "watershed.orc"
_MESSAGES: dict[str, list[tuple]] = {
    "PostScript": [
        ("footerLength", 1, _OPT, _U64),
        ("compression", 2, _OPT, _U32),
        ("compressionBlockSize", 3, _OPT, _U64),
        ("version", 4, _REP, _U32, None, True),
        ("metadataLength", 5, _OPT, _U64),
        ("writerVersion", 6, _OPT, _U32),
        ("stripeStatisticsLength", 7, _OPT, _U64),
        ("magic", 8000, _OPT, _STR),
    ],
    "StringPair": [("key", 1, _OPT, _STR), ("value", 2, _OPT, _STR)],
    "Type": [
        ("kind", 1, _OPT, _U32),
        ("subtypes", 2, _REP, _U32, None, True),
        ("fieldNames", 3, _REP, _STR),
        ("maximumLength", 4, _OPT, _U32),
        ("precision", 5, _OPT, _U32),
        ("scale", 6, _OPT, _U32),
        ("attributes", 7, _REP, _MSG, "StringPair"),
    ],
    "StripeInformation": [
        ("offset", 1, _OPT, _U64),
        ("indexLength", 2, _OPT, _U64),
        ("dataLength", 3, _OPT, _U64),
        ("footerLength", 4, _OPT, _U64),
        ("numberOfRows", 5, _OPT, _U64),
        ("encryptStripeId", 6, _OPT, _U64),
        ("encryptedLocalKeys", 7, _REP, _BYTES),
    ],
    "UserMetadataItem": [("name", 1, _OPT, _STR), ("value", 2, _OPT, _BYTES)],
    "StringStatistics": [
        ("minimum", 1, _OPT, _STR),
        ("maximum", 2, _OPT, _STR),
        ("sum", 3, _OPT, _S64),
        ("lowerBound", 4, _OPT, _STR),
        ("upperBound", 5, _OPT, _STR),
    ],
    # The typed statistics below travel as opaque bytes inside ColumnStatistics; they are
    # parsed only where statistics are merged (orc_crypto.codec.statistics).
    "IntegerStatistics": [("minimum", 1, _OPT, _S64), ("maximum", 2, _OPT, _S64), ("sum", 3, _OPT, _S64)],
    "DoubleStatistics": [("minimum", 1, _OPT, _DBL), ("maximum", 2, _OPT, _DBL), ("sum", 3, _OPT, _DBL)],
    "BucketStatistics": [("count", 1, _REP, _U64, None, True)],
    "DecimalStatistics": [("minimum", 1, _OPT, _STR), ("maximum", 2, _OPT, _STR), ("sum", 3, _OPT, _STR)],
    "DateStatistics": [("minimum", 1, _OPT, _S32), ("maximum", 2, _OPT, _S32)],
    "TimestampStatistics": [
        ("minimum", 1, _OPT, _S64),
        ("maximum", 2, _OPT, _S64),
        ("minimumUtc", 3, _OPT, _S64),
        ("maximumUtc", 4, _OPT, _S64),
        ("minimumNanos", 5, _OPT, _I32),
        ("maximumNanos", 6, _OPT, _I32),
    ],
    "BinaryStatistics": [("sum", 1, _OPT, _S64)],
    "CollectionStatistics": [
        ("minChildren", 1, _OPT, _U64),
        ("maxChildren", 2, _OPT, _U64),
        ("totalChildren", 3, _OPT, _U64),
    ],
    "ColumnStatistics": [
        ("numberOfValues", 1, _OPT, _U64),
        ("intStatistics", 2, _OPT, _BYTES),
        ("doubleStatistics", 3, _OPT, _BYTES),
        ("stringStatistics", 4, _OPT, _MSG, "StringStatistics"),
        ("bucketStatistics", 5, _OPT, _BYTES),
        ("decimalStatistics", 6, _OPT, _BYTES),
        ("dateStatistics", 7, _OPT, _BYTES),
        ("binaryStatistics", 8, _OPT, _BYTES),
        ("timestampStatistics", 9, _OPT, _BYTES),
        ("hasNull", 10, _OPT, _BOOL),
        ("bytesOnDisk", 11, _OPT, _U64),
        ("collectionStatistics", 12, _OPT, _BYTES),
    ],
    "RowIndexEntry": [
        ("positions", 1, _REP, _U64, None, True),
        ("statistics", 2, _OPT, _MSG, "ColumnStatistics"),
    ],
    "RowIndex": [("entry", 1, _REP, _MSG, "RowIndexEntry")],
    "StripeStatistics": [("colStats", 1, _REP, _MSG, "ColumnStatistics")],
    "Metadata": [("stripeStats", 1, _REP, _MSG, "StripeStatistics")],
    "ColumnarStripeStatistics": [("colStats", 1, _REP, _MSG, "ColumnStatistics")],
    "FileStatistics": [("column", 1, _REP, _MSG, "ColumnStatistics")],
    "Stream": [("kind", 1, _OPT, _U32), ("column", 2, _OPT, _U32), ("length", 3, _OPT, _U64)],
    "ColumnEncoding": [
        ("kind", 1, _OPT, _U32),
        ("dictionarySize", 2, _OPT, _U32),
        ("bloomEncoding", 3, _OPT, _U32),
    ],
    "StripeEncryptionVariant": [
        ("streams", 1, _REP, _MSG, "Stream"),
        ("encoding", 2, _REP, _MSG, "ColumnEncoding"),
    ],
    "StripeFooter": [
        ("streams", 1, _REP, _MSG, "Stream"),
        ("columns", 2, _REP, _MSG, "ColumnEncoding"),
        ("writerTimezone", 3, _OPT, _STR),
        ("encryption", 4, _REP, _MSG, "StripeEncryptionVariant"),
    ],
    "DataMask": [
        ("name", 1, _OPT, _STR),
        ("maskParameters", 2, _REP, _STR),
        ("columns", 3, _REP, _U32, None, True),
    ],
    "EncryptionKey": [
        ("keyName", 1, _OPT, _STR),
        ("keyVersion", 2, _OPT, _U32),
        ("algorithm", 3, _OPT, _U32),
    ],
    "EncryptionVariant": [
        ("root", 1, _OPT, _U32),
        ("key", 2, _OPT, _U32),
        ("encryptedKey", 3, _OPT, _BYTES),
        ("stripeStatistics", 4, _REP, _MSG, "Stream"),
        ("fileStatistics", 5, _OPT, _BYTES),
    ],
    "Encryption": [
        ("mask", 1, _REP, _MSG, "DataMask"),
        ("key", 2, _REP, _MSG, "EncryptionKey"),
        ("variants", 3, _REP, _MSG, "EncryptionVariant"),
        ("keyProvider", 4, _OPT, _U32),
    ],
    "Footer": [
        ("headerLength", 1, _OPT, _U64),
        ("contentLength", 2, _OPT, _U64),
        ("stripes", 3, _REP, _MSG, "StripeInformation"),
        ("types", 4, _REP, _MSG, "Type"),
        ("metadata", 5, _REP, _MSG, "UserMetadataItem"),
        ("numberOfRows", 6, _OPT, _U64),
        ("statistics", 7, _REP, _MSG, "ColumnStatistics"),
        ("rowIndexStride", 8, _OPT, _U32),
        ("writer", 9, _OPT, _U32),
        ("encryption", 10, _OPT, _MSG, "Encryption"),
        ("calendar", 11, _OPT, _U32),
        ("softwareVersion", 12, _OPT, _STR),
    ],
}


def _build() -> dict[str, type]:
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="watershed_orc_proto.proto", package=_PACKAGE, syntax="proto2"
    )
    for message_name, fields in _MESSAGES.items():
        message = file_proto.message_type.add(name=message_name)
        for spec in fields:
            name, number, label, ftype = spec[:4]
            type_name = spec[4] if len(spec) > 4 else None
            packed = spec[5] if len(spec) > 5 else False
            field = message.field.add(name=name, number=number, label=label, type=ftype)
            if type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if packed:
                field.options.packed = True
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in _MESSAGES
    }


_CLASSES = _build()
PostScript = _CLASSES["PostScript"]
Footer = _CLASSES["Footer"]
Metadata = _CLASSES["Metadata"]
StripeStatistics = _CLASSES["StripeStatistics"]
StripeInformation = _CLASSES["StripeInformation"]
Type = _CLASSES["Type"]
ColumnStatistics = _CLASSES["ColumnStatistics"]
StringStatistics = _CLASSES["StringStatistics"]
IntegerStatistics = _CLASSES["IntegerStatistics"]
DoubleStatistics = _CLASSES["DoubleStatistics"]
BucketStatistics = _CLASSES["BucketStatistics"]
DecimalStatistics = _CLASSES["DecimalStatistics"]
DateStatistics = _CLASSES["DateStatistics"]
TimestampStatistics = _CLASSES["TimestampStatistics"]
BinaryStatistics = _CLASSES["BinaryStatistics"]
CollectionStatistics = _CLASSES["CollectionStatistics"]
RowIndexEntry = _CLASSES["RowIndexEntry"]
RowIndex = _CLASSES["RowIndex"]
ColumnarStripeStatistics = _CLASSES["ColumnarStripeStatistics"]
FileStatistics = _CLASSES["FileStatistics"]
Stream = _CLASSES["Stream"]
ColumnEncoding = _CLASSES["ColumnEncoding"]
StripeEncryptionVariant = _CLASSES["StripeEncryptionVariant"]
StripeFooter = _CLASSES["StripeFooter"]
DataMask = _CLASSES["DataMask"]
EncryptionKey = _CLASSES["EncryptionKey"]
EncryptionVariant = _CLASSES["EncryptionVariant"]
Encryption = _CLASSES["Encryption"]
