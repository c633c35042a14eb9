"""Processes backend: W worker processes (spawn start method) running the same
compiled loops as the threads backend over parameters, data, plans and gates that
live in shared memory (hogwild.backends.shared_memory), attached once per run, so
nothing is copied or pickled per epoch but each worker's few span rows.

Workers load the compiled loops from numba's on-disk cache (the parent compiles
them first), so they start in about the time a Python process takes to import
numpy and numba. The parent waits on the workers' pipes and process sentinels
together: a worker that raises has its exception re-raised in the parent (with
its traceback as a note); a worker that dies (SIGKILL, a crash) is noticed within
0.1 s, the gates are opened so the others stop waiting, and the run fails with
an error naming the worker and the signal. Every segment is deleted when the
backend closes, however the run ended. Workers ignore SIGINT: Ctrl-C is the
parent's (see hogwild.engine.fit).
"""
import importlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import time
import traceback

import numpy as np

from hogwild.backends.shared_memory import SegmentSet, attach
from hogwild.backends.threads import warm_up_loops
from hogwild.errors import HogwildError
from hogwild.kernels.atomics import GATE_STRIDE, abort_gates, new_lock
from hogwild.kernels.compiler import slp_vectorizer

POLL_SECONDS = 0.1
COUNTER_STRIDE = 8  # int64 words per 64-byte cache line: one progress counter per line
CHUNK_SAMPLES = 1_000_000  # a worker reports progress after about this many updates
SPIN_SECONDS = 0.02  # a worker polls this long for its next command before it sleeps


def _dumps_functions(loops):
    from numba import cloudpickle  # numba's own copy: pickles closures by value

    return cloudpickle.dumps(loops.source)


class ProcessesBackend:
    name = "processes"

    def __init__(self, workers):
        self.workers = workers
        self.startup_seconds = 0.0
        self._segments = SegmentSet()
        self._processes, self._pipes = [], []
        self._runs = self._sync = None
        self._shared = []  # specs of params then data, in order
        self._counters = self._segments.create((workers * COUNTER_STRIDE,), np.int64)
        self.on_progress = None  # on_progress(updates done so far in this epoch)

    # -- set-up ---------------------------------------------------------------------

    def share(self, params, data):
        """Shared copies of params and data (the workers attach the same files)."""
        shared = []
        for array in params + data:
            copy, spec = self._segments.share(array)
            shared.append(copy)
            self._shared.append(spec)
        return tuple(shared[:len(params)]), tuple(shared[len(params):])

    def export(self, params):
        return tuple(np.array(p) for p in params)

    def warm_up(self, loops, params, data, scheduler):
        """Compile the loops here (filling numba's cache), then start the workers,
        which load them from the cache, and wait until each is ready."""
        warm_up_loops(loops, params, data, scheduler)
        self._ensure_buffers(1, 1)
        setup = pickle.dumps({"functions": _dumps_functions(loops), "token":
                              self._segments.token, "arrays": self._shared,
                              "n_params": len(params), "counters": self._counters[1],
                              "chunk_samples": CHUNK_SAMPLES})
        context = multiprocessing.get_context("spawn")
        start = time.perf_counter()
        for w in range(self.workers):
            parent_end, child_end = context.Pipe()
            process = context.Process(target=_worker_main, args=(child_end, setup, w),
                                      name=f"hogwild-worker-{w}", daemon=True)
            process.start()
            child_end.close()
            self._processes.append(process)
            self._pipes.append(parent_end)
        self._collect(set(range(self.workers)), "starting", None)
        self.startup_seconds = time.perf_counter() - start

    def _ensure_buffers(self, n_runs, n_gates):
        """Shared plan buffers big enough for this epoch (grown when needed)."""
        if self._runs is None or self._runs[0].size < n_runs:
            self._runs = self._segments.create((max(n_runs, 1024),), np.int64)
        need = GATE_STRIDE * (n_gates + 1) + new_lock().size
        if self._sync is None or self._sync[0].size < need:
            self._sync = self._segments.create((max(need, 4096),), np.int32)

    # -- epochs ---------------------------------------------------------------------

    def run_epoch(self, loops, plan, params, data, step, epoch):
        runs = np.asarray(plan.runs, np.int64)
        if plan.barriers:
            kind, n_gates = "phased", self.workers
        elif plan.gates:
            kind, n_gates = "gated", plan.gates
        else:
            kind, n_gates = ("locked" if plan.locked else "spans"), 0
        self._ensure_buffers(runs.size, n_gates)
        self._runs[0][:runs.size] = runs
        sync = self._sync[0]
        gate_words = GATE_STRIDE * (n_gates + 1)
        updates = 0
        for phase in plan.phases:
            sync[:] = 0
            self._counters[0][:] = 0
            busy = set()
            for w, spans in enumerate(phase):
                if len(spans) or kind == "phased":  # every worker meets the barriers
                    self._pipes[w].send(("run", kind, runs.size, np.asarray(spans, np.int64),
                                         plan.run_length, step, epoch, gate_words,
                                         self._runs[1], self._sync[1]))
                    busy.add(w)
            updates += sum(self._collect(busy, "running", epoch, updates).values())
        return updates

    def _collect(self, busy, doing, epoch, updates_before=0):
        """Wait for a reply from each worker in ``busy``; {worker: result}. Raises
        (after stopping every worker) if one fails or dies. Meanwhile, reports the
        workers' shared progress counters to on_progress."""
        results = {}
        sentinels = {self._processes[w].sentinel: w for w in busy}
        pipes = {self._pipes[w]: w for w in busy}
        while len(results) < len(busy):
            ready = multiprocessing.connection.wait(
                [p for p, w in pipes.items() if w not in results] +
                [s for s, w in sentinels.items() if w not in results], POLL_SECONDS)
            for item in ready:
                w = pipes.get(item, sentinels.get(item))
                if w in results:
                    continue
                if item in pipes:
                    try:
                        message = item.recv()
                    except (EOFError, OSError):
                        continue  # its sentinel tells how it ended
                    if message[0] == "error":
                        self._fail()
                        _raise_remote(w, message)
                    results[w] = message[1]
                elif not self._processes[w].is_alive():
                    self._fail()
                    raise HogwildError(self._death(w, doing, epoch))
            if self.on_progress is not None and epoch is not None:
                self.on_progress(updates_before + int(self._counters[0][::COUNTER_STRIDE].sum()))
        return results

    def _death(self, w, doing, epoch):
        process = self._processes[w]
        code = process.exitcode
        how = (f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exited with status {code}")
        when = f"in epoch {epoch + 1}" if epoch is not None else "while starting"
        return (f"worker {w} (pid {process.pid}) {how} {when}; the run was stopped and its "
                "shared memory removed")

    def _fail(self):
        """Stop every worker now: open the gates so none waits, then terminate."""
        if self._sync is not None:
            abort_gates(self._sync[0])
        for process in self._processes:
            if process.is_alive():
                process.terminate()
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()

    def close(self):
        for pipe, process in zip(self._pipes, self._processes):
            if process.is_alive():
                try:
                    pipe.send(("stop",))
                except (BrokenPipeError, OSError):
                    pass
        for process in self._processes:
            process.join(timeout=5)
        self._fail()
        for pipe in self._pipes:
            pipe.close()
        self._segments.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _raise_remote(w, message):
    _, payload, text = message
    try:
        exc = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - an exception type the parent cannot rebuild
        exc = HogwildError(f"worker {w} failed: {text.strip().splitlines()[-1]}")
    exc.add_note(f"raised in worker process {w}:\n{text}")
    raise exc


# -- the worker process ------------------------------------------------------------------

def _worker_main(pipe, setup, me):
    """Attach the run's arrays, load the loops, then run epochs on command."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        loops, params, data, token, fastmath, counters, chunk = _worker_setup(setup)
        pipe.send(("ready", 0))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        _send_error(pipe, exc)
        return
    attached = {}

    def view(spec):
        if spec.path not in attached:
            attached[spec.path] = attach(spec, token)[0]
        return attached[spec.path]

    while True:
        _await_command(pipe)
        command = pipe.recv()
        if command[0] == "stop":
            return
        _, kind, n_runs, spans, run_length, step, epoch, gate_words, runs_spec, sync_spec = command
        runs = view(runs_spec)[:n_runs]
        sync = view(sync_spec)
        gates = sync[:gate_words]
        try:
            done = 0
            with slp_vectorizer(fastmath):  # as the parent compiled, should this compile
                for piece in _pieces(kind, spans, run_length, chunk):
                    updates = _run_command(loops, kind, runs, piece, run_length, params, data,
                                           step, epoch, gates, sync, gate_words, me)
                    if updates < 0:  # aborted: another worker failed
                        break
                    done += updates
                    counters[me * COUNTER_STRIDE] = done
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            abort_gates(gates)
            _send_error(pipe, exc)
            return
        pipe.send(("done", int(done)))


def _run_command(loops, kind, runs, spans, run_length, params, data, step, epoch, gates,
                 sync, gate_words, me):
    """One epoch's share: the loop the parent's plan asks for (see loops_template)."""
    if kind == "phased":
        return loops.run_phased_spans(runs, spans, run_length, params, data, step, epoch,
                                      gates, me, gate_words // GATE_STRIDE - 1)
    if kind == "gated":
        return loops.run_gated_spans(runs, spans, run_length, params, data, step, epoch, gates)
    if kind == "locked":
        lock = sync[gate_words:gate_words + new_lock().size]
        return loops.run_spans_locked(runs, spans, run_length, params, data, step, epoch, lock)
    return loops.run_spans(runs, spans, run_length, params, data, step, epoch)


def _pieces(kind, spans, run_length, chunk_samples):
    """The share cut into kernel calls of about ``chunk_samples`` updates, so that
    the worker's progress counter moves during long epochs. Plain spans split at
    any run; gated and phased rows (blocks, phases) are kept whole, in order."""
    runs_per_piece = max(1, chunk_samples // max(run_length, 1))
    if kind in ("spans", "locked"):
        for lo, hi, limit in spans:
            for start in range(lo, hi, runs_per_piece):
                yield np.array([[start, min(start + runs_per_piece, hi), limit]], np.int64)
        return
    rows = max(1, len(spans) // 32)
    for start in range(0, len(spans), rows):
        yield spans[start:start + rows]


def _await_command(pipe, spin_seconds=SPIN_SECONDS):
    """Poll for the next command for a short while before blocking: the next epoch
    usually starts within milliseconds, and a sleeping process takes a while to
    wake up. Each poll yields the core, so a busy parent is not held back."""
    deadline = time.perf_counter() + spin_seconds
    while not pipe.poll() and time.perf_counter() < deadline:
        os.sched_yield()


def _worker_setup(setup):
    from hogwild.kernels.compiler import compile_loops

    setup = pickle.loads(setup)
    update, loss, fastmath = pickle.loads(setup["functions"])
    for fn in (update, loss):  # closures arrive by value: import their modules, so
        try:  # that the loops get the parent's cache key and load its machine code
            importlib.import_module(fn.__module__)
        except ImportError:
            pass
    arrays = [attach(spec, setup["token"])[0] for spec in setup["arrays"]]
    params, data = tuple(arrays[:setup["n_params"]]), tuple(arrays[setup["n_params"]:])
    loops = compile_loops(update, loss, fastmath)
    counters = attach(setup["counters"], setup["token"])[0]
    return loops, params, data, setup["token"], fastmath, counters, setup["chunk_samples"]


def _send_error(pipe, exc):
    text = "".join(traceback.format_exception(exc))
    try:
        payload = pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - not picklable: the parent rebuilds a HogwildError
        payload = b""
    try:
        pipe.send(("error", payload, text))
    except (BrokenPipeError, OSError):
        print(text, file=sys.stderr)
