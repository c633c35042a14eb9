"""Arrays in files: read-only memory maps of .npy files (the binary caches, a Jumbo
matrix) and passes over them that read the file instead of the map, so that a
pass over 30 GB of samples on disk (a check, a minimum, a mean, a fingerprint)
leaves none of them in this process's resident memory. hogwild.streaming trains
on such arrays chunk by chunk."""
import math
import mmap
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from hogwild.errors import HogwildError
from hogwild.limits import usable_cores


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
                raise HogwildError(f"{path} ends at byte {os.fstat(f.fileno()).st_size:,}, "
                                   "before the rows its header declares: it was truncated")
            yield buffer[:count]


def in_memory(array):
    """``array`` itself, or where it is (a view of) a read-only memory map of a file,
    a copy in this process's memory, read with file reads straight into it (on
    every core, a part each). A run trains and scores on the copy: a file truncated
    under a map would end the process with SIGBUS, and one edited in place would
    change samples after they were checked. A file that ends early is a
    HogwildError naming it."""
    where = file_of(array)
    if where is None:
        return array
    copy = np.empty(array.shape, array.dtype)
    if array.shape[0] == 0:
        return copy
    path, offset = where
    row_bytes = array.nbytes // array.shape[0]
    bounds = part_bounds(array.shape[0], max(1, IN_MEMORY_PART // max(row_bytes, 1)))
    with open(path, "rb", buffering=0) as f:
        def read_part(part):
            first, last = int(bounds[part]), int(bounds[part + 1])
            return read_rows(f.fileno(), copy, first, last - first, offset + first * row_bytes)

        if not all(in_threads(read_part, len(bounds) - 1)):
            raise HogwildError(f"{path} ends at byte {os.fstat(f.fileno()).st_size:,}, "
                               "before the rows its header declares: it was truncated")
    return copy


IN_MEMORY_PART = 16 << 20  # the least bytes in_memory gives a thread of its own


def taken(array, rows):
    """``array[rows]`` for ascending indices ``rows``; where ``array`` is (a view of)
    a read-only memory map of a file, gathered from file reads piece by piece, for
    in_memory's reasons (no SIGBUS from a truncated file, no edited sample read
    after the check) and without a whole copy: early stopping's hold-out."""
    if file_of(array) is None:
        return array[rows]
    out = np.empty((rows.size,) + array.shape[1:], array.dtype)
    at = start = 0
    for piece in pieces(array):
        stop = start + piece.shape[0]
        end = int(np.searchsorted(rows, stop))
        out[at:end] = piece[rows[at:end] - start]
        at, start = end, stop
    return out


def _csr_block(X, start, stop):
    """Rows start..stop-1 of a CSR matrix as a CSR matrix in this process's memory."""
    import scipy.sparse as sp

    indptr = np.array(in_memory(X.indptr[start:stop + 1]), np.int64)
    first, last = int(indptr[0]), int(indptr[-1])
    return sp.csr_matrix((in_memory(X.data[first:last]), in_memory(X.indices[first:last]),
                          indptr - first), shape=(stop - start, X.shape[1]))


def csr_row_blocks(X, y, rows=1 << 16):
    """(X[a:b], y[a:b]) for consecutive blocks of ``rows`` rows of a CSR matrix and its
    labels, each block in this process's memory (in_memory): a pass that scores
    samples in a data cache then holds one block at a time, and a file truncated
    under it is a HogwildError, never SIGBUS."""
    for start in range(0, X.shape[0], rows):
        stop = min(start + rows, X.shape[0])
        yield _csr_block(X, start, stop), in_memory(y[start:stop])


def csr_rows_taken(X, rows, block=1 << 16):
    """``X[rows]`` of a CSR matrix for ascending ``rows``, its arrays read as
    ``taken`` reads them where they are maps of files (a block of rows at a time)."""
    import scipy.sparse as sp

    if not any(on_disk(a) for a in (X.data, X.indices, X.indptr)):
        return X[rows]
    parts = []
    for start in range(0, X.shape[0], block):
        stop = min(start + block, X.shape[0])
        inside = rows[np.searchsorted(rows, start):np.searchsorted(rows, stop)]
        if inside.size:
            parts.append(_csr_block(X, start, stop)[inside - start])
    return sp.vstack(parts, format="csr") if parts else X[rows]


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


def mapped_file(array):
    """The file that ``array`` (or the array it views) is memory-mapped from, or None."""
    while isinstance(array, np.ndarray):
        if isinstance(array, np.memmap) and array.filename:
            return array.filename
        array = array.base
    return None


def occurrences(ids, n):
    """How many times each of 0..n-1 occurs in ``ids`` (an id outside is a
    HogwildError, naming the file of a memory-mapped ``ids``), a piece at a time in
    compiled code: np.bincount would first copy int32 ids to int64, 8 bytes an id.

    Each thread counts a part of ``ids`` into counts of its own, summed at the end
    (0.25 s of one thread for the 2e7 ids of a million-row click log, a tenth of
    its whole default run); parts hold at least 4 ids per count, so that their
    int32 counts add at most a quarter of the ids' own bytes."""
    bounds = part_bounds(ids.size, 4 * max(n, 1))
    mapped = mapped_file(ids)  # a cache entry's, checked when made: a bad id is an edit
    where = f"{mapped}: " if mapped else ""
    kind = np.int32 if np.diff(bounds).max() < 2**31 else np.int64

    def count_part(part):
        counts = np.zeros(n, kind)
        at = bounds[part]
        for piece in pieces(ids[bounds[part]:bounds[part + 1]]):
            bad = _count(piece, counts)
            if bad >= 0:
                raise HogwildError(f"{where}id {int(piece[bad])} at position {at + bad:,} is "
                                   f"not in 0..{n - 1:,}")
            at += piece.shape[0]
        return counts

    parts = in_threads(count_part, len(bounds) - 1)
    total = parts[0].astype(np.int64)
    for counts in parts[1:]:
        total += counts
    return total


def part_bounds(size, smallest=1 << 20):
    """The bounds of contiguous parts of 0..size, one a usable core and none below
    ``smallest`` items (where starting a thread costs more than it saves)."""
    parts = max(1, min(usable_cores(), size // max(smallest, 1)))
    return np.linspace(0, size, parts + 1).astype(np.int64)


def in_threads(job, count):
    """[job(0), ..., job(count - 1)], run on a thread each: for passes whose compiled
    loops (nogil) and file reads release the GIL."""
    if count == 1:
        return [job(0)]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(job, range(count)))


@njit(nogil=True, cache=True)
def _count(ids, counts):
    """Add ``ids`` into ``counts``; the position of the first id outside it, or -1
    (an id edited in a file since it was checked must not write past the counts)."""
    n = counts.size
    for k in range(ids.size):
        i = ids[k]
        if i < 0 or i >= n:
            return k
        counts[i] += 1
    return -1


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
