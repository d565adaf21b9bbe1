"""The protobuf wire format, the little of it the binary exports write by hand (pprof.py,
otlp.py): no protobuf dependency. Each function returns one field's encoding; a field holding
its type's default (0) is left out, as proto3 writes it."""

from __future__ import annotations

import struct


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 as ten-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def int_field(field: int, value: int) -> bytes:
    """A varint field (int32, int64, uint64, bool); nothing for 0."""
    return key(field, 0) + varint(value) if value else b""


def fixed64_field(field: int, value: int) -> bytes:
    """A fixed64 field, eight bytes little-endian; nothing for 0."""
    return key(field, 1) + struct.pack("<Q", value & ((1 << 64) - 1)) if value else b""


def bytes_field(field: int, data: bytes) -> bytes:
    """A length-delimited field: bytes, a string's UTF-8, an embedded message (written even
    when empty: a repeated message's empty element keeps its place)."""
    return key(field, 2) + varint(len(data)) + data


def string_field(field: int, text: str) -> bytes:
    """A string field; nothing for ""."""
    return bytes_field(field, text.encode("utf-8", "replace")) if text else b""


def packed_field(field: int, values: list[int]) -> bytes:
    """A packed repeated varint field; nothing for no values."""
    return bytes_field(field, b"".join(varint(v) for v in values)) if values else b""
