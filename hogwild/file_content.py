"""The content of the data files a run reads from disk, known by CRC-32 rather than
by the files' times.

A data cache checks each array's CRC-32 when it opens an entry
(hogwild.datasets.cache) and records it here (``record``). A run that streams the
array reads it range by range and takes each range's CRC-32 at its first read
(hogwild.streaming); combined in the file's order (``combined``) they must give
the recorded one, so that a file edited between the cache's check and the run's
first read of it, its times put back, is found once the first epoch has read it,
instead of being trained on for the whole run.
"""
import os

from hogwild.disk_arrays import file_of

_recorded = {}  # (device, inode, byte offset, bytes) -> CRC-32, as a cache checked it
_POLYNOMIAL = 0xEDB88320  # zlib's CRC-32, reflected
_zero_byte_operators = []  # [k]: the map of a CRC over 2**k appended zero bytes


def _key(array, stat):
    return stat.st_dev, stat.st_ino, file_of(array)[1], array.nbytes


def record(array, crc):
    """``array`` (a read-only memory map of a file) had CRC-32 ``crc`` when checked."""
    if file_of(array) is not None:
        _recorded[_key(array, os.stat(file_of(array)[0]))] = crc


def recorded(array, stat):
    """The CRC-32 recorded for ``array``, whose file's os.stat is ``stat`` (the file a
    run holds open), or None: never checked, or a different file since."""
    return _recorded.get(_key(array, stat)) if file_of(array) is not None else None


def _apply(operator, crc):
    """The 32 x 32 matrix over GF(2) ``operator`` (its columns as integers) times ``crc``."""
    total, column = 0, 0
    while crc:
        if crc & 1:
            total ^= operator[column]
        crc >>= 1
        column += 1
    return total


def _operator(k):
    """The map of a CRC over 2**k zero bytes appended (made once, by squaring the
    map of one zero bit: the method of zlib's crc32_combine)."""
    if not _zero_byte_operators:
        bit = [_POLYNOMIAL] + [1 << n for n in range(31)]
        for _ in range(3):  # 1 bit -> 2 -> 4 -> 8 bits: one byte
            bit = [_apply(bit, column) for column in bit]
        _zero_byte_operators.append(bit)
    while len(_zero_byte_operators) <= k:
        last = _zero_byte_operators[-1]
        _zero_byte_operators.append([_apply(last, column) for column in last])
    return _zero_byte_operators[k]


def combined(pieces):
    """The CRC-32 of consecutive pieces of bytes, given each piece's (CRC-32,
    length) in order: crc32(a + b) from crc32(a), crc32(b) and len(b)."""
    crc = 0
    for piece_crc, length in pieces:
        k = 0
        while length:
            if length & 1:
                crc = _apply(_operator(k), crc)
            length >>= 1
            k += 1
        crc ^= piece_crc
    return crc
