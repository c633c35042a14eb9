"""Arrays in files: read-only memory maps of .npy files (the binary caches, a Jumbo
matrix) and passes over them that read the file instead of the map, so that a
pass over 30 GB of samples on disk (a check, a minimum, a mean, a fingerprint)
leaves none of them in this process's resident memory. hogwild.streaming trains
on such arrays chunk by chunk."""
import math
import mmap
import os

import numpy as np
from numba import njit

from hogwild.errors import HogwildError


def file_of(array):
    """(path, byte offset in it) when ``array`` is C-contiguous and a read-only
    memory map of a file or a view of one (scipy's csr_matrix keeps a memory map's
    arrays as plain ndarray views), else None."""
    owner = array
    while owner is not None and not (isinstance(owner, np.memmap) and
                                     isinstance(owner.base, mmap.mmap)):
        owner = getattr(owner, "base", None)
    if owner is None or owner.mode != "r" or owner.filename is None \
            or not array.flags.c_contiguous:
        return None
    start = array.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return str(owner.filename), int(owner.offset) + start


def on_disk(array):
    """Whether ``array`` is (a view of) a read-only memory map of a file: samples a
    run can stream, and passes over it read the file (see file_of)."""
    return file_of(array) is not None


# What pieces() reads at a time: large enough that a read costs about its copy
# (1 MiB reads a file as fast as 8 MiB, cold or cached: 3.4 and 30 GB/s here),
# small enough to add nothing visible to a peak (64 MiB was 6% of the peak of a
# 10^8-nonzero SVM run, whose scoring pass reads its rows while they are mapped).
READ_BYTES = 1 << 20


def pieces(array):
    """``array`` in consecutive pieces of about READ_BYTES, for a pass over it (a
    check, a minimum, a mean). A read-only memory map is read with file reads into
    one reused buffer, not through the map, so that a pass over 30 GB of samples
    on disk leaves none of them in this process's memory; other arrays are sliced.
    Each piece is valid until the next is taken."""
    if array.shape[0] == 0:
        return
    rows = max(1, READ_BYTES // max(array.itemsize * int(np.prod(array.shape[1:])), 1))
    where = file_of(array)
    if where is None:
        for start in range(0, array.shape[0], rows):
            yield array[start:start + rows]
        return
    buffer = np.empty((rows,) + array.shape[1:], array.dtype)
    row_bytes = array.nbytes // array.shape[0]
    path, offset = where
    with open(path, "rb", buffering=0) as f:
        for start in range(0, array.shape[0], rows):
            count = min(rows, array.shape[0] - start)
            if not read_rows(f.fileno(), buffer, 0, count, offset + start * row_bytes):
                raise HogwildError(f"{path} ends before its "
                                   f"{array.shape[0]:,} rows: it was truncated")
            yield buffer[:count]


def read_rows(fd, array, at, count, offset):
    """Read rows at..at+count-1 of ``array`` from file offset ``offset`` (False at the
    file's end). preadv releases the GIL and may return less than asked."""
    rows = array.reshape(array.shape[0], -1).view(np.uint8)
    target = memoryview(rows[at:at + count]).cast("B")
    done = 0
    while done < len(target):
        got = os.preadv(fd, [target[done:]], offset + done)
        if got == 0:
            return False
        done += got
    return True


def extremes(array):
    """(min, max) of a non-empty array, a piece at a time (see pieces)."""
    low = high = None
    for piece in pieces(array):
        low = piece.min() if low is None else min(low, piece.min())
        high = piece.max() if high is None else max(high, piece.max())
    return low, high


def occurrences(ids, n):
    """How many times each of 0..n-1 occurs in ``ids`` (non-negative integers below
    n), a piece at a time in compiled code: np.bincount would first copy int32 ids
    to int64, 8 bytes an id."""
    counts = np.zeros(n, np.int64)
    for piece in pieces(ids):
        _count(piece, counts)
    return counts


@njit(nogil=True, cache=True)
def _count(ids, counts):
    for k in range(ids.size):
        counts[ids[k]] += 1


def array_mean(array):
    """The float64 mean of a non-empty array, a piece at a time (see pieces)."""
    return sum(float(piece.sum(dtype=np.float64)) for piece in pieces(array)) / array.size


def array_std(array, mean):
    """The standard deviation of a non-empty array around its ``mean``, a piece at a
    time (see pieces)."""
    return math.sqrt(sum(_squared_deviations(piece, mean) for piece in pieces(array))
                     / array.size)


@njit(nogil=True, cache=True)
def _squared_deviations(values, mean):
    total = 0.0
    for x in values:
        total += (x - mean) ** 2
    return total
