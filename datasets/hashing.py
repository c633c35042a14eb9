"""Feature hashing as Vowpal Wabbit does it, compiled for the text parsers.

A name is hashed with MurmurHash3 (x86, 32 bits: Appleby's public-domain
algorithm, the one Vowpal Wabbit and scikit-learn's FeatureHasher use) seeded
with its namespace's hash, except that a name of decimal digits alone is its
number plus the seed (Vowpal Wabbit's "strings" hashing: feature 17 of the
default namespace is index 17). A namespace's hash is its name's, seeded 0; the
default namespace (a bare '|') hashes to 0. The index is the hash's low
``hash_bits`` bits. Quadratic features cross two indices as Vowpal Wabbit's -q:
((16777619 * i) ^ j), masked the same way. The same file hashed with the same
bits gives the same indices in Vowpal Wabbit, so models and prediction files of
either agree on what a feature is.
"""
import numpy as np
from numba import njit, uint32

FNV_PRIME = 16777619  # Vowpal Wabbit's quadratic-feature multiplier (32-bit FNV)
DEFAULT_HASH_BITS = 18  # Vowpal Wabbit's -b default: 262,144 weights
MAX_HASH_BITS = 31  # the most features a model has (int32 indices)
_M32 = 0xFFFFFFFF


@njit(nogil=True, cache=True, inline="always")
def _rotl(x, r):
    return uint32((x << uint32(r)) | (x >> uint32(32 - r)))


@njit(nogil=True, cache=True, inline="always")
def _mix(k):
    """A 4-byte block of MurmurHash3, scrambled before it joins the hash."""
    return uint32(_rotl(uint32(k * uint32(0xCC9E2D51)), 15) * uint32(0x1B873593))


@njit(nogil=True, cache=True, inline="always")
def murmur3(buf, start, end, seed):
    """MurmurHash3_x86_32 of the bytes buf[start:end] with ``seed``, as an int64 in
    0 .. 2^32 - 1 (uint32 arithmetic throughout, each product truncated to 32
    bits: a third of the time of the same steps in masked int64)."""
    h = uint32(seed & _M32)
    length = end - start
    blocks_end = start + (length // 4) * 4
    i = start
    while i < blocks_end:
        h ^= _mix(uint32(buf[i]) | uint32(uint32(buf[i + 1]) << uint32(8))
                  | uint32(uint32(buf[i + 2]) << uint32(16))
                  | uint32(uint32(buf[i + 3]) << uint32(24)))
        h = uint32(_rotl(h, 13) * uint32(5) + uint32(0xE6546B64))
        i += 4
    tail = length & 3
    if tail:
        k = uint32(buf[blocks_end])
        if tail >= 2:
            k |= uint32(uint32(buf[blocks_end + 1]) << uint32(8))
        if tail == 3:
            k |= uint32(uint32(buf[blocks_end + 2]) << uint32(16))
        h ^= _mix(k)
    h ^= uint32(length)
    h ^= h >> uint32(16)
    h = uint32(h * uint32(0x85EBCA6B))
    h ^= h >> uint32(13)
    h = uint32(h * uint32(0xC2B2AE35))
    h ^= h >> uint32(16)
    return np.int64(h)


@njit(nogil=True, cache=True, inline="always")
def hash_name(buf, start, end, seed):
    """Vowpal Wabbit's hash of the name buf[start:end] in a namespace of hash
    ``seed``: control characters at either end trimmed, a name of digits alone (or
    none) is its number plus the seed (mod 2^32), any other the MurmurHash3 of its
    bytes."""
    while start < end and buf[start] <= 32:
        start += 1
    while end > start and buf[end - 1] <= 32:
        end -= 1
    if start < end and not 48 <= buf[start] <= 57:  # a name, not a number
        return murmur3(buf, start, end, seed)
    value = 0
    for i in range(start, end):
        d = buf[i] - 48
        if d < 0 or d > 9:
            return murmur3(buf, start, end, seed)
        value = (value * 10 + d) & _M32  # the low 32 bits of VW's 64-bit number
    return (value + seed) & _M32


@njit(nogil=True, cache=True, inline="always")
def crossed(first, second, mask):
    """The index of the quadratic feature of indices ``first`` and ``second``."""
    return ((FNV_PRIME * np.int64(first)) ^ np.int64(second)) & mask


INSERTION_SORT_MAX = 48  # features of a row sorted by insertion; heapsort for more


@njit(nogil=True, cache=True)
def sort_row(indices, values, lo, hi):
    """Sort a hashed row's indices[lo:hi] (values alongside) in place, with no
    allocation per row (insertion sort for a row of up to INSERTION_SORT_MAX
    features, linear on one that is nearly sorted already, as rows of numbered
    features are; heapsort beyond), then sum the values of indices that collided;
    the row's new end. Rows so made are CSR's canonical form, as scikit-learn's
    FeatureHasher leaves them."""
    n = hi - lo
    if n <= INSERTION_SORT_MAX:
        for k in range(lo + 1, hi):
            index, value = indices[k], values[k]
            j = k
            while j > lo and indices[j - 1] > index:
                indices[j] = indices[j - 1]
                values[j] = values[j - 1]
                j -= 1
            indices[j] = index
            values[j] = value
    else:
        for start in range((n - 2) // 2, -1, -1):
            _sift(indices, values, lo, start, n)
        for last in range(n - 1, 0, -1):
            indices[lo], indices[lo + last] = indices[lo + last], indices[lo]
            values[lo], values[lo + last] = values[lo + last], values[lo]
            _sift(indices, values, lo, 0, last)
    out = lo
    for k in range(lo, hi):
        if out > lo and indices[out - 1] == indices[k]:
            values[out - 1] += values[k]
        else:
            indices[out] = indices[k]
            values[out] = values[k]
            out += 1
    return out


@njit(nogil=True, cache=True, inline="always")
def _sift(indices, values, lo, root, n):
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and indices[lo + child + 1] > indices[lo + child]:
            child += 1
        if indices[lo + root] >= indices[lo + child]:
            return
        a, b = lo + root, lo + child
        indices[a], indices[b] = indices[b], indices[a]
        values[a], values[b] = values[b], values[a]
        root = child


def hash_text(text, seed=0):
    """hash_name of a Python string (its UTF-8 bytes): a namespace's hash, or a
    feature's within one."""
    raw = np.frombuffer(text.encode("utf-8"), np.uint8)
    return int(hash_name(raw, 0, raw.size, seed))
