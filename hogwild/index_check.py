"""Passes that run before any update, so that compiled code never reads memory
that another array (or nobody) owns: the loss (or a metric) over every sample
with each array index checked, and numba's compile errors in users' words."""
import contextlib
import re

import numpy as np
from numba import njit
from numba.core.errors import NumbaError

from hogwild.disk_arrays import extremes
from hogwild.errors import HogwildError
from hogwild.kernels.compiler import slp_vectorizer

CHECK_CHUNK = 1 << 16  # samples per call of the checked loss pass


@contextlib.contextmanager
def compiling(name, fastmath):
    """A function numba cannot compile becomes a HogwildError that keeps numba's
    explanation, naming objective ``name``."""
    try:
        with slp_vectorizer(fastmath):
            yield
    except NumbaError as exc:
        detail = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
        raise HogwildError(f"numba could not compile the update or loss of objective "
                           f"'{name}'; they must be in numba's nopython subset and "
                           f"helpers they call must be @numba.njit functions:\n{detail}") \
            from None


def check_indices(loops, params, data, n, objective, what=None):
    """One pass of ``loops``' loss over samples 0..n-1 of ``data`` with each array
    index checked (loops.sum_loss_checked): a sample count larger than the data, or
    a sample whose ids lie beyond an array, is a HogwildError naming the first
    such sample. ``what`` names the samples (default: the objective's).
    Half-precision parameters (the GPU's) are read as float32 copies: the CPU
    compiles no float16."""
    params = tuple(p.astype(np.float32) if p.dtype == np.float16 else p for p in params)
    what = what or f"objective '{objective.name}'"
    with compiling(objective.name, objective.fastmath):
        for first in range(0, n, CHECK_CHUNK):
            last = min(first + CHECK_CHUNK, n)
            try:
                loops.sum_loss_checked(params, data, first, last)
            except IndexError:
                bad = next(e for e in range(first, last)
                           if _reads_out_of_bounds(loops, params, data, e))
                raise HogwildError(
                    f"{what}: loss(e={bad}) reads past the end of an array: n_samples "
                    f"({n:,}) is more than the data holds, or sample {bad} has an id "
                    "beyond the array it indexes") from None


def _reads_out_of_bounds(loops, params, data, e):
    try:
        loops.sum_loss_checked(params, data, e, e + 1)
    except IndexError:
        return True
    return False


def declared_ids_hold(objective, params, data):
    """Whether the ids an objective declares (its IdArrays, and its sample offsets)
    lie within the arrays they index in ``data``: the check of an objective that
    checked its ids itself (indices_checked) on copies of its data read from disk,
    in place of the checked loss pass. False where it declares none, or one fails
    (the checked pass then names the sample)."""
    if not objective.id_arrays:
        return False
    lengths = [p.shape[0] for p in params] + [a.shape[0] if a.ndim else 0 for a in data]
    for declared in objective.id_arrays:
        ids = data[declared.ids]
        if ids.size == 0:
            continue
        bound = min([lengths[p] for p in declared.params] +
                    [lengths[len(params) + d] for d in declared.data])
        low, high = extremes(ids)
        if low < 0 or high >= bound:
            return False
    if objective.sample_offsets is not None:
        offsets = data[objective.sample_offsets]
        ragged = [data[d.ids].shape[0] for d in objective.id_arrays
                  if data[d.ids].shape[0] != objective.n_samples]
        if offsets.shape[0] < objective.n_samples + 1 or not _nondecreasing(offsets) or \
                offsets[0] < 0 or any(int(offsets[objective.n_samples]) > n for n in ragged):
            return False
    return True


@njit(nogil=True, cache=True)
def _nondecreasing(values):
    for k in range(1, values.size):
        if values[k] < values[k - 1]:
            return False
    return True
