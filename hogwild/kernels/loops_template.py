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
``epoch`` counts from 0. The loops take the epoch's step table (hogwild.steps.
EpochSteps): one step, or steps for equal parts of the epoch, read at each run
by the share's updates done before it (``first`` of ``total`` when the share runs
in several calls); gated and phased plans read it by their spans' level or phase
(of ``total``), which do not depend on the number of workers, so that conflict-free
schedules stay bitwise the same with any number of them.
"""
# ---- template body ----
from numba import njit

from hogwild.kernels.atomics import (acquire, finish_block, open_gate, release, take_free_block,
                                     wait_a_little, wait_for_gate)


@njit(nogil=True, cache=True, inline="always")
def _step_index(steps, position, total):
    """The table entry of the update at ``position`` of ``total``."""
    if steps.size == 1:
        return 0
    return min(steps.size - 1, position * steps.size // max(total, 1))


@njit(nogil=True, cache=True, inline="always")
def _step_at(steps, position, total):
    """The step of the update at ``position`` of a share of ``total`` updates."""
    return steps[_step_index(steps, position, total)]


@njit(nogil=True, cache=True, inline="always")
def _step_of(steps, position, total):
    """The step at ``position`` of ``total`` as a table of one (a view)."""
    k = _step_index(steps, position, total)
    return steps[k:k + 1]


@njit(nogil=True, cache=True, inline="always")
def _run_span(runs, lo, hi, run_length, limit, params, data, steps, first, total, epoch):
    """Update the samples of runs lo..hi-1 (run r: samples runs[r] ..
    min(runs[r] + run_length, limit) - 1), the first at position ``first`` of
    the share; returns how many."""
    done = 0
    for r in range(lo, hi):
        start = runs[r]
        last = min(start + run_length, limit)
        step = _step_at(steps, first + done, total)
        for e in range(start, last):
            update_sample(e, params, data, step, epoch)
        done += last - start
    return done


@njit(nogil=True, cache=True)
def run_spans(runs, spans, run_length, params, data, steps, first, total, epoch):
    """Update, in place, the samples of each span (lo, hi, limit) = spans[s]: runs
    lo..hi-1, run r being samples runs[r] .. min(runs[r] + run_length, limit) - 1.
    Racy writes (Hogwild!): other workers update the same params concurrently,
    without locks."""
    done = 0
    for s in range(spans.shape[0]):
        done += _run_span(runs, spans[s, 0], spans[s, 1], run_length, spans[s, 2], params,
                          data, steps, first + done, total, epoch)
    return done


@njit(nogil=True, cache=True)
def run_spans_locked(runs, spans, run_length, params, data, steps, first, total, epoch, lock,
                     owner):
    """As run_spans, but every update holds the spinlock ``lock`` as ``owner`` (the
    baseline). Returns -1 if the run was aborted (another worker failed)."""
    done = 0
    for s in range(spans.shape[0]):
        limit = spans[s, 2]
        for r in range(spans[s, 0], spans[s, 1]):
            start = runs[r]
            last = min(start + run_length, limit)
            step = _step_at(steps, first + done, total)
            for e in range(start, last):
                if not acquire(lock, owner):
                    return -1
                update_sample(e, params, data, step, epoch)
                release(lock)
            done += last - start
    return done


@njit(nogil=True, cache=True)
def run_gated_spans(runs, spans, run_length, params, data, steps, first, total, epoch,
                    gates):
    """As run_spans, for spans (lo, hi, limit, gate_a, gate_b, level) that may start
    only when gates gate_a and gate_b have reached ``level``; each raises both to
    level + 1 when done. Returns -1 if the run was aborted (another worker failed)."""
    done = 0
    for s in range(spans.shape[0]):
        level = spans[s, 5]
        if not (wait_for_gate(gates, spans[s, 3], level)
                and wait_for_gate(gates, spans[s, 4], level)):
            return -1
        done += _run_span(runs, spans[s, 0], spans[s, 1], run_length, spans[s, 2], params,
                          data, _step_of(steps, level, total), 0, 1, epoch)
        open_gate(gates, spans[s, 3], level + 1)
        open_gate(gates, spans[s, 4], level + 1)
    return done


@njit(nogil=True, cache=True)
def run_phased_spans(runs, spans, run_length, params, data, steps, first, total, epoch,
                     gates, me, workers):
    """As run_spans for worker ``me`` of ``workers``, for spans (lo, hi, limit,
    phase) in phase order with a barrier between phases: gate w counts the phases
    worker w has finished, and phase p starts once every gate has reached p.
    Returns -1 if the run was aborted (another worker failed)."""
    done = 0
    for s in range(spans.shape[0]):
        phase = spans[s, 3]
        open_gate(gates, me, phase)
        for w in range(workers):
            if not wait_for_gate(gates, w, phase):
                return -1
        done += _run_span(runs, spans[s, 0], spans[s, 1], run_length, spans[s, 2], params,
                          data, _step_of(steps, phase, total), 0, 1, epoch)
    return done


@njit(nogil=True, cache=True)
def run_free_blocks(runs, spans, run_length, params, data, steps, first, total, epoch,
                    state, owner):
    """FPSGD's dynamic scheduling: every worker gets the same block rows (lo, hi,
    limit, row_gate, column_gate, taken_gate) and repeatedly takes one that no one
    has taken this epoch and whose row and column no running block has, until
    none is left; no barrier, a worker waits only while every block left is
    blocked. Returns -1 if the run was aborted (another worker failed)."""
    done = 0
    picks = 0
    polls = 0
    while True:
        b = take_free_block(state, spans, owner, picks) if spans.shape[0] else -2
        if b == -2:
            return done
        if b == -3:
            return -1
        if b == -1:
            if not wait_a_little(state, polls):
                return -1
            polls += 1
            continue
        polls = 0
        picks += 1
        done += _run_span(runs, spans[b, 0], spans[b, 1], run_length, spans[b, 2], params,
                          data, steps, first + done, total, epoch)
        if not finish_block(state, spans, b, owner):
            return -1


@njit(nogil=True, cache=True)
def sum_loss(params, data, first, last):
    """Sum of f_e over samples first..last-1, in float64."""
    total = 0.0
    for e in range(first, last):
        total += loss(e, params, data)
    return total


@njit(nogil=True, cache=True, boundscheck=True)
def sum_loss_checked(params, data, first, last):
    """sum_loss with every array index in it checked: an IndexError where loss would
    read past an array's end (a sample count larger than the data, an id beyond
    a parameter array). The engine runs it once before the first update."""
    total = 0.0
    for e in range(first, last):
        total += loss(e, params, data)
    return total
