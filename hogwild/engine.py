"""The engine: runs epochs of an Objective under a scheduler on a backend.

It owns *when* things happen: the step schedule, one plan per epoch, timing of
the update phase only, evaluation between epochs, the finiteness check and the
single per-epoch callback.
"""
import contextlib
import dataclasses
import functools
import math
import signal
import time
import warnings
from dataclasses import asdict
from typing import Optional

import numpy as np

from hogwild.backends import get_backend
from hogwild.backends.host import aligned_copy, is_aligned
from hogwild.backends.shared_memory import remove_stale_folders
from hogwild.checkpoint import (Checkpoint, check_compatible, data_fingerprint, load_checkpoint,
                                restore_field, save_checkpoint)
from hogwild.config import RunControls, TrainingConfig, settle
from hogwild.early_stopping import EarlyStopping
from hogwild.errors import DivergenceError, HogwildError, Interrupted, WorkerLost
from hogwild.evaluation import evaluator, held_out_bytes
from hogwild.disk_arrays import in_memory, on_disk
from hogwild.index_check import check_indices, compiling, declared_ids_hold
from hogwild.interrupts import interrupts_kept, stop_after_epoch
from hogwild.kernels.compiler import check_compiler, compile_loops
from hogwild.limits import (available_memory, check_workers, default_workers,
                            return_freed_memory, size_text)
from hogwild.objective import Objective
from hogwild.phases import epoch_ends, phase, training_starts
from hogwild.replication import GUARD_MEMORY_SHARE, GUARD_SAMPLES, Guard
from hogwild.results import EpochRecord, FitResult
from hogwild.schedulers import get_scheduler
from hogwild.steps import decay_clock, decay_holds
from hogwild.streaming import plan_stream


def _stream(objective, params, config, scheduler, backend_cls):
    """The run's hogwild.streaming.SampleStream when its samples on disk do not fit
    in config.memory beside the parameters, with a warning saying so; None when
    they fit. Without config.memory, samples on disk are copied into the run's
    memory only while they take at most IN_MEMORY_SHARE of the memory available:
    beyond, the copy would also double what the kernel's page cache holds of
    them, and they stream instead, through slots that take STREAM_SHARE of it."""
    memory = config.memory
    copy_limit = slots = None
    if memory is None:
        memory = available_memory()
        if memory is None:
            return None
        copy_limit, slots = IN_MEMORY_SHARE * memory, STREAM_SHARE * memory
    stream = plan_stream(objective.data, objective.n_samples, sum(p.nbytes for p in params),
                         memory, scheduler.kind, config.shuffle_block, backend_cls,
                         objective.sample_offsets, copy_limit, slots)
    if stream is not None:
        on_disk = sum(objective.data[i].nbytes for i in stream.streamed)
        why = f"do not fit in memory {size_text(memory)} beside the parameters" \
            if copy_limit is None or on_disk + sum(p.nbytes for p in params) > memory else \
            f"are more than {IN_MEMORY_SHARE:.0%} of the {size_text(memory)} of memory " \
            "available (give --memory to hold more)"
        warnings.warn(f"the samples ({size_text(on_disk)}) {why}: they are read from disk "
                      f"chunk by chunk, {stream.capacity:,} samples a chunk", stacklevel=4)
    return stream


# Samples on disk, with no memory given: copied into the run's memory while they take
# at most this share of the memory available, else streamed through slots of this share.
IN_MEMORY_SHARE = 0.25
STREAM_SHARE = 1 / 16


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


def _compile(runner, loops, objective, params, data, scheduler):
    """Compile (or load) the loops before the first timed epoch."""
    with compiling(objective.name, objective.fastmath):
        runner.warm_up(loops, params, data, scheduler, objective)
        runner.loss_sum(loops, params, data, 0)
        if objective.penalty is not None:
            runner.penalty_sum(objective.penalty, params, objective.data)


DIVERGENCE_GROWTH = 1e6  # an objective this many times its start's magnitude diverged
START_SAMPLES = 1 << 12  # the start's magnitude: the mean loss of the first samples (a
# pass over all of them costs half an epoch of a short run, for a bound this loose)


class _Run:
    """One fit's state between its three parts: prepare (before the backend
    starts), loop (the epochs) and finish (the FitResult)."""

    def __init__(self, objective, config, controls):
        """Prepare: the objective, the backend's and scheduler's checks, the planner,
        the compiled loops, the index check and the streaming decision."""
        self.config, self.controls, self.source = config, controls, objective
        self.backend = backend = get_backend(config.backend)
        if backend.accepts_sources and callable(objective) \
                and not isinstance(objective, Objective):
            objective = objective()
        if not isinstance(objective, Objective):
            also = " or a callable returning one" if backend.accepts_sources else ""
            raise HogwildError(f"objective must be a hogwild.Objective{also}, got "
                               f"{type(objective).__name__}")
        self.objective, self.scheduler = objective, get_scheduler(config.scheduler)
        if config.early_stopping is not None and objective.validation is None:
            raise HogwildError(f"early_stopping needs held-out samples to watch: objective "
                               f"'{objective.name}' has no validation Metric (give the "
                               "Objective validation=hogwild.Metric(...))")
        backend.check(config, self.scheduler)
        requested = backend.requested_workers(config)
        workers = check_workers(requested, config.oversubscribe or not backend.workers_share_cores)
        if requested is None and backend.workers_share_cores:
            workers = default_workers(workers, sum(a.nbytes for a in objective.data))
        self.planner = self.scheduler.prepare(objective, workers)
        self.rng = np.random.default_rng(config.seed)
        self.history = []
        self.guard = None  # replication "auto"'s, set by start
        self.params = tuple(p if objective.train_in_place and is_aligned(p) else aligned_copy(p)
                            for p in objective.params)
        self.loops = compile_loops(objective.update, objective.loss, objective.fastmath)
        self.stream = _stream(objective, self.params, config, self.scheduler, backend)
        if self.stream is None and any(on_disk(a) for a in objective.data):
            with phase("read data"):  # a file changed under the run cannot reach the loops
                data = tuple(in_memory(a) for a in objective.data)
                objective = dataclasses.replace(objective, data=data, indices_checked=(
                    objective.indices_checked and declared_ids_hold(objective, self.params,
                                                                    data)))
            self.objective = objective
        if not objective.indices_checked:
            with phase("check indices"):
                check_indices(self.loops, self.params, objective.data, objective.n_samples,
                              objective)
        if self.stream is not None and config.replication != "shared":
            if config.replication != "auto":
                self.stream.close()
                raise HogwildError(f"replication {config.replication!r} gives each worker "
                                   "copies of the samples' ids, and these samples stream "
                                   "from disk (they do not fit in memory): use replication "
                                   "'shared' or 'auto'")
            self.config = config = dataclasses.replace(config, replication="shared")
        self.data_sha256 = functools.cache(lambda: data_fingerprint(objective.data))
        remove_stale_folders()  # shared memory of this user's killed runs (processes, MPI)

    def settings(self, runner):
        """What a checkpoint records and a resumed run must repeat."""
        config, seed = self.config, self.config.seed
        return {"scheduler": self.scheduler.name, "step": config.step, "decay": config.decay,
                "step_schedule": config.step_schedule, "shuffle_block": config.shuffle_block,
                "seed": seed if seed is None or isinstance(seed, int) else repr(seed),
                "replication": config.replication, "merge_every": config.merge_every,
                **runner.checkpoint_settings(config), "data_sha256": self.data_sha256()}

    def resume(self, runner):
        """Continue the checkpointed run of controls.resume, if any: its parameters,
        history, sample order and planner state."""
        resume = self.controls.resume
        if resume is None:
            return
        saved = load_checkpoint(resume)
        check_compatible(saved, resume, self.objective, self.config.epochs,
                         self.settings(runner))
        self.params = _restored(self.params, saved.params)
        self.history = restore_field(resume, "history", lambda: [
            EpochRecord(**record) for record in saved.history])
        restore_field(resume, "rng_state", lambda: setattr(self.rng.bit_generator, "state",
                                                           saved.rng_state))
        if saved.planner:
            restore_field(resume, "planner_names", lambda: self.planner.restore(saved.planner))

    def save(self, runner, epochs_done, params, note=None):
        """Checkpoint the state after ``epochs_done`` epochs (controls.checkpoint)."""
        save_checkpoint(self.controls.checkpoint, Checkpoint(
            epoch=epochs_done, params=params, rng_state=self.rng.bit_generator.state,
            step=self.config.schedule(decay_clock(self.history)),
            history=[asdict(r) for r in self.history], objective=self.objective.name,
            n_samples=self.objective.n_samples,
            settings={**self.settings(runner), **(note or {})},
            planner=getattr(self.planner, "state", dict)()))
        runner.checkpointed(epochs_done, params)

    def start(self, runner):
        """Share the parameters and data, compile, and measure the objective at the
        start (the divergence check's reference): (params, data, metrics)."""
        n, stream = self.objective.n_samples, self.stream
        with phase("share"):
            params, data = runner.share(self.params, self.objective.data if stream is None
                                        else stream.data, n)
        with phase("compile"):
            _compile(runner, self.loops, self.objective, params, data, self.scheduler)
            metrics = evaluator(self.controls.evaluate, self.objective, runner)
            self.validate = evaluator(self.objective.validation, self.objective, runner)
            sampled, start_data = min(n, START_SAMPLES), data
            if stream is not None:
                stream.attach(data, lambda first, last: self.loops.sum_loss_checked(
                    params, data, first, last))
                start_data, sampled = stream.first_samples(sampled)
            self.start_value = self._mean_loss(runner, params, start_data, sampled)
        self.ceiling = self.start_value + DIVERGENCE_GROWTH * max(abs(self.start_value), 1.0)
        self.guard = self._guard(runner, params, data)
        return_freed_memory()  # what the set-up's temporaries left in the allocator
        return params, data, metrics

    def _guard(self, runner, params, data):
        """replication="auto"'s Guard, where auto chose copies on a backend that can
        go on shared (None elsewhere), with the objective's value at the start."""
        chosen = (runner.replicated() or {}).get("auto")
        if chosen is None or runner.replication == "shared" or self.stream is not None \
                or not runner.stops_replicating:
            return None
        samples = min(self.objective.n_samples, GUARD_SAMPLES)
        memory = available_memory()
        keeps = memory is None or sum(p.nbytes for p in params) <= GUARD_MEMORY_SHARE * memory
        return Guard(samples, self._mean_loss(runner, params, data, samples), params, keeps)

    def _run_guarded(self, runner, plan, params, data, steps, epoch):
        """run_epoch, and where the Guard finds the objective risen on copies, the
        epoch again from its start, shared: the updates."""
        guard = self.guard
        if guard is None:
            return runner.run_epoch(self.loops, plan, params, data, steps, epoch)
        guard.keep(params)
        updates = runner.run_epoch(self.loops, plan, params, data, steps, epoch)
        value = self._mean_loss(runner, params, data, guard.samples)
        if not guard.rose(value, epoch + 1):
            return updates
        runner.stop_replicating(guard.fell_back)
        self.guard = None
        if not guard.restore(params):
            return updates
        return updates + runner.run_epoch(self.loops, plan, params, data, steps, epoch)

    def loop(self, runner, stop_requested):
        """The epochs, each: plan, run, check, record, report, checkpoint; returns the
        trained parameters (where the backend keeps them)."""
        params, data, metrics = self.start(runner)
        training_starts()
        n, epochs, controls = self.objective.n_samples, self.config.epochs, self.controls
        patience, validation = self.config.early_stopping, self.objective.validation
        self.watch = None if patience is None else EarlyStopping(patience)
        if self.watch is not None and not self.history:  # the start is a candidate too
            held_out, measured, metric_seconds = self._measure(runner, params, metrics)
            self.start_record = EpochRecord(
                epoch=0, step=0.0, seconds=0.0, updates=0, updates_per_s=0.0,
                objective=self.start_value, metrics=measured, metric_seconds=metric_seconds)
            self.watch.at_start(held_out[validation.name], lambda: runner.to_host(params))
        progress, every, last_end = controls.progress, controls.checkpoint_every, None
        for epoch in range(len(self.history), epochs):
            if progress is not None:
                runner.on_progress = lambda done, before=epoch * n: progress(
                    min(before + done, epochs * n), epochs * n)
            steps = self.config.schedule.epoch_steps(decay_clock(self.history))
            updates, value, plan_seconds, start, end = self._epoch(runner, params, data, steps,
                                                                   epoch)
            seconds = end - (last_end if runner.runs_ahead and last_end is not None else start)
            last_end = end
            held_out, measured, metric_seconds = self._measure(runner, params, metrics)
            record = EpochRecord(epoch=epoch + 1, step=runner.applied_step(steps),
                                 seconds=seconds, updates=int(updates),
                                 updates_per_s=updates / seconds if seconds > 0 else math.inf,
                                 objective=float(value), metrics=measured,
                                 plan_seconds=plan_seconds, metric_seconds=metric_seconds,
                                 decay_held=self._holds_decay(value))
            self.history.append(record)
            epoch_ends()
            if progress is not None and runner.reports:
                progress((epoch + 1) * n, epochs * n)
            if controls.callback is not None and runner.reports:
                controls.callback(record)
            done = epoch + 1
            stopping = runner.stop_agreed(stop_requested.is_set())
            converged = self.watch is not None and runner.stop_agreed(self.watch.after_epoch(
                done, held_out[validation.name], lambda: runner.to_host(params)))
            periodic = every is not None and (done % every == 0 or done == epochs)
            if controls.checkpoint is not None and (periodic or stopping or converged) \
                    and runner.reports:
                self.save(runner, done, runner.to_host(params))
            if stopping and done < epochs:
                raise Interrupted(done, controls.checkpoint,
                                  stop_requested.signum or signal.SIGTERM)
            if converged:
                break
        return params

    def _holds_decay(self, value):
        """Whether this epoch, its objective ``value``, holds the step's decay (a
        saddle being left: hogwild.steps). Streamed runs measure one chunk each epoch,
        too noisy a figure to judge the descent by."""
        return self.stream is None and decay_holds(self.history, value, self.start_value)

    def _mean_loss(self, runner, params, data, samples):
        """The objective's value: the mean loss of the first ``samples`` samples, and
        the objective's penalty per sample where it has one."""
        return runner.loss_sum(self.loops, params, data, samples) / samples \
            + self._mean_penalty(runner, params)

    def _mean_penalty(self, runner, params):
        """The objective's penalty (summed over its samples) per sample; 0 without."""
        penalty = self.objective.penalty
        if penalty is None:
            return 0.0
        return runner.penalty_sum(penalty, params, self.objective.data) \
            / self.objective.n_samples

    def _measure(self, runner, params, metrics):
        """(held-out scores, the record's metrics, their seconds): the validation on
        every rank (each decides the stop alike), the test metrics where the run
        reports (or, where the reporter may change, everywhere)."""
        measuring = time.perf_counter()
        held_out = self.validate(params)
        measured = {**metrics(params), **held_out} \
            if runner.reports or runner.measures_everywhere else {}
        return held_out, measured, time.perf_counter() - measuring

    def _epoch(self, runner, params, data, steps, epoch):
        """Run one epoch and check it: (updates, objective, plan seconds, start, end)."""
        plan, plan_seconds = None, 0.0
        if not runner.plans_itself:
            start = time.perf_counter()
            plan = self.planner.plan(self.rng, self.config.shuffle_block)
            plan_seconds = time.perf_counter() - start
        start = time.perf_counter()
        try:
            if self.stream is None:
                updates = self._run_guarded(runner, plan, params, data, steps, epoch)
            else:
                updates, value = self.stream.run_epoch(runner, self.loops, plan, params, steps,
                                                       epoch, self.planner.workers)
        except WorkerLost as lost:
            checkpoint = self.controls.checkpoint
            if checkpoint is None:
                raise HogwildError(f"{lost}; pass checkpoint=PATH to keep the parameters "
                                   "at the failure") from None
            self.save(runner, len(self.history), runner.to_host(params), lost.state_note)
            raise HogwildError(f"{lost}; the parameters at the failure are in "
                               f"{checkpoint}") from None
        end = time.perf_counter()
        if not runner.all_finite(params):
            raise _diverged("parameters", epoch + 1, steps.table[0])
        n = self.objective.loss_samples or self.objective.n_samples
        if not self._measures(epoch):
            return updates, math.nan, plan_seconds, start, end
        if self.stream is None:
            value = self._mean_loss(runner, params, data, n)
        else:  # the stream measured its last chunk's mean loss
            value += self._mean_penalty(runner, params)
        if not math.isfinite(value):
            raise _diverged("objective", epoch + 1, steps.table[0])
        if value > self.ceiling:
            raise DivergenceError(
                f"the objective grew from {self.start_value:.4g} to {value:.4g} in epoch "
                f"{epoch + 1} (step {steps.table[0]:.3g}): training diverged; try a smaller "
                "step")
        return updates, value, plan_seconds, start, end

    def _measures(self, epoch):
        """Whether epoch ``epoch``'s exact objective is measured (objective_every;
        always the last epoch's)."""
        every, done = self.controls.objective_every, epoch + 1
        return done == self.config.epochs or (every is not None and done % every == 0) \
            or self.config.early_stopping is not None  # any epoch may be the one kept

    def finish(self, runner, params):
        """The FitResult (the backend still open: its report may need its workers)."""
        objective, config = self.objective, self.config
        exported = runner.export(params)
        best_epoch = None if self.watch is None else self.watch.restore(exported,
                                                                        len(self.history))
        return FitResult(
            params=exported, history=self.history, best_epoch=best_epoch,
            start=getattr(self, "start_record", None),
            scheduler=self.scheduler.name,
            backend=config.backend, workers=runner.worker_count(self.planner.workers),
            seed=config.seed, setup_seconds=self.planner.setup_seconds,
            startup_seconds=runner.startup_seconds, distributed=runner.report(),
            replication=runner.replication, replicated=runner.replicated(),
            data_bytes=sum(a.nbytes for a in objective.data)
            + held_out_bytes(self.controls.evaluate) + held_out_bytes(objective.validation),
            params_bytes=sum(p.nbytes for p in objective.params),
            streaming=None if self.stream is None else self.stream.report())


def fit(objective: Objective, config: Optional[TrainingConfig] = None,
        controls: Optional[RunControls] = None, **options) -> FitResult:
    """Train ``objective`` with lock-free parallel SGD.

    Parameters
    ----------
    objective : hogwild.Objective, or callable returning one
        What to train. Its params are copied (trained in place with its
        train_in_place). On backend "ray" a callable is called by each node to
        build its own copy (to load a file from its own disk).
    config : hogwild.TrainingConfig, optional
        What decides the result: epochs, step schedule, workers, scheduler,
        backend and its settings, replication, sample order, seed, memory
        (default: TrainingConfig()).
    controls : hogwild.RunControls, optional
        What the caller watches and keeps: evaluation, callback, progress,
        checkpoints, resume (default: RunControls()).
    **options
        Fields of either, replacing the objects' values: ``fit(objective, epochs=5)``.

    Returns
    -------
    hogwild.results.FitResult
        The trained parameters (``params``), one EpochRecord per epoch
        (``history``: step applied, seconds, updates, objective, metrics), and
        what the backend reports.

    Raises
    ------
    hogwild.errors.HogwildError
        A bad option, objective or input, named before any work (DivergenceError,
        a subclass: training diverged).
    hogwild.errors.Interrupted
        A KeyboardInterrupt: a Ctrl-C, SIGTERM or SIGHUP stopped the run after an epoch.

    Notes
    -----
    Checkpoints (hogwild.checkpoint): with ``checkpoint=PATH`` the state after every
    ``checkpoint_every`` epochs, after the last one and after a Ctrl-C is written
    there atomically; ``resume=PATH`` continues it up to ``epochs`` in total, bitwise
    as an uninterrupted run for the schedulers below. On every backend, the first
    Ctrl-C (or SIGTERM, SIGHUP) stops the fit after the epoch; a second abandons it.

    Reproducibility: with a seed, serial, blocked, colored and cyclades are bitwise
    reproducible with any number of workers; hogwild and locked with several only in
    distribution.
    """
    check_compiler()
    config, controls = settle(config, controls, **options)
    with interrupts_kept():  # a Ctrl-C while a kernel compiles is not lost
        run = _Run(objective, config, controls)
        config = run.config  # "auto" replication is "shared" for samples streamed from disk
        with run.backend.open(run.planner.workers, config, run.source) as runner, \
                stop_after_epoch(announce=runner.reports) as stop_requested, \
                contextlib.closing(run.stream) if run.stream is not None \
                else contextlib.nullcontext():
            runner.agree(config, run.objective)
            run.resume(runner)
            return run.finish(runner, run.loop(runner, stop_requested))
