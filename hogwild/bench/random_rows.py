"""The reference a matrix-completion update rate is reported against: the same
rank-k SGD update on uniformly random (row, column) pairs of tables of the same
shape, one thread, with no layout or locality (each update misses the cache twice
on a table larger than it)."""
import time

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _random_rows(L, R, updates, step, reg, seed):
    """``updates`` SGD steps of L_u . R_v toward 1.0 on uniformly random (u, v)."""
    np.random.seed(seed)
    rank = L.shape[1]
    for _ in range(updates):
        u = np.random.randint(L.shape[0])
        v = np.random.randint(R.shape[0])
        error = np.float32(1.0)
        for k in range(rank):
            error -= L[u, k] * R[v, k]
        for k in range(rank):
            lu, rv = L[u, k], R[v, k]
            L[u, k] = lu + step * (error * rv - reg * lu)
            R[v, k] = rv + step * (error * lu - reg * rv)


def random_row_rate(rows, cols, updates, rank=32, seed=0):
    """Updates/s of _random_rows on one thread, on float32 tables of ``rows`` and
    ``cols`` x rank (the second of two passes, so compilation and first touch are
    left out)."""
    rng = np.random.default_rng(seed)
    L = (rng.standard_normal((rows, rank), np.float32) * 0.1)
    R = (rng.standard_normal((cols, rank), np.float32) * 0.1)
    step, reg = np.float32(0.01), np.float32(0.05)
    _random_rows(L, R, 1000, step, reg, seed)
    start = time.perf_counter()
    _random_rows(L, R, updates, step, reg, seed + 1)
    return updates / (time.perf_counter() - start)
