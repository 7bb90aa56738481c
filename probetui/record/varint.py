"""Encode LEB128 varints, unsigned and zig-zag signed: the numbers in a chunk's byte string."""

from __future__ import annotations


def put(out: bytearray, n: int) -> None:
    """Append unsigned `n` (>= 0), seven bits a byte, low bits first."""
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def put_signed(out: bytearray, n: int) -> None:
    """Append signed `n` zig-zag coded: 0, -1, 1, -2 ... become 0, 1, 2, 3 ..."""
    put(out, (n << 1) if n >= 0 else ((-n << 1) - 1))


def get(buf: bytes, i: int) -> tuple[int, int]:
    """Return the unsigned number at `buf[i]` and the offset after it."""
    b = buf[i]
    if b < 0x80:
        return b, i + 1
    n = b & 0x7F
    shift = 7
    i += 1
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7


def get_signed(buf: bytes, i: int) -> tuple[int, int]:
    n, i = get(buf, i)
    return (n >> 1) if not n & 1 else -((n + 1) >> 1), i


__all__ = ["get", "get_signed", "put", "put_signed"]
