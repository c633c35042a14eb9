"""The engine: runs epochs of an Objective under a scheduler on a backend.

It owns *when* things happen: the step schedule, one plan per epoch, timing of
the update phase only, evaluation between epochs, the finiteness check and the
single per-epoch callback.
"""
import contextlib
import functools
import math
import re
import signal
import sys
import threading
import time
import warnings
from dataclasses import asdict
from typing import Optional

import numpy as np
from numba.core.errors import NumbaError

from hogwild.backends import get_backend
from hogwild.backends.host import aligned_copy, is_aligned
from hogwild.backends.shared_memory import remove_stale_folders
from hogwild.checkpoint import (Checkpoint, check_compatible, data_fingerprint, load_checkpoint,
                                restore_field, save_checkpoint)
from hogwild.config import RunControls, TrainingConfig, settle
from hogwild.errors import DivergenceError, HogwildError, Interrupted, WorkerLost
from hogwild.evaluation import evaluator, held_out_bytes
from hogwild.kernels.compiler import compile_loops, slp_vectorizer
from hogwild.limits import available_memory, check_workers, return_freed_memory, size_text
from hogwild.objective import Objective
from hogwild.phases import phase, training_starts
from hogwild.results import EpochRecord, FitResult
from hogwild.schedulers import get_scheduler
from hogwild.streaming import plan_stream


def _stream(objective, params, config, scheduler, backend_cls):
    """The run's hogwild.streaming.SampleStream when its samples on disk do not fit
    in config.memory (default: the memory available) beside the parameters, with a
    warning saying so; None when they fit."""
    memory = config.memory
    if memory is None:
        memory = available_memory()
        if memory is None:
            return None
    stream = plan_stream(objective.data, objective.n_samples, sum(p.nbytes for p in params),
                         memory, scheduler.kind, config.shuffle_block, backend_cls,
                         objective.sample_offsets)
    if stream is not None:
        on_disk = sum(objective.data[i].nbytes for i in stream.streamed)
        warnings.warn(f"the samples ({size_text(on_disk)}) do not fit in memory "
                      f"{size_text(memory)} beside the parameters: they are read from disk "
                      f"chunk by chunk, {stream.capacity:,} samples a chunk", stacklevel=3)
    return stream


def _restored(params, saved):
    """The checkpoint's parameters written into the run's arrays (the engine's copies,
    or the objective's own when it trains in place) where they have the same shape
    and type: no third copy of 2.6 GB of factors on resume; else aligned copies."""
    restored = []
    for own, kept in zip(params, saved):
        if own.shape == kept.shape and own.dtype == kept.dtype and is_aligned(own):
            own[...] = kept
            restored.append(own)
        else:
            restored.append(aligned_copy(kept))
    return tuple(restored)


def _diverged(what, epoch, step):
    return DivergenceError(f"{what} became NaN or Inf in epoch {epoch} (step {step:.3g}); "
                           "try a smaller step")


@contextlib.contextmanager
def _compiling(objective):
    """A function numba cannot compile becomes a HogwildError that keeps numba's
    explanation."""
    try:
        with slp_vectorizer(objective.fastmath):
            yield
    except NumbaError as exc:
        detail = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
        raise HogwildError(f"numba could not compile the update or loss of objective "
                           f"'{objective.name}'; they must be in numba's nopython subset and "
                           f"helpers they call must be @numba.njit functions:\n{detail}") \
            from None


def _compile(runner, loops, objective, params, data, scheduler):
    """Compile (or load) the loops before the first timed epoch."""
    with _compiling(objective):
        runner.warm_up(loops, params, data, scheduler, objective)
        runner.loss_sum(loops, params, data, 0)


CHECK_CHUNK = 1 << 16  # samples per call of the checked loss pass


def _check_indices(loops, objective, params):
    """One pass of the objective's loss over every sample with each array index
    checked (loops.sum_loss_checked), before any update runs: a sample count
    larger than the data, or a sample whose ids lie beyond an array, is a
    HogwildError naming the first such sample, never a read of memory that
    another array (or nobody) owns. Half-precision parameters (the GPU's) are read
    as float32 copies: the CPU compiles no float16."""
    params = tuple(p.astype(np.float32) if p.dtype == np.float16 else p for p in params)
    n = objective.n_samples
    with _compiling(objective):
        for first in range(0, n, CHECK_CHUNK):
            last = min(first + CHECK_CHUNK, n)
            try:
                loops.sum_loss_checked(params, objective.data, first, last)
            except IndexError:
                bad = next(e for e in range(first, last) if _reads_out_of_bounds(
                    loops, params, objective.data, e))
                raise HogwildError(
                    f"objective '{objective.name}': loss(e={bad}) reads past the end of an "
                    f"array: n_samples ({n:,}) is more than the data holds, or sample {bad} "
                    "has an id beyond the array it indexes") from None


def _reads_out_of_bounds(loops, params, data, e):
    try:
        loops.sum_loss_checked(params, data, e, e + 1)
    except IndexError:
        return True
    return False


DIVERGENCE_GROWTH = 1e6  # an objective this many times its start's magnitude diverged
START_SAMPLES = 1 << 20  # the start's magnitude: the mean loss of the first samples (a
# whole pass over 10^8 ratings costs an epoch's time, for a bound this loose)


class _StopRequest:
    """Which stop signal arrived first, if any (``signum``)."""

    def __init__(self):
        self.signum = None

    def is_set(self):
        return self.signum is not None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _stop_after_epoch(announce=True):
    """While training: the first Ctrl-C or SIGTERM asks to stop after the current
    epoch (the returned request's ``is_set``), a second one interrupts at once;
    ``announce``: say so on stderr (the reporting process alone: every rank of an
    MPI job gets the signal). Only the main thread can install signal handlers;
    elsewhere both signals keep their usual effect."""
    requested = _StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield requested
        return

    def handler(signum, frame):
        if requested.is_set():
            raise Interrupted(None, signum=signum)
        requested.signum = signum
        if announce:
            again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
            print(f"hogwild: stopping after this epoch ({again} again to abandon it)",
                  file=sys.stderr, flush=True)

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield requested
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


def fit(objective: Objective, config: Optional[TrainingConfig] = None,
        controls: Optional[RunControls] = None, **options) -> FitResult:
    """Train ``objective`` with lock-free parallel SGD.

    ``config`` (hogwild.TrainingConfig) decides the result: epochs, step schedule,
    workers, scheduler, backend, sample order and seed; ``controls``
    (hogwild.RunControls) are what the caller watches and keeps: evaluation,
    callback, progress, checkpoints, resume. Their fields may also be given as
    keywords, which replace the objects' values: ``fit(objective, epochs=5)``.

    The objective's params are copied (trained in place with its train_in_place); the
    trained parameters are in ``result.params``.
    ``evaluate`` adds metrics (e.g. test error) to each epoch's record: a hogwild.Metric
    or a list of them (computed where the parameters are, e.g. on the GPU), or
    ``evaluate(params) -> dict`` called with host copies; ``callback(record)`` is called
    once after each epoch. ``progress(done, total)`` is called with the updates done so
    far in the run and its total: after each epoch, and during epochs as the processes
    backend's workers report (a progress bar).

    Checkpoints (see hogwild.checkpoint): with ``checkpoint=PATH`` the state after every
    ``checkpoint_every`` epochs and after the last one (``None``: neither) and after a
    Ctrl-C is written there atomically. ``resume=PATH`` continues a checkpointed run up
    to ``epochs`` in total; for the deterministic schedulers (serial, blocked, colored,
    cyclades) the result is bitwise that of an uninterrupted run. The first Ctrl-C
    during a fit stops it after the current epoch (checkpointed, then
    hogwild.errors.Interrupted is raised); a second one abandons the epoch. SIGTERM does
    the same as Ctrl-C. These hold on every backend.

    Reproducibility: with a seed, ``serial`` is bitwise reproducible, and so are
    ``blocked`` (for the objective's block layout), ``colored`` and ``cyclades``
    with any number of workers; ``hogwild`` and ``locked`` with several workers are
    reproducible only in distribution.

    ``workers`` (default: the usable cores) above 4 per usable core is refused
    unless ``oversubscribe=True``; on backend "gpu" it counts CUDA streams, on "ray"
    threads per node (default 1), and ``objective`` may then be a callable that
    each node calls to build its own copy (to load a file from its own disk).
    """
    config, controls = settle(config, controls, **options)
    backend_cls = get_backend(config.backend)
    source = objective
    if backend_cls.accepts_sources and callable(objective) \
            and not isinstance(objective, Objective):
        objective = objective()
    if not isinstance(objective, Objective):
        also = " or a callable returning one" if backend_cls.accepts_sources else ""
        raise HogwildError(f"objective must be a hogwild.Objective{also}, got "
                           f"{type(objective).__name__}")
    sched = get_scheduler(config.scheduler)
    supported = backend_cls.schedulers
    if supported is not None and sched.name not in supported:
        raise HogwildError(f"backend {config.backend!r} runs the schedulers "
                           f"{', '.join(supported)}; got {sched.name!r}")
    if config.replication not in backend_cls.replication_modes:
        raise HogwildError(f"backend {config.backend!r} runs replication "
                           f"{', '.join(map(repr, backend_cls.replication_modes))}; got "
                           f"{config.replication!r}")
    backend_cls.agree(config, objective)
    planner = sched.prepare(objective, check_workers(
        backend_cls.requested_workers(config),
        config.oversubscribe or not backend_cls.workers_share_cores))
    n_workers = planner.workers
    rng = np.random.default_rng(config.seed)
    schedule = config.schedule
    seed = config.seed
    settings = {"scheduler": sched.name, "step": config.step, "decay": config.decay,
                "step_schedule": config.step_schedule, "shuffle_block": config.shuffle_block,
                "seed": seed if seed is None or isinstance(seed, int) else repr(seed),
                "replication": config.replication, "merge_every": config.merge_every,
                **backend_cls.checkpoint_settings(config)}
    data_sha256 = functools.cache(lambda: data_fingerprint(objective.data))  # once, if needed
    epochs, checkpoint = config.epochs, controls.checkpoint

    params = tuple(p if objective.train_in_place and is_aligned(p) else aligned_copy(p)
                   for p in objective.params)
    history = []
    if controls.resume is not None:
        resume = controls.resume
        saved = load_checkpoint(resume)
        check_compatible(saved, resume, objective, epochs,
                         {**settings, "data_sha256": data_sha256()})
        params = _restored(params, saved.params)
        history = restore_field(resume, "history", lambda: [EpochRecord(**record)
                                                            for record in saved.history])
        restore_field(resume, "rng_state", lambda: setattr(rng.bit_generator, "state",
                                                           saved.rng_state))
        if saved.planner:
            restore_field(resume, "planner_names", lambda: planner.restore(saved.planner))
        del saved  # its parameters are copied: one copy of them from here on

    def save(epochs_done, params, note=None):
        save_checkpoint(checkpoint, Checkpoint(
            epoch=epochs_done, params=params, rng_state=rng.bit_generator.state,
            step=schedule(epochs_done), history=[asdict(r) for r in history],
            objective=objective.name, n_samples=objective.n_samples,
            settings={**settings, "data_sha256": data_sha256(), **(note or {})},
            planner=getattr(planner, "state", dict)()))

    data = objective.data
    n = objective.n_samples
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    if not objective.indices_checked:
        with phase("check indices"):
            _check_indices(loops, objective, params)
    total_updates = epochs * n
    progress, every = controls.progress, controls.checkpoint_every
    stream = _stream(objective, params, config, sched, backend_cls)
    if stream is not None:
        data = stream.data
    remove_stale_folders()  # shared memory of this user's killed runs (processes, MPI jobs)
    with backend_cls.open(n_workers, config, source) as runner, \
            _stop_after_epoch(announce=runner.reports) as stop_requested, \
            contextlib.closing(stream) if stream is not None else contextlib.nullcontext():
        with phase("share"):
            params, data = runner.share(params, data, n)
        with phase("compile"):
            _compile(runner, loops, objective, params, data, sched)
            metrics = evaluator(controls.evaluate, objective, runner)
            sampled = min(n, START_SAMPLES)
            start_data = data
            if stream is not None:
                stream.attach(data)
                start_data, sampled = stream.first_samples(sampled)
            start_value = runner.loss_sum(loops, params, start_data, sampled) / sampled
        ceiling = start_value + DIVERGENCE_GROWTH * max(abs(start_value), 1.0)
        return_freed_memory()  # what the set-up's temporaries left in the allocator
        training_starts()
        last_end = None
        for epoch in range(len(history), epochs):
            if progress is not None:
                before = epoch * n
                runner.on_progress = lambda done, before=before: progress(
                    min(before + done, total_updates), total_updates)
            step_now = schedule(epoch)
            plan, plan_seconds = None, 0.0
            if not runner.plans_itself:
                start = time.perf_counter()
                plan = planner.plan(rng, config.shuffle_block)
                plan_seconds = time.perf_counter() - start
            start = time.perf_counter()
            try:
                if stream is None:
                    updates = runner.run_epoch(loops, plan, params, data, step_now, epoch)
                else:
                    updates, streamed_objective = stream.run_epoch(runner, loops, plan, params,
                                                              step_now, epoch, n_workers)
            except WorkerLost as lost:
                if checkpoint is None:
                    raise HogwildError(f"{lost}; pass checkpoint=PATH to keep the parameters "
                                       "at the failure") from None
                save(len(history), runner.to_host(params), lost.state_note)
                raise HogwildError(f"{lost}; the parameters at the failure are in "
                                   f"{checkpoint}") from None
            end = time.perf_counter()
            seconds = end - (last_end if runner.runs_ahead and last_end is not None else start)
            last_end = end
            if not runner.all_finite(params):
                raise _diverged("parameters", epoch + 1, step_now)
            value = streamed_objective if stream is not None \
                else runner.loss_sum(loops, params, data, n) / n
            if not math.isfinite(value):
                raise _diverged("objective", epoch + 1, step_now)
            if value > ceiling:
                raise DivergenceError(
                    f"the objective grew from {start_value:.4g} to {value:.4g} in epoch "
                    f"{epoch + 1} (step {step_now:.3g}): training diverged; try a smaller step")
            reports = runner.reports
            record = EpochRecord(epoch=epoch + 1, step=runner.applied_step(step_now),
                                 seconds=seconds,
                                 updates=int(updates),
                                 updates_per_s=updates / seconds if seconds > 0 else math.inf,
                                 objective=float(value),
                                 metrics=metrics(params) if reports else {},
                                 plan_seconds=plan_seconds)
            history.append(record)
            if progress is not None and reports:
                progress((epoch + 1) * n, total_updates)
            if controls.callback is not None and reports:
                controls.callback(record)
            done = epoch + 1
            stopping = runner.stop_agreed(stop_requested.is_set())
            periodic = every is not None and (done % every == 0 or done == epochs)
            if checkpoint is not None and (periodic or stopping) and reports:
                save(done, runner.to_host(params))
            if stopping and done < epochs:
                raise Interrupted(done, checkpoint, stop_requested.signum or signal.SIGTERM)
        params = runner.export(params)
        report, replicated = runner.report(), runner.replicated()
    return FitResult(params=params, history=history, scheduler=sched.name,
                     backend=config.backend, workers=runner.worker_count(n_workers), seed=seed,
                     setup_seconds=planner.setup_seconds,
                     startup_seconds=getattr(runner, "startup_seconds", 0.0),
                     distributed=report, replication=runner.replication,
                     replicated=replicated,
                     data_bytes=sum(a.nbytes for a in objective.data)
                     + held_out_bytes(controls.evaluate),
                     params_bytes=sum(p.nbytes for p in objective.params),
                     streaming=None if stream is None else stream.report())
