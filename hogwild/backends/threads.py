"""Threads backend: W Python threads, each running a compiled nogil kernel over
its span of the epoch's order, all writing the same numpy parameter arrays in
place without locks (or under the spinlock for the ``locked`` scheduler), or each
its own copy of them (replication="worker", see hogwild.backends.replicas)."""
import threading

import numpy as np


from hogwild.backends.base import HostBackend
from hogwild.backends.replicas import Replicas
from hogwild.kernels.atomics import new_gates, raise_gate, spin_for_gate
from hogwild.kernels.plans import Share, gate_count, give_up, pieces, run_share, warm_up

SPINS = 2_000_000  # about 10 ms of polling before a waiting thread sleeps


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
    replication_modes = ("shared", "worker")

    @classmethod
    def open(cls, workers, config, source):
        return cls(workers, config.replication, config.merge_every)

    def __init__(self, workers, replication="shared", merge_every=None):
        self.workers = workers
        self.replication, self.merge_every = replication, merge_every
        self._replicas = None
        self._crew = _Crew(workers - 1)
        self.on_progress = None  # threads report progress once per epoch (the engine)

    def share(self, params, data, n_samples=None):
        """The arrays the workers use: threads share the process's own memory (and
        with replication="worker" each has its own copy of the parameters too)."""
        if self.replication == "worker":
            self._replicas = Replicas(params, self.workers)
            self._merge_every = self.merge_every or max(n_samples or 1, 1)
        return params, data

    def export(self, params):
        """The trained parameters, valid after the backend is closed."""
        return params

    def warm_up(self, loops, params, data, scheduler, objective=None):
        warm_up(loops, scheduler.kind, params, data)

    def run_epoch(self, loops, plan, params, data, step, epoch):
        """Run one epoch's plan, phase after phase; returns the number of updates.
        Phased plans have all their phases in one: the barriers between them are in
        compiled code (one call per worker per epoch instead of one per phase)."""
        if self._replicas is not None:
            return self._run_replicated(loops, plan, params, data, step, epoch)
        updates = 0
        for phase in plan.phases:
            workers = len(phase)
            sync = new_gates(gate_count(plan, workers))
            updates += self._run_shares(loops, [
                Share(plan.kind, plan.runs, spans, plan.run_length, step, epoch, sync, w,
                      workers) for w, spans in enumerate(phase)], lambda w: params, data)
        return updates

    def _run_replicated(self, loops, plan, params, data, step, epoch):
        """Each worker runs its share on its own copy, in pieces of merge_every
        updates; the copies merge into ``params`` after every round of pieces."""
        (phase,) = plan.phases  # replication runs lock-free plans of one phase
        cut = [list(pieces(plan.kind, spans, plan.run_length, self._merge_every))
               for spans in phase]
        none = np.zeros((0, 3), np.int64)
        sync = new_gates(0)
        updates = 0
        for k in range(max(len(c) for c in cut)):
            updates += self._run_shares(loops, [
                Share(plan.kind, plan.runs, c[k] if k < len(c) else none, plan.run_length,
                      step, epoch, sync, w, len(phase)) for w, c in enumerate(cut)],
                self._replicas.of, data)
            self._replicas.merge(params)
        return updates

    def _run_shares(self, loops, shares, params_of, data):
        """Run one phase's shares, worker w's on params_of(w); the total updates."""
        def run(share):
            try:
                return run_share(loops, share, params_of(share.worker), data)
            except BaseException:
                give_up(share.kind, share.sync, share.worker)  # else the others wait
                raise

        # The calling thread runs the first share itself: one thread hand-off
        # fewer, which matters when a phase lasts only a few milliseconds. Every
        # worker of a phased plan runs, to meet the barriers.
        others = [lambda share=share: run(share) for share in shares[1:]
                  if len(share.spans) or share.kind == "phased"]
        return sum(self._crew.run(lambda: run(shares[0]), others))

    def close(self):
        self._crew.close()
