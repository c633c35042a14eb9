"""Threads backend: W Python threads, each running a compiled nogil kernel over
its span of the epoch's order, all writing the same numpy parameter arrays in
place without locks (or under the spinlock for the ``locked`` scheduler)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hogwild.kernels.atomics import abort_gates, new_gates, new_lock


def warm_up_loops(loops, params, data, scheduler):
    """Compile (or load from cache) the loop a run will use, outside the timed
    epochs, by calling it on no samples."""
    runs = np.zeros(0, np.int64)
    if scheduler.phased:
        loops.run_phased_spans(runs, np.zeros((0, 4), np.int64), 1, params, data, 0.0, 0,
                               new_gates(1), 0, 1)
    elif scheduler.gated:
        loops.run_gated_spans(runs, np.zeros((0, 6), np.int64), 1, params, data, 0.0, 0,
                              new_gates(0))
    elif scheduler.locked:
        loops.run_spans_locked(runs, np.zeros((0, 3), np.int64), 1, params, data, 0.0, 0,
                               new_lock())
    else:
        loops.run_spans(runs, np.zeros((0, 3), np.int64), 1, params, data, 0.0, 0)


class ThreadsBackend:
    name = "threads"

    def __init__(self, workers):
        self.workers = workers
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers - 1),
                                        thread_name_prefix="hogwild")
        self._lock = new_lock()
        self.on_progress = None  # threads report progress once per epoch (the engine)

    def share(self, params, data):
        """The arrays the workers use: threads share the process's own memory."""
        return params, data

    def export(self, params):
        """The trained parameters, valid after the backend is closed."""
        return params

    def warm_up(self, loops, params, data, scheduler):
        warm_up_loops(loops, params, data, scheduler)

    def run_epoch(self, loops, plan, params, data, step, epoch):
        """Run one epoch's plan, phase after phase; returns the number of updates."""
        if plan.barriers:
            return self._run_phased(loops, plan, params, data, step, epoch)
        runs, length = plan.runs, plan.run_length
        if plan.gates:
            gates = new_gates(plan.gates)

            def run(spans):
                try:
                    return loops.run_gated_spans(runs, spans, length, params, data, step,
                                                 epoch, gates)
                except BaseException:
                    abort_gates(gates)  # the others would wait for this worker forever
                    raise
        elif plan.locked:
            def run(spans):
                return loops.run_spans_locked(runs, spans, length, params, data, step, epoch,
                                              self._lock)
        else:
            def run(spans):
                return loops.run_spans(runs, spans, length, params, data, step, epoch)

        updates = 0
        for phase in plan.phases:
            # The calling thread runs the first share itself: one thread hand-off
            # fewer, which matters when a phase lasts only a few milliseconds.
            others = [self._pool.submit(run, spans) for spans in phase[1:] if len(spans)]
            updates += run(phase[0]) + sum(f.result() for f in others)
        return updates

    def _run_phased(self, loops, plan, params, data, step, epoch):
        """Many short phases (colour classes, batches) with the barriers in compiled
        code: one call per worker per epoch instead of one per worker per phase."""
        (shares,) = plan.phases
        workers = len(shares)
        gates = new_gates(workers)

        def run(w):
            try:
                return loops.run_phased_spans(plan.runs, shares[w], plan.run_length, params,
                                              data, step, epoch, gates, w, workers)
            except BaseException:
                abort_gates(gates)
                raise

        others = [self._pool.submit(run, w) for w in range(1, workers)]
        return run(0) + sum(f.result() for f in others)

    def close(self):
        self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

