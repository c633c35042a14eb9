"""Processes backend: W workers in W processes, the parent and W - 1 children
started with the spawn method, running the same compiled loops as the threads
backend over parameters, data, plans and gates that live in shared memory
(hogwild.backends.shared_memory), attached once per run, so nothing is copied or
pickled per epoch but each child's few span rows.

The parent runs worker 0's share itself, as the threads backend's calling thread
does: an epoch then costs one hand-off to the children, and no process sleeps
through it (waking a sleeping process costs a fraction of a millisecond on a
virtual machine, which matters for epochs of a few milliseconds). Children load
the compiled loops from numba's on-disk cache (the parent compiles them first),
so they start in about the time a Python process takes to import numpy and numba.

Failures: a child that raises sends its exception, re-raised in the parent with
the child's traceback as a note. A watchdog thread in the parent waits on the
children's process sentinels; when one dies (SIGKILL, a crash), or stays stopped
(SIGSTOP, a debugger) for STOPPED_SECONDS while the parent runs, it frees the
``locked`` scheduler's lock if the dead worker held it and raises the abort word
at once, so no worker waits for it, and the parent stops the run between two
pieces of its own share (pieces of about CHUNK_SAMPLES updates) with an error
naming the worker and the signal. Every segment is deleted when the backend
closes, however the run ended; once every child has attached a segment its file
is unlinked (hogwild.backends.shared_memory), so nothing large outlives a killed
parent. Children ignore the stop signals from birth: Ctrl-C, SIGTERM and SIGHUP,
sent to the parent or to its whole process group, are the parent's (see
hogwild.engine.fit). Children die with their parent: the kernel kills them when it
dies (PR_SET_PDEATHSIG on Linux; elsewhere a thread watches the parent's pid), so
no orphan spins on a core after the parent was killed.

Replication ("worker", "hot"; hogwild.backends.replicas): the workers' copies are
shared segments too, made by the parent's Replicas in order; each child builds the
same Replicas over the same segments, and every worker runs its rounds and its
slice of the merges as the threads do, at barriers in the run's gate segment.
"""
import multiprocessing
import multiprocessing.connection
import os
import pickle
import threading
import time

import numpy as np

from hogwild.backends.base import HostBackend
from hogwild.backends.replicas import Replicas
from hogwild.backends.process_worker import (CHUNK_SAMPLES, COUNTER_STRIDE, POLL_SECONDS,
                                             SPIN_SECONDS, ShareCommand, counting,
                                             run_in_pieces, worker_main)
from hogwild.backends.process_watch import (HEARTBEAT_SECONDS, STOPPED_SECONDS,
                                            born_with_stop_signals_blocked,
                                            death_message, is_stopped, raise_remote)
from hogwild.backends.shared_memory import SegmentSet
from hogwild.backends.threads import replication_of
from hogwild.errors import HogwildError
from hogwild.kernels.atomics import GATE_STRIDE, abort_gates
from hogwild.kernels.compiler import slp_vectorizer
from hogwild.replication import ReplicationSettings
from hogwild.kernels.plans import Share, gate_count, give_up, pieces, share_length, warm_up

def _dumps_functions(loops):
    from numba import cloudpickle  # numba's own copy: pickles closures by value

    return cloudpickle.dumps(loops.source)



class ProcessesBackend(HostBackend):
    name = "processes"
    streams_samples = True
    workers_share_cores = True  # workers are CPU processes: bounded by check_workers
    replication_modes = ("shared", "worker", "hot", "auto")

    @classmethod
    def open(cls, workers, config, source):
        return cls(workers, replication_of(workers, config, source))

    def __init__(self, workers, replication=ReplicationSettings()):
        self.workers = workers
        self.settings, self.replication = replication, replication.mode
        self._replicas = None
        self._replica_specs = []  # the segments the Replicas made, in order
        self.startup_seconds = 0.0
        self.on_progress = None  # on_progress(updates done so far in this epoch)
        self._segments = SegmentSet()
        self._processes, self._pipes = {}, {}  # children 1..workers-1
        self._runs = self._sync = None
        self._n_samples = 1
        self._kind = None  # the running epoch's kind of share: spans, locked, gated, phased
        self._shared = []  # specs of params then data, in order
        self._counters = self._segments.create((workers * COUNTER_STRIDE,), np.int64)
        self._dead = None  # the worker once the watchdog sees it die (or stopped)
        self._stopped = None  # the worker the watchdog found stopped too long
        self._closing = threading.Event()
        self._wake_watchdog = self._watchdog = None

    # -- set-up ---------------------------------------------------------------------

    def share(self, params, data, n_samples=None):
        """Shared copies of params and data (the children attach the same files), and
        with replication "worker" or "hot" the workers' copies, in shared memory too
        (each child builds the same Replicas over them)."""
        self._n_samples = n_samples or 1
        shared = []
        for array in params + data:
            copy, spec = self._segments.share(array)
            shared.append(copy)
            self._shared.append(spec)
        params, data = tuple(shared[:len(params)]), tuple(shared[len(params):])

        def allocate(shape, dtype):
            array, spec = self._segments.create(shape, dtype)
            self._replica_specs.append(spec)
            return array
        self._replicas = Replicas.for_run(self.settings, params, data, self.workers,
                                          self._n_samples, allocate)
        return (params if self._replicas is None else self._replicas.params), data

    def replicated(self):
        return self.settings.report(self._replicas, self._n_samples)

    def export(self, params):
        return tuple(np.array(p) for p in params)

    def warm_up(self, loops, params, data, scheduler, objective=None):
        """Compile the loops here (filling numba's cache), then start the children,
        which load them from the cache, and wait until each is ready."""
        warm_up(loops, scheduler.kind, params, data)
        if self._replicas is not None:
            self._replicas.warm_up()
        self._ensure_buffers(self._n_samples, self.workers)  # an epoch has <= n runs
        setup = pickle.dumps({"functions": _dumps_functions(loops), "token":
                              self._segments.token, "arrays": self._shared,
                              "n_params": len(params), "counters": self._counters[1],
                              "buffers": [self._runs[1], self._sync[1]],
                              "chunk_samples": CHUNK_SAMPLES, "kind": scheduler.kind,
                              "parent": os.getpid(), "replication": self.settings,
                              "replica_segments": self._replica_specs,
                              "workers": self.workers, "n_samples": self._n_samples})
        context = multiprocessing.get_context("spawn")
        start = time.perf_counter()
        for w in range(1, self.workers):
            parent_end, child_end = context.Pipe()
            process = context.Process(target=worker_main, args=(child_end, setup, w),
                                      name=f"hogwild-worker-{w}", daemon=True)
            with born_with_stop_signals_blocked():
                process.start()
                child_end.close()
                self._processes[w], self._pipes[w] = process, parent_end
        self._collect(set(self._processes), None)
        self._segments.unlink_files()  # every child has mapped every segment
        self.startup_seconds = time.perf_counter() - start
        if self._processes:
            self._wake_watchdog, wake = context.Pipe()
            self._watchdog = threading.Thread(target=self._watch, args=(wake,), daemon=True,
                                              name="hogwild-watchdog")
            self._watchdog.start()

    def _watch(self, wake):
        """Wait for a child to die (or the backend to close), looking every
        HEARTBEAT_SECONDS whether one is stopped (SIGSTOP, a debugger); on a death,
        or a child stopped for STOPPED_SECONDS while this process runs, record it
        and open the gates so that no worker waits for it."""
        sentinels = {p.sentinel: w for w, p in self._processes.items()}
        stopped_since = {}
        dead = []
        while not dead:
            ready = multiprocessing.connection.wait(list(sentinels) + [wake],
                                                    HEARTBEAT_SECONDS)
            if ready:  # a death, or the backend closing
                dead = [sentinels[item] for item in ready if item in sentinels]
                break
            now = time.monotonic()
            for w, process in self._processes.items():
                if not is_stopped(process.pid):
                    stopped_since.pop(w, None)
                elif now - stopped_since.setdefault(w, now) >= STOPPED_SECONDS:
                    self._stopped = w
                    dead = [w]
        if dead and not self._closing.is_set():
            self._dead = dead[0]
            give_up(self._kind, self._sync[0], dead[0])

    def _ensure_buffers(self, n_runs, n_gates):
        """Shared plan buffers big enough for this epoch (grown when needed: running
        children then attach the new ones before their files are unlinked)."""
        grown = False
        if self._runs is None or self._runs[0].size < n_runs:
            self._runs = self._segments.create((max(n_runs, 1024),), np.int64)
            grown = True
        need = GATE_STRIDE * (n_gates + 1)
        if self._sync is None or self._sync[0].size < need:
            self._sync = self._segments.create((max(need, 4096),), np.int32)
            grown = True
        if grown and self._processes:
            for pipe in self._pipes.values():
                pipe.send(("attach", self._runs[1], self._sync[1]))
            self._collect(set(self._processes), None)
            self._segments.unlink_files()

    # -- epochs ---------------------------------------------------------------------

    def run_epoch(self, loops, plan, params, data, steps, epoch):
        merging = self._replicas is not None and self._replicas.merging
        n_gates = max(gate_count(plan, self.workers), self.workers if merging else 0)
        self._kind = plan.kind
        self._ensure_buffers(plan.runs.size, n_gates)
        runs = self._runs[0][:plan.runs.size]
        runs[:] = plan.runs
        sync = self._sync[0]
        gate_words = GATE_STRIDE * (n_gates + 1)
        gates = sync[:gate_words]
        updates = 0
        for phase in plan.phases:
            sync[:] = 0
            self._counters[0][:] = 0
            self._check_alive(epoch)  # after clearing the gates: see _watch
            busy = set()
            merge_every, rounds = 0, 0
            if merging:  # every worker meets the merge barriers
                merge_every = self.settings.interval(self._n_samples)
                cut = [list(pieces(plan.kind, spans, plan.run_length, merge_every))
                       for spans in phase]
                rounds = max(len(c) for c in cut)
            for w in range(1, len(phase)):
                if len(phase[w]) or plan.kind == "phased" or rounds:  # all meet barriers
                    self._pipes[w].send(("run", ShareCommand(
                        plan.kind, runs.size, np.asarray(phase[w], np.int64), plan.run_length,
                        steps.table, epoch, gate_words, len(phase), self._runs[1],
                        self._sync[1], rounds, merge_every,
                        share_length(plan, phase[w], len(phase), steps.table))))
                    busy.add(w)
            replies = {}
            mine = Share(plan.kind, runs, np.asarray(phase[0], np.int64), plan.run_length,
                         steps.table, epoch, gates, 0, len(phase),
                         total=share_length(plan, phase[0], len(phase), steps.table))
            try:
                with slp_vectorizer(loops.source.fastmath):
                    if rounds:
                        done = self._replicas.run_rounds(loops, mine, cut[0], rounds,
                                                         counting(self._counters[0], 0))
                    else:
                        done = run_in_pieces(loops, mine, params, data, self._counters[0],
                                          CHUNK_SAMPLES,
                                          lambda: self._poll(busy, replies, epoch, updates))
            except BaseException:
                give_up(plan.kind, gates, 0)  # the children must not wait for this share
                self._fail()
                raise
            replies.update(self._collect(busy - set(replies), epoch, updates))
            updates += done + sum(replies.values())
        return updates

    def _check_alive(self, epoch):
        """Raise if a child has died: its own error if it sent one before exiting,
        else how it died."""
        if self._dead is None:
            return
        w = self._dead
        try:
            while self._pipes[w].poll():
                message = self._pipes[w].recv()
                if message[0] == "error":
                    self._fail()
                    raise_remote(w, message)
        except (EOFError, OSError):
            pass
        self._fail()
        raise HogwildError(self._death(w, epoch))

    def _poll(self, busy, replies, epoch, updates_before):
        """Between pieces of the parent's share: take any replies already in, and stop
        (return False) if a child died or failed."""
        if self._dead is not None:
            return False
        for w in busy - set(replies):
            if self._pipes[w].poll():
                replies.update(self._collect({w}, epoch))
        self._report(epoch, updates_before)  # counters: every worker's updates in this phase
        return True

    def _collect(self, busy, epoch, updates_before=0):
        """Wait for a reply from each child in ``busy``; {worker: result}. Raises
        (after stopping every child) if one fails or dies. Meanwhile, reports the
        workers' shared progress counters to on_progress."""
        results = {}
        spin_until = time.perf_counter() + SPIN_SECONDS
        while len(results) < len(busy):
            self._check_alive(epoch)
            waiting = [self._pipes[w] for w in busy if w not in results]
            spinning = time.perf_counter() < spin_until  # replies often come at once
            ready = multiprocessing.connection.wait(
                waiting + [self._processes[w].sentinel for w in busy if w not in results],
                0 if spinning else POLL_SECONDS)
            for w in busy:
                if w in results or self._pipes[w] not in ready:
                    if w not in results and not self._processes[w].is_alive():
                        self._dead = w
                    continue
                try:
                    message = self._pipes[w].recv()
                except (EOFError, OSError):
                    self._dead = w
                    continue
                if message[0] == "error":
                    self._fail()
                    raise_remote(w, message)
                results[w] = message[1]
            self._report(epoch, updates_before)
        return results

    def _report(self, epoch, updates_before):
        if self.on_progress is not None and epoch is not None:
            self.on_progress(updates_before + int(self._counters[0][::COUNTER_STRIDE].sum()))

    def _death(self, w, epoch):
        return death_message(w, self._processes[w], epoch, stopped=w == self._stopped)

    def _fail(self):
        """Stop every child now: open the gates so none waits, then kill them (they
        ignore SIGTERM, which is the parent's to handle)."""
        if self._sync is not None:
            abort_gates(self._sync[0])
        self._closing.set()
        for process in self._processes.values():
            if process.is_alive():
                process.kill()
        for process in self._processes.values():
            process.join(timeout=5)  # a process in uninterruptible sleep is left to die

    def close(self):
        """Stop the children and delete every segment, whatever happens on the way."""
        try:
            self._closing.set()
            for w, process in self._processes.items():
                if process.is_alive():
                    try:
                        self._pipes[w].send(("stop",))
                    except (BrokenPipeError, OSError):
                        pass
            for process in self._processes.values():
                process.join(timeout=5)
            self._fail()
            if self._watchdog is not None:
                try:
                    self._wake_watchdog.send(None)
                except (BrokenPipeError, OSError):
                    pass  # it has already returned, having seen the children exit
                self._watchdog.join()
                self._wake_watchdog.close()
            for pipe in self._pipes.values():
                pipe.close()
        finally:
            self._segments.close()
