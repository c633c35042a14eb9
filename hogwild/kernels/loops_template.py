"""Template of the compiled epoch loops; compiler.py reads it as text, never imports it.

For each objective, compiler.py writes a small module: a prelude that binds the
names ``update_sample`` and ``loss`` to the objective's per-sample functions, then
everything below the marker line. numba then compiles the user's update into these
loops (inlined, no Python per sample) and caches the machine code on disk, keyed by
the generated file, so a second process loads it instead of recompiling.

Contract for the functions bound by the prelude:
    update_sample(e, params, data, step, epoch) -> None
        one SGD step for sample e, in place (the user's update; ``epoch`` is
        dropped for an update that takes only (e, params, data, step))
    loss(e, params, data) -> float      f_e at the current parameters
``params`` and ``data`` are tuples of arrays; ``step`` is a float64 step size and
``epoch`` counts from 0.
"""
# ---- template body ----
from numba import njit

from hogwild.kernels.atomics import acquire, release


@njit(nogil=True, cache=True)
def run_span(order, start, stop, params, data, step, epoch):
    """Update samples order[start:stop] in place. Racy writes (Hogwild!): other
    workers update the same params concurrently, without locks."""
    for k in range(start, stop):
        update_sample(order[k], params, data, step, epoch)
    return stop - start


@njit(nogil=True, cache=True)
def run_span_locked(order, start, stop, params, data, step, epoch, lock):
    """As run_span, but every update holds the spinlock ``lock`` (the baseline)."""
    for k in range(start, stop):
        acquire(lock)
        update_sample(order[k], params, data, step, epoch)
        release(lock)
    return stop - start


@njit(nogil=True, cache=True)
def sum_loss(params, data, n_samples):
    """Sum of f_e over all samples, in float64."""
    total = 0.0
    for e in range(n_samples):
        total += loss(e, params, data)
    return total
