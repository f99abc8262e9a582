"""The numpy version of ``simhash.simhash64``: the reference the compiled kernel
(``_simhash.c``) matches, and the fallback where it could not be built.

A module of its own so that numpy is imported only when this runs (see
``simhash._simhash64_numpy``).
"""

from __future__ import annotations

from typing import Final

import numpy as np

_MASK64: Final = (1 << 64) - 1
_U64 = np.uint64
# UTF-8 bytes of word characters map to themselves (ASCII letters lower-cased), all others to 0.
# Non-ASCII letters keep their case: str.lower() costs 40 µs on a 14,000-character text with
# one accented letter, about half of the whole fingerprint.
_WORD_BYTES: Final = bytes(
    (b | 0x20 if 0x41 <= b <= 0x5A else b) if chr(b).isalnum() or b >= 0x80 else 0
    for b in range(256)
)
_PAD: Final = bytes(8)
# _LOW_BYTES[k]: the low k bytes of a 64-bit word (k >= 8: all of them).
_LOW_BYTES: Final = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [_MASK64], dtype="<u8")
_EIGHT: Final = np.intp(8)
# Even, so that head * _HEAD_WEIGHT + tail (head == tail for words up to 8 bytes) stays odd
# times the word: distinct short words keep distinct values.
_HEAD_WEIGHT: Final = _U64(0x27D4EB2F165667C6)
# Odd multipliers (golden ratio, xxHash prime 2) that weigh the three words of a shingle.
_K1: Final = _U64(0x9E3779B97F4A7C15)
_K2: Final = _U64(0xC2B2AE3D27D4EB4F)
# The splitmix64 finalizer: every output bit depends on every input bit.
_MIX1: Final = _U64(0xBF58476D1CE4E5B9)
_MIX2: Final = _U64(0x94D049BB133111EB)
_S30, _S27, _S31 = _U64(30), _U64(27), _U64(31)
_PLANE_SHIFTS: Final = np.arange(8, dtype=_U64)[:, None]
_LOW_BIT_OF_EACH_BYTE: Final = _U64(0x0101010101010101)
_CHUNK: Final = 255  # byte lanes count up to 255 without carrying into their neighbour
_CHUNK_STARTS: Final = np.arange(0, 1 << 20, _CHUNK)


def simhash64_numpy(utf8: bytes) -> int:
    """``simhash64`` of UTF-8 text in numpy: the reference the compiled kernel matches."""
    data = utf8.translate(_WORD_BYTES)
    buffer = np.frombuffer(b"\0" + data + _PAD, dtype=np.uint8)
    is_word = buffer != 0
    edges = np.flatnonzero(is_word[1:] != is_word[:-1])
    if not edges.size:
        return 0
    starts = edges[0::2]
    ends = edges[1::2]
    # The 8 bytes at every offset of the text, read in place (unaligned, little-endian); a
    # word's bytes are followed by a 0 byte, so masking its length keeps the word alone.
    windows = np.ndarray((len(data),), dtype="<u8", buffer=buffer, offset=1, strides=(1,))
    masks = _LOW_BYTES.take(ends - starts, mode="clip")
    words = windows.take(starts)
    words &= masks
    words *= _HEAD_WEIGHT
    tails = windows.take(np.maximum(ends - _EIGHT, starts))
    tails &= masks
    words += tails
    if words.size < 3:
        words = np.concatenate((words, np.zeros(3 - words.size, dtype="<u8")))
    features = words[:-2] * _K1
    features += words[1:-1] * _K2
    features += words[2:]
    features ^= features >> _S30
    features *= _MIX1
    features ^= features >> _S27
    features *= _MIX2
    features ^= features >> _S31
    return _majority(features)


def _majority(features: np.ndarray) -> int:
    """The int whose bit ``i`` is set when more than half of ``features`` have bit ``i`` set.

    Bit-sliced counting: plane ``j`` holds bit ``j`` of every byte of every feature as a 0/1
    byte lane, so adding planes counts 8 bit positions per lane at once; lanes are summed in
    chunks of 255 features so that no lane overflows into the next. (A numpy call costs about
    a microsecond here whatever its size: fewer, larger calls win.)
    """
    count = features.size
    planes = np.right_shift(features, _PLANE_SHIFTS)  # (8, count): one call, not eight
    planes &= _LOW_BIT_OF_EACH_BYTE
    chunk_starts = (
        _CHUNK_STARTS[: -(-count // _CHUNK)]
        if count <= _CHUNK_STARTS[-1]
        else np.arange(0, count, _CHUNK)
    )
    chunks = np.add.reduceat(planes, chunk_starts, axis=1)
    # counts[j, b]: how many features have bit 8 * b + j set.
    counts = chunks.view(np.uint8).reshape(8, -1, 8).sum(axis=1)
    # Packing along j puts bit 8 * b + j at bit j of byte b: the little-endian fingerprint.
    packed = np.packbits(counts > count // 2, axis=0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")
