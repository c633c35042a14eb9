"""Threads backend: W Python threads, each running a compiled nogil kernel over
its span of the epoch's order, all writing the same numpy parameter arrays in
place without locks (or under the spinlock for the ``locked`` scheduler), or each
its own copy of all or of the hot ones (replication="worker" or "hot", see
hogwild.backends.replicas)."""
import threading
import time

import numpy as np

from hogwild.backends.base import LOSS_CHUNK, HostBackend, loss_chunks, ordered_total
from hogwild.backends.host import aligned_copy
from hogwild.backends.replicas import Replicas
from hogwild.kernels.atomics import new_gates, raise_gate, spin_for_gate
from hogwild.kernels.plans import (Share, gate_count, give_up, pieces, run_share, share_length,
                                   warm_up)
from hogwild.replication import (PROBE_ROUNDS, PROBE_SAMPLES, PROBE_VISITS, ReplicationSettings,
                                 probe_data, resolve)

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
    streams_samples = True
    workers_share_cores = True  # workers are CPU threads: bounded by check_workers
    replication_modes = ("shared", "worker", "hot", "auto")
    stops_replicating = True

    @classmethod
    def open(cls, workers, config, source):
        return cls(workers, replication_of(workers, config, source))

    def __init__(self, workers, replication=ReplicationSettings()):
        self.workers = workers
        self.settings, self.replication = replication, replication.mode
        self._replicas = None
        self._fell_back = None  # stop_replicating's reason
        self._n_samples = 1
        self._crew = _Crew(workers - 1)
        self.on_progress = None  # threads report progress once per epoch (the engine)

    def share(self, params, data, n_samples=None):
        """The arrays the workers use: threads share the process's own memory (and
        with replication "worker" or "hot" each has its own copies of some too)."""
        self._n_samples = n_samples or 1
        self._replicas = Replicas.for_run(self.settings, params, data, self.workers,
                                          self._n_samples)
        return (params if self._replicas is None else self._replicas.params), data

    def replicated(self):
        return self.settings.report(self._replicas, self._n_samples, self._fell_back)

    def stop_replicating(self, why):
        """Run shared from the next epoch on (replication "auto"'s Guard): the copies
        were merged into the shared parameters at the epoch's end, so those hold
        every update, and the workers now write them directly."""
        self._fell_back, self.replication = why, "shared"

    def reload(self):
        """The shared parameters were changed from outside the workers (see
        Replicas.reload): nothing to do unless the workers have copies."""
        if self._replicas is not None:
            self._replicas.reload()

    def export(self, params):
        """The trained parameters, valid after the backend is closed."""
        return params

    def warm_up(self, loops, params, data, scheduler, objective=None):
        warm_up(loops, scheduler.kind, params, data)
        if self._replicas is not None:
            self._replicas.warm_up()

    def run_epoch(self, loops, plan, params, data, steps, epoch):
        """Run one epoch's plan, phase after phase; returns the number of updates.
        Phased plans have all their phases in one: the barriers between them are in
        compiled code (one call per worker per epoch instead of one per phase)."""
        if self._replicas is not None and self._replicas.merging and self._fell_back is None:
            return self._run_replicated(loops, plan, params, data, steps, epoch)
        updates = 0
        for phase in plan.phases:
            workers = len(phase)
            sync = new_gates(gate_count(plan, workers))
            updates += self._run_shares(loops, [
                Share(plan.kind, plan.runs, spans, plan.run_length, steps.table, epoch, sync,
                      w, workers, total=share_length(plan, spans, workers, steps.table))
                for w, spans in enumerate(phase)],
                lambda w: params, data)
        return updates

    def loss_sum(self, loops, params, data, n):
        """Chunk by chunk as on one thread, each worker summing a contiguous part of
        the chunks: the same value, W times as fast, and the workers are still
        polling for work when the next epoch starts instead of asleep (waking a
        sleeping thread costs a fraction of a millisecond, much of a short epoch)."""
        if self.workers == 1 or n <= LOSS_CHUNK:
            return super().loss_sum(loops, params, data, n)
        parts = loss_chunks(n, self.workers)

        def job(part):
            return lambda: [loops.sum_loss(params, data, lo, hi) for lo, hi in part]
        sums = self._crew.run(job(parts[0]), [job(part) for part in parts[1:]])
        return ordered_total(value for part in sums for value in part)

    def _run_replicated(self, loops, plan, params, data, steps, epoch):
        """Each worker runs its share on its own copies in rounds of merge_every
        updates; after each round the workers meet, each merges its slice of the
        replicas, and they meet again. One hand-off per epoch, not per round."""
        (phase,) = plan.phases  # replication runs lock-free plans of one phase
        workers = len(phase)
        cut = [list(pieces(plan.kind, spans, plan.run_length,
                           self.settings.interval(self._n_samples)))
               for spans in phase]
        rounds = max(len(c) for c in cut)
        sync = new_gates(workers)
        return self._run_jobs({w: lambda w=w: self._replicas.run_rounds(
            loops, Share(plan.kind, plan.runs, phase[w], plan.run_length, steps.table, epoch,
                         sync, w, workers,
                         total=share_length(plan, phase[w], workers, steps.table)),
            cut[w], rounds) for w in range(workers)}, sync)

    def _run_shares(self, loops, shares, params_of, data):
        """Run one phase's shares, worker w's on params_of(w); the total updates.
        Every worker of a phased plan runs, to meet the barriers."""
        return self._run_jobs({
            share.worker: lambda share=share: run_share(loops, share,
                                                        params_of(share.worker), data)
            for share in shares if share.worker == 0 or len(share.spans)
            or share.kind == "phased"}, shares[0].sync, shares[0].kind)

    def _run_jobs(self, jobs, sync, kind="spans"):
        """Run jobs {worker: job}, worker 0's on this thread (one hand-off fewer,
        which matters when a phase lasts a few milliseconds); the total of their
        updates. A job that raises first aborts the others' waits."""
        def guarded(worker):
            try:
                return jobs[worker]()
            except BaseException:
                give_up(kind, sync, worker)  # else the others wait for it forever
                raise

        others = [lambda worker=worker: guarded(worker) for worker in jobs if worker]
        return sum(self._crew.run(lambda: guarded(0), others))

    def close(self):
        self._crew.close()


def replication_of(workers, config, objective):
    """The ReplicationSettings of a run on a CPU backend ("auto" decided by
    hogwild.replication.choose, with probe_rates as its measure)."""
    from hogwild.schedulers import SCHEDULERS

    return resolve(config, objective, workers, SCHEDULERS[config.scheduler].kind,
                   lambda candidates: probe_rates(objective, workers, config, candidates))


def probe_rates(objective, workers, config, candidates):
    """{name: [updates/s]} of "shared" and each of ``candidates`` ({name: (mode,
    merge)}) on copies of the parameters: PROBE_VISITS alternating visits of each,
    each PROBE_ROUNDS timed hogwild epochs of PROBE_SAMPLES samples per worker after
    one untimed, on those samples alone (probe_data)."""
    from hogwild.kernels.compiler import compile_loops, slp_vectorizer
    from hogwild.schedulers import SCHEDULERS

    n = min(objective.n_samples, PROBE_SAMPLES * workers)
    planner = SCHEDULERS["hogwild"].planner(n, workers)
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    rng = np.random.default_rng(0)
    modes = {"shared": ("shared", None), **candidates}
    timings = {name: [] for name in modes}
    with slp_vectorizer(objective.fastmath):
        # one mode's backend at a time: an idle crew polls for work for ~10 ms and
        # would take a core from the other's timed epochs
        for name in tuple(modes) * PROBE_VISITS:
            mode, merge = modes[name]
            settings = ReplicationSettings.for_run(config, objective, mode, merge=merge)
            with ThreadsBackend(workers, settings) as probe:
                params, data = probe.share(tuple(aligned_copy(p) for p in objective.params),
                                           probe_data(objective, n), n)
                probe.warm_up(loops, params, data, SCHEDULERS["hogwild"])
                for round_ in range(PROBE_ROUNDS + 1):  # round 0 warms caches and pages
                    plan = planner.plan(rng, config.shuffle_block)
                    start = time.perf_counter()
                    updates = probe.run_epoch(loops, plan, params, data,
                                              config.schedule.epoch_steps(0), 0)
                    if round_:
                        timings[name].append(updates / max(time.perf_counter() - start,
                                                           1e-9))
    return timings
