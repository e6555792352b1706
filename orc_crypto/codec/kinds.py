"""ORC's enumerations as numbers: column type kinds, stream kinds and column encodings (orc_proto.proto)."""

from __future__ import annotations

# Type.Kind
BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, STRING, BINARY, TIMESTAMP = range(10)
LIST, MAP, STRUCT, UNION, DECIMAL, DATE, VARCHAR, CHAR, TIMESTAMP_INSTANT = range(10, 19)

# Stream.Kind
PRESENT, DATA, LENGTH, DICTIONARY_DATA, DICTIONARY_COUNT, SECONDARY, ROW_INDEX = range(7)
BLOOM_FILTER, BLOOM_FILTER_UTF8, ENCRYPTED_INDEX, ENCRYPTED_DATA = range(7, 11)
STRIPE_STATISTICS, FILE_STATISTICS = 100, 101
#: stream kinds that live in a stripe's index area; all others are data (ORC's StreamName.getArea)
INDEX_KINDS = frozenset({DICTIONARY_COUNT, ROW_INDEX, BLOOM_FILTER, BLOOM_FILTER_UTF8, ENCRYPTED_INDEX})

# ColumnEncoding.Kind
DIRECT, DICTIONARY, DIRECT_V2, DICTIONARY_V2 = range(4)
