"""The processes backend's child side: the message protocol (ShareCommand), a
child's main loop (worker_main: attach the run's segments, load the compiled
loops, run shares on command, report errors with their traceback), and dying
with the parent."""
import ctypes
import os
import pickle
import signal
import threading
import time
import traceback
from typing import NamedTuple

import numpy as np

from hogwild.backends.replicas import Replicas
from hogwild.backends.shared_memory import attach
from hogwild.interrupts import STOP_SIGNALS
from hogwild.kernels.compiler import slp_vectorizer
from hogwild.kernels.plans import Share, give_up, pieces, run_share, warm_up

POLL_SECONDS = 0.1
SPIN_SECONDS = 0.02  # a waiting process polls this long before it sleeps
COUNTER_STRIDE = 8  # int64 words per 64-byte cache line: one progress counter per line
CHUNK_SAMPLES = 1_000_000  # a worker reports progress after about this many updates


class ShareCommand(NamedTuple):
    """What a child needs to run its Share of a phase: the plan's runs and gates are
    in shared segments (by spec), its own span rows travel in the message."""

    kind: str
    n_runs: int
    spans: np.ndarray
    run_length: int
    steps: np.ndarray        # the step table (hogwild.steps.EpochSteps.table)
    epoch: int
    gate_words: int
    workers: int
    runs_segment: object
    sync_segment: object
    rounds: int = 0          # replicated epochs: merge rounds (0: not replicated)
    merge_every: int = 0     # and a worker's updates between merges
    total: int = 1           # what the step table spans (plans.share_length)


def counting(counters, worker):
    """on_round for Replicas.run_rounds: the worker's progress counter."""
    def count(done):
        counters[worker * COUNTER_STRIDE] = done
    return count


def run_in_pieces(loops, share, params, data, counters, chunk_samples, keep_going=None):
    """A worker's share of a phase, piece by piece (see plans.pieces), its progress in
    counters[worker * COUNTER_STRIDE]; stops early when a piece is aborted or when
    ``keep_going()`` says so. Returns the updates done."""
    done = 0
    for piece in pieces(share.kind, share.spans, share.run_length, chunk_samples):
        updates = run_share(loops, share.piece(piece, done), params, data)
        if updates < 0:  # aborted: another worker failed
            break
        done += updates
        counters[share.worker * COUNTER_STRIDE] = done
        if keep_going is not None and not keep_going():
            break
    return done


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent(parent):
    """Have this process killed when ``parent`` dies: by the kernel where Linux's
    prctl is available (instantly, even while compiled code spins), else by a
    thread that polls the parent's pid."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        def watch():
            while os.getppid() == parent:
                time.sleep(POLL_SECONDS)
            os._exit(1)

        threading.Thread(target=watch, daemon=True, name="hogwild-parent-watch").start()
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)


def worker_main(pipe, setup, me):
    """Attach the run's arrays, load the loops, then run epochs on command. A
    parent gone (its pipe closed) ends the child quietly."""
    for signum in STOP_SIGNALS:  # Ctrl-C, SIGTERM and SIGHUP are the parent's to handle
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # born blocked: processes.py
    try:
        setup = pickle.loads(setup)
        _die_with_parent(setup["parent"])
        loops, params, data, token, fastmath, counters, chunk, replicas = _worker_setup(setup)
        attached = {}

        def view(spec):
            if spec.path not in attached:
                attached[spec.path] = attach(spec, token)[0]
            return attached[spec.path]

        for spec in setup["buffers"]:
            view(spec)
        pipe.send(("ready", 0))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        _send_error(pipe, exc)
        return
    while True:
        try:
            _await_command(pipe)
            command = pipe.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if command[0] == "stop":
            return
        if command[0] == "attach":  # grown plan buffers, unlinked once all have them
            for spec in command[1:]:
                view(spec)
            reply = ("done", 0)
        else:
            job = command[1]
            share = Share(job.kind, view(job.runs_segment)[:job.n_runs], job.spans,
                          job.run_length, job.steps, job.epoch,
                          view(job.sync_segment)[:job.gate_words], me, job.workers,
                          total=job.total)
            try:
                with slp_vectorizer(fastmath):  # as the parent compiled, should this compile
                    if job.rounds:
                        done = replicas.run_rounds(
                            loops, share, list(pieces(share.kind, share.spans,
                                                      share.run_length, job.merge_every)),
                            job.rounds, counting(counters, me))
                    else:
                        done = run_in_pieces(loops, share, params, data, counters, chunk)
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                give_up(share.kind, share.sync, me)
                _send_error(pipe, exc)
                return
            reply = ("done", int(done))
        try:
            pipe.send(reply)
        except (BrokenPipeError, OSError):
            return  # the parent is gone


def _await_command(pipe, spin_seconds=SPIN_SECONDS):
    """Poll for the next command for a short while before blocking: the next epoch
    usually starts within milliseconds, and a sleeping process takes a while to
    wake up. Each poll yields the core, so a busy parent is not held back."""
    deadline = time.perf_counter() + spin_seconds
    while not pipe.poll() and time.perf_counter() < deadline:
        os.sched_yield()


def _worker_setup(setup):
    from hogwild.kernels.compiler import compile_loops

    update, loss, fastmath = pickle.loads(setup["functions"])
    arrays = [attach(spec, setup["token"])[0] for spec in setup["arrays"]]
    params, data = tuple(arrays[:setup["n_params"]]), tuple(arrays[setup["n_params"]:])
    loops = compile_loops(update, loss, fastmath)
    with slp_vectorizer(fastmath):  # load the run's loop now, not in its first epoch
        warm_up(loops, setup["kind"], params, data)
    counters = attach(setup["counters"], setup["token"])[0]
    segments = iter(setup["replica_segments"])
    replicas = Replicas.for_run(  # the parent's, over the same segments
        setup["replication"], params, data, setup["workers"], setup["n_samples"],
        lambda shape, dtype: attach(next(segments), setup["token"])[0], filled=True)
    if replicas is not None:
        with slp_vectorizer(fastmath):
            replicas.warm_up()
    return (loops, params, data, setup["token"], fastmath, counters, setup["chunk_samples"],
            replicas)


def _send_error(pipe, exc):
    text = "".join(traceback.format_exception(exc))
    try:
        payload = pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - not picklable: the parent rebuilds a HogwildError
        payload = b""
    try:
        pipe.send(("error", payload, text))
    except (BrokenPipeError, OSError):
        pass  # the parent is gone: nobody is left to tell
