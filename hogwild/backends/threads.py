"""Threads backend: W Python threads, each running a compiled nogil kernel over
its span of the epoch's order, all writing the same numpy parameter arrays in
place without locks (or under the spinlock for the ``locked`` scheduler)."""
import threading

import numpy as np

from hogwild.backends.base import HostBackend
from hogwild.kernels.atomics import (abandon_lock, abort_gates, new_gates, new_lock,
                                     raise_gate, spin_for_gate)

SPINS = 2_000_000  # about 10 ms of polling before a waiting thread sleeps


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
                               new_lock(), 1)
    else:
        loops.run_spans(runs, np.zeros((0, 3), np.int64), 1, params, data, 0.0, 0)


class _Crew:
    """Persistent worker threads that take jobs from the calling thread. Both sides
    poll for the hand-off (compiled, without the GIL) for about 10 ms before they
    sleep on an Event: a sleeping thread wakes a fraction of a millisecond late on
    a virtual machine, which is a tenth of a short epoch."""

    def __init__(self, size):
        # gate i: job ticket of thread i; size + i: its done ticket; 2 size: scratch
        self._flags = new_gates(2 * size + 1)
        self._tickets = [0] * size
        self._jobs = [None] * size
        self._results = [None] * size
        self._wake = [threading.Event() for _ in range(size)]
        self._finished = [threading.Event() for _ in range(size)]
        raise_gate(self._flags, 2 * size, 0)  # load both from numba's cache now, not in
        spin_for_gate(self._flags, 2 * size, 0, 1)  # the first timed epoch
        self._threads = [threading.Thread(target=self._serve, args=(i,), daemon=True,
                                          name=f"hogwild-{i + 1}") for i in range(size)]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _await(flags, gate, level, event):
        while not spin_for_gate(flags, gate, level, SPINS):
            event.wait()
            event.clear()

    def _serve(self, i):
        ticket = 0
        while True:
            ticket += 1
            self._await(self._flags, i, ticket, self._wake[i])
            job = self._jobs[i]
            if job is None:
                return
            try:
                self._results[i] = (True, job())
            except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
                self._results[i] = (False, exc)
            raise_gate(self._flags, len(self._threads) + i, ticket)
            self._finished[i].set()

    def _hand(self, i, job):
        self._jobs[i] = job
        self._tickets[i] += 1
        raise_gate(self._flags, i, self._tickets[i])
        self._wake[i].set()

    def run(self, own, jobs):
        """[own(), *(job() for job in jobs)], the jobs on the crew's threads while
        this thread runs ``own``; the first exception is re-raised after all end."""
        for i, job in enumerate(jobs):
            self._hand(i, job)
        try:
            results = [own()]
        finally:
            for i in range(len(jobs)):
                self._await(self._flags, len(self._threads) + i, self._tickets[i],
                            self._finished[i])
        for i in range(len(jobs)):
            ok, value = self._results[i]
            if not ok:
                raise value
            results.append(value)
        return results

    def close(self):
        for i in range(len(self._threads)):
            self._hand(i, None)
        for thread in self._threads:
            thread.join()


class ThreadsBackend(HostBackend):
    name = "threads"
    workers_share_cores = True  # workers are CPU threads: bounded by check_workers

    def __init__(self, workers):
        self.workers = workers
        self._crew = _Crew(workers - 1)
        self.on_progress = None  # threads report progress once per epoch (the engine)

    def share(self, params, data, n_samples=None):
        """The arrays the workers use: threads share the process's own memory."""
        return params, data

    def export(self, params):
        """The trained parameters, valid after the backend is closed."""
        return params

    def warm_up(self, loops, params, data, scheduler, objective=None):
        warm_up_loops(loops, params, data, scheduler)

    def run_epoch(self, loops, plan, params, data, step, epoch):
        """Run one epoch's plan, phase after phase; returns the number of updates."""
        if plan.barriers:
            return self._run_phased(loops, plan, params, data, step, epoch)
        runs, length = plan.runs, plan.run_length
        if plan.gates:
            gates = new_gates(plan.gates)

            def run(spans, owner):
                try:
                    return loops.run_gated_spans(runs, spans, length, params, data, step,
                                                 epoch, gates)
                except BaseException:
                    abort_gates(gates)  # the others would wait for this worker forever
                    raise
        elif plan.locked:
            lock = new_lock()

            def run(spans, owner):
                try:
                    return loops.run_spans_locked(runs, spans, length, params, data, step,
                                                  epoch, lock, owner)
                except BaseException:
                    abandon_lock(lock, owner)  # else the others wait for it forever
                    raise
        else:
            def run(spans, owner):
                return loops.run_spans(runs, spans, length, params, data, step, epoch)

        updates = 0
        for phase in plan.phases:
            # The calling thread runs the first share itself: one thread hand-off
            # fewer, which matters when a phase lasts only a few milliseconds.
            others = [lambda spans=spans, w=w: run(spans, w + 1)
                      for w, spans in enumerate(phase) if w and len(spans)]
            updates += sum(self._crew.run(lambda: run(phase[0], 1), others))
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

        return sum(self._crew.run(lambda: run(0),
                                  [lambda w=w: run(w) for w in range(1, workers)]))

    def close(self):
        self._crew.close()
