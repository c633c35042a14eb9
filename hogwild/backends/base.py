"""The contract every backend keeps with the engine (hogwild.engine.fit).

The engine owns the epoch loop: the step schedule, plans, timing, the finiteness
check, metrics, callbacks, checkpoints and Ctrl-C. A backend owns *where* the
work runs and where the parameters live, behind these calls, in this order:

    Backend.check(config, scheduler)            # what it cannot run, before any work
    Backend.requested_workers(config)
    with Backend.open(workers, config, source) as runner:  # see also its class attributes
        runner.agree(config, objective)         # the processes of one run agree
        runner.checkpoint_settings(config)
        params, data = runner.share(params, data, n_samples)
        runner.warm_up(loops, params, data, scheduler, objective)  # compile, start
        per epoch: runner.run_epoch(loops, plan, params, data, steps, epoch)
                   runner.applied_step(steps)   # the step the epoch record keeps
                   runner.all_finite(params), runner.loss_sum(loops, params, data, n),
                   runner.penalty_sum(penalty, params, data)  # objectives with one
                   runner.to_host(params) (metrics, checkpoints)
        runner.export(params)  # the trained parameters, valid after close
        runner.report()        # backend-specific figures for FitResult, or None

A new backend subclasses Backend (or HostBackend when the parameters live in the
calling process) and is listed in hogwild.backends.get_backend.
"""
from abc import ABC, abstractmethod

from hogwild.backends.host import all_finite
from hogwild.errors import HogwildError


class Backend(ABC):
    """Where workers run. Class attributes declare what the engine must know."""

    name = ""
    workers_share_cores = True  # workers are CPU cores: bounded by limits.check_workers
    schedulers = None           # the schedulers it runs (None: all of them)
    replication_modes = ("shared",)  # the TrainingConfig.replication modes it runs
    replication = "shared"  # the mode this run uses (an instance may say otherwise)
    stops_replicating = False  # True: stop_replicating(why) makes a replicated run go on
    # shared from the next epoch (replication "auto"'s Guard)
    plans_itself = False        # True: it draws its own plans (run_epoch gets plan=None)
    runs_ahead = False          # True: workers keep running between run_epoch calls, so an
    # epoch's time is the wall time since the previous epoch ended
    on_progress = None          # set by the engine: on_progress(updates done this epoch)
    reports = True              # this process reports: progress, callbacks, metrics and
    # checkpoints (False on MPI ranks other than 0, which train alongside)
    measures_everywhere = False  # True: every process measures the test metrics (an MPI
    # rank may become the chief when ranks are lost, and report the epochs before)
    streams_samples = False     # True: run_epoch and loss_sum take any data tuple the
    # engine gives (hogwild.streaming's slots, refilled between calls)

    accepts_sources = False     # True: the objective may be a callable that each worker
    # calls to build it (to load its data itself)
    runs_warp_updates = False   # True: it runs an objective's warp_update (CUDA warps)
    half_precision = False      # True: it compiles float16 parameters

    startup_seconds = 0.0       # starting its workers (processes, MPI's link probe, Ray's
    # actors), set by warm_up: FitResult.startup_seconds

    @classmethod
    def check(cls, config, scheduler):
        """A HogwildError naming what this backend cannot run of ``config`` with
        ``scheduler`` (a hogwild.schedulers scheduler), before any work. Classmethods
        only read their arguments: nothing starts before open."""
        if cls.schedulers is not None and scheduler.name not in cls.schedulers:
            raise HogwildError(f"backend {cls.name!r} runs the schedulers "
                               f"{', '.join(cls.schedulers)}; got {scheduler.name!r}")
        if config.replication not in cls.replication_modes:
            raise HogwildError(f"backend {cls.name!r} runs replication "
                               f"{', '.join(map(repr, cls.replication_modes))}; got "
                               f"{config.replication!r}")

    @classmethod
    def requested_workers(cls, config):
        """The workers a TrainingConfig asks for (None: every usable core)."""
        return config.workers

    @classmethod
    def open(cls, workers, config, source):
        """The backend for a run, started: ``workers`` as the scheduler planned them,
        ``config`` the run's TrainingConfig, ``source`` what the caller passed as the
        objective."""
        return cls(workers)

    def agree(self, config, objective):
        """Check, before any other collective, that every process of one run (MPI
        ranks, which start separately) was given the same settings and objective
        shapes; nothing to check for a run that one process starts."""

    def checkpoint_settings(self, config):
        """Settings a checkpoint records, and a resumed run must repeat."""
        return {}

    def checkpointed(self, epoch, params):
        """A checkpoint of ``params`` after ``epoch`` epochs was written: a backend
        that can restore part of its state from it keeps what it needs (Ray's server
        shards)."""

    def reload(self):
        """The parameters shared() returned were changed from outside the workers
        (a reconcile between MPI ranks): workers that keep copies take them again."""

    def worker_count(self, planned):
        """Workers in all (FitResult.workers) for ``planned`` per plan."""
        return planned

    @abstractmethod
    def share(self, params, data, n_samples):
        """(params, data) as the workers will use them (copied to shared memory or a
        device where they need to be)."""

    @abstractmethod
    def warm_up(self, loops, params, data, scheduler, objective):
        """Compile (or load) the loops the run will use, before the first timed epoch."""

    @abstractmethod
    def run_epoch(self, loops, plan, params, data, steps, epoch):
        """Run one epoch's EpochPlan with the epoch's hogwild.steps.EpochSteps;
        returns the number of updates."""

    def applied_step(self, steps):
        """The mean step the last run_epoch applied, ``steps`` being the schedule's
        EpochSteps for it: what the epoch record keeps. The schedule's mean unless
        the backend changes it (MPI's linear scaling rule) or its workers compute
        it (Ray's nodes report theirs)."""
        return steps.mean

    @abstractmethod
    def loss_sum(self, loops, params, data, n):
        """The sum of the losses of samples 0..n-1 (``loops.sum_loss``'s value)."""

    def penalty_sum(self, penalty, params, data):
        """An objective's penalty at the parameters (its sum over the samples:
        hogwild.Objective's ``penalty``), computed on the host."""
        return float(penalty(self.to_host(params), data))

    @abstractmethod
    def all_finite(self, params):
        """Whether every parameter is finite."""

    @abstractmethod
    def place(self, arrays):
        """Arrays (a metric's data) where loss_sum can read them."""

    @abstractmethod
    def to_host(self, params):
        """The parameters as arrays this process can read."""

    @abstractmethod
    def export(self, params):
        """The trained parameters, valid after close."""

    def report(self):
        """Figures of the run for FitResult.distributed (None: nothing to add)."""
        return None

    def stop_agreed(self, requested):
        """Whether the run stops after this epoch, ``requested`` being this process's
        wish (Ctrl-C, SIGTERM): the processes of one run must agree."""
        return requested

    def replicated(self):
        """What the workers had their own copies of, for FitResult.replicated (None:
        nothing, every parameter shared)."""
        return None

    @abstractmethod
    def close(self):
        """Stop the workers and free what they held; safe to call twice."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class HostBackend(Backend):
    """A backend whose parameters the calling process can read directly."""

    def place(self, arrays):
        return arrays

    def to_host(self, params):
        return params

    def all_finite(self, params):
        return all_finite(params)

    def loss_sum(self, loops, params, data, n):
        """On this thread, chunk by chunk (see loss_chunks)."""
        (chunks,) = loss_chunks(n)
        return ordered_total([loops.sum_loss(params, data, lo, hi) for lo, hi in chunks])


LOSS_CHUNK = 4_096  # samples per partial sum of a loss (two workers share a pass over
# 8,193 samples or more)


def loss_chunks(n, parts=1):
    """The ranges (lo, hi) whose partial sums make up a loss sum, cut into ``parts``
    contiguous lists of about as many samples each. The ranges are fixed whatever
    the backend or worker count, so the sum rounds the same on every CPU backend."""
    chunks = [(lo, min(lo + LOSS_CHUNK, n)) for lo in range(0, n, LOSS_CHUNK)]
    return [[c for c in chunks if (c[0] + c[1]) * parts // (2 * n) == part]
            for part in range(parts)]


def ordered_total(partial_sums):
    """The partial sums added left to right (a float sum's last bits depend on the
    order; not sum(), which compensates its rounding from Python 3.12 on)."""
    total = 0.0
    for value in partial_sums:
        total += value
    return total
