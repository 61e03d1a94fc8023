"""A Bloom filter of an engine's vocabulary: "may hold this term" without listing every term.

Bloom, "Space/time trade-offs in hash coding with allowable errors" (CACM 1970). For n members and a false
positive rate p the filter has m = ceil(-n ln p / (ln 2)^2) bits and k = round((m / n) ln 2) hashes; the k bit
positions of a term are g_i = h1 + i * h2 (mod m), i = 0..k-1 (Kirsch & Mitzenmacher, "Less hashing, same
performance", ESA 2006), with h1, h2 the two halves of the term's BLAKE2b digest (stable across processes,
unlike ``hash``) and h1 + i * h2 taken modulo 2^64 (so numpy builds the filter for a whole vocabulary at
once). There are no false negatives: a term the engine holds is always reported as possible.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

import numpy as np

DEFAULT_FPR = 0.01
MAX_HASHES = 16


MASK64 = (1 << 64) - 1


def _digest(term: str) -> bytes:
    return hashlib.blake2b(term.encode("utf-8"), digest_size=16).digest()


def _positions(term: str, hashes: int, bits: int) -> list[int]:
    digest = _digest(term)
    h1 = int.from_bytes(digest[:8], "little")
    h2 = int.from_bytes(digest[8:], "little") | 1
    return [((h1 + i * h2) & MASK64) % bits for i in range(hashes)]


class BloomFilter:
    """Immutable once built; ``bits`` is the bit array (``len(bits) * 8`` positions)."""

    def __init__(self, bits: bytes, hashes: int) -> None:
        if not bits:
            raise ValueError("a Bloom filter needs at least one byte")
        if not 1 <= hashes <= MAX_HASHES:
            raise ValueError(f"hashes must be in [1, {MAX_HASHES}], got {hashes}")
        self.bits = bytes(bits)
        self.hashes = hashes
        self._m = len(self.bits) * 8

    @classmethod
    def build(cls, terms: Iterable[str], count: int, fpr: float = DEFAULT_FPR) -> BloomFilter:
        """A filter sized for ``count`` terms at false positive rate ``fpr`` holding ``terms``."""
        if not 0 < fpr < 1:
            raise ValueError(f"fpr must be in (0, 1), got {fpr}")
        n = max(count, 1)
        m = max(64, math.ceil(-n * math.log(fpr) / math.log(2) ** 2))  # m = -n ln p / (ln 2)^2
        m = (m + 7) // 8 * 8
        k = min(MAX_HASHES, max(1, round(m / n * math.log(2))))  # k = (m / n) ln 2
        array = np.zeros(m // 8, dtype=np.uint8)
        digests = np.frombuffer(b"".join(_digest(t) for t in terms), dtype="<u8").reshape(-1, 2)
        if len(digests):
            h1, h2 = digests[:, :1], digests[:, 1:] | np.uint64(1)
            pos = (h1 + np.arange(k, dtype=np.uint64) * h2) % np.uint64(m)  # uint64: wraps modulo 2^64
            np.bitwise_or.at(
                array, pos >> np.uint64(3), np.left_shift(1, pos & np.uint64(7)).astype(np.uint8)
            )
        return cls(array.tobytes(), k)

    def __contains__(self, term: object) -> bool:
        if not isinstance(term, str):
            return False
        bits = self.bits
        return all(bits[pos >> 3] >> (pos & 7) & 1 for pos in _positions(term, self.hashes, self._m))
