"""Host memory for parameters that workers hammer: cache-line aligned arrays.

Huge pages need nothing here: numpy asks for transparent huge pages
(madvise(MADV_HUGEPAGE)) for every allocation of 4 MiB or more, which is what the
"madvise" mode of these machines serves (10^7 x 32 float32 factors: 2.6 GB of
AnonHugePages), so a factor row's update costs no TLB walk per page.
"""
import numpy as np
from numba import njit

CACHE_LINE = 64


def aligned_empty(shape, dtype):
    """An uninitialised C-contiguous array starting on a 64-byte boundary. numpy
    aligns to 16 bytes, so a 128-byte factor row (rank 32, float32) could straddle
    three cache lines and every 64-byte SIMD load two of them: 20-25% slower
    updates."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buffer = np.empty(nbytes + CACHE_LINE, np.uint8)
    start = -buffer.ctypes.data % CACHE_LINE
    return buffer[start:start + nbytes].view(dtype).reshape(shape)


def is_aligned(array):
    """Whether ``array`` is C-contiguous from a 64-byte boundary (see aligned_empty)."""
    return array.flags.c_contiguous and array.ctypes.data % CACHE_LINE == 0


def aligned_copy(array):
    """A C-contiguous copy of ``array`` starting on a 64-byte boundary."""
    copy = aligned_empty(array.shape, array.dtype)
    copy[...] = array
    return copy



def all_finite(arrays):
    """Whether no float in ``arrays`` is NaN or Inf: compiled, without the bool
    temporary of np.isfinite (0.6 GB for 10^7 x 32 factors each epoch). float16
    (which the CPU does not compile) is checked a slice at a time."""
    for array in arrays:
        if array.dtype.kind != "f":
            continue
        flat = array.reshape(-1)
        if array.dtype == np.float16:
            if not all(np.isfinite(flat[i:i + (1 << 20)]).all()
                       for i in range(0, flat.size, 1 << 20)):
                return False
        elif not _finite(flat):
            return False
    return True


@njit(nogil=True, cache=True)
def _finite(flat):
    """x * 0 is 0 for a finite x and NaN for NaN or Inf: summed over a run, one
    comparison per run (the loop vectorises)."""
    for start in range(0, flat.size, 4096):
        zero = flat[0] * 0
        for x in flat[start:start + 4096]:
            zero += x * 0
        if zero != zero:
            return False
    return True
