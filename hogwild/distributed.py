"""Stale synchronous parallel (SSP) training over several nodes, on Ray.

Hogwild! inside each node, a parameter server between nodes, and a bound on how
far the fastest node may run ahead of the slowest (Ho et al., "More Effective
Distributed ML via a Stale Synchronous Parallel Parameter Server", NIPS 2013;
Li et al., "Scaling Distributed Machine Learning with the Parameter Server",
OSDI 2014):

- Node actors each own a contiguous share of the samples and a local replica of
  the parameters, and run the local engine (the threads backend: hogwild, locked
  or serial) on it.
- The parameters, flattened into one vector, are split by key range across
  ``shards`` parameter-server actors.
- A node's clock: ``clock_every`` local updates, then push the deltas of the
  coordinates that changed (indices and values, never the dense vector), tick,
  wait until the slowest node is at most ``staleness`` clocks behind, and pull
  the coordinates that changed on the server since its last pull. After the pull
  the replica equals the server's state. (Where most of a shard's range changed,
  a push or pull sends the whole range's values instead: never more bytes than
  a dense exchange.)
- ``staleness=0`` is bulk synchronous: the server applies a clock's pushes in node
  order once all have arrived, so a run with a serial local engine is
  deterministic. ``staleness=None`` is fully asynchronous (Downpour-like).

Messages between actors carry numpy arrays and numbers only. The objective's
Python functions travel once, from the driver to the node actors, when they start.
"""
import functools
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from hogwild.backends.host import HostParameters, aligned_copy
from hogwild.backends.threads import ThreadsBackend
from hogwild.checkpoint import (Checkpoint, check_compatible, data_fingerprint, load_checkpoint,
                                restore_field, save_checkpoint)
from hogwild.evaluation import evaluator
from hogwild.limits import MAX_EPOCHS, check_workers
from hogwild.results import EpochRecord, FitResult
from hogwild.errors import HogwildError, check_int, choose
from hogwild.kernels.compiler import compile_loops
from hogwild.objective import Objective
from hogwild.schedulers import EpochPlan, even_spans, get_scheduler, shuffled_runs
from hogwild.steps import StepSchedule

LOCAL_SCHEDULERS = ("hogwild", "locked", "serial")
ON_FAILURE = ("restart", "stop")


def import_ray():
    try:
        import ray
    except ImportError:
        raise HogwildError("backend 'ray' needs Ray: pip install 'hogwild[distributed]'") \
            from None
    return ray


@dataclass(frozen=True)
class SSPSettings:
    """How a run is spread over nodes (see the module docstring)."""

    nodes: int = 2
    staleness: Optional[int] = 0        # None: no bound (asynchronous)
    clock_every: Optional[int] = None   # local updates per clock; None: a tenth of an
    # epoch of the largest node
    workers_per_node: int = 1
    local_scheduler: str = "hogwild"
    shards: Optional[int] = None        # parameter-server actors; None: one per node
    address: Optional[str] = None       # an existing Ray cluster; None: start a local one
    on_failure: str = "restart"         # a dead node actor: "restart" it or "stop" the run
    slowdown: dict = field(default_factory=dict)  # node -> factor >= 1: a straggler, whose
    # clocks (updates and messages, not waiting) take that many times longer
    crash_at: dict = field(default_factory=dict)  # node -> clock (fault injection)

    def checked(self):
        """These settings validated (staleness inf becomes None), or a HogwildError
        naming the field."""
        check_int("nodes", self.nodes, 1)
        if isinstance(self.staleness, float) and math.isinf(self.staleness) \
                and self.staleness > 0:
            return replace(self, staleness=None).checked()
        if self.staleness is not None:
            check_int("staleness", self.staleness, 0)
        if self.clock_every is not None:
            check_int("clock_every", self.clock_every, 1)
        check_workers(self.workers_per_node)
        choose(LOCAL_SCHEDULERS, self.local_scheduler, "local scheduler")
        if self.shards is not None:
            check_int("shards", self.shards, 1)
        choose(ON_FAILURE, self.on_failure, "on_failure")
        for node, factor in self.slowdown.items():
            if not (0 <= node < self.nodes and factor >= 1):
                raise HogwildError(f"slowdown: node {node} factor {factor}; nodes are "
                                   f"0..{self.nodes - 1} and factors >= 1")
        for node, clock in self.crash_at.items():
            if not (0 <= node < self.nodes and isinstance(clock, int) and clock >= 1):
                raise HogwildError(f"crash_at: node {node} clock {clock}; nodes are "
                                   f"0..{self.nodes - 1} and clocks >= 1")
        return self


class FlatLayout:
    """The objective's parameter arrays as one vector (views into it, so a node's
    engine updates the vector in place) cut into key ranges for the server."""

    def __init__(self, params):
        dtypes = sorted({str(np.asarray(p).dtype) for p in params})
        if len(dtypes) != 1:
            raise HogwildError(f"backend 'ray' needs parameter arrays of one dtype, got "
                               f"{', '.join(dtypes)}")
        self.dtype = np.dtype(dtypes[0])
        self.shapes = [np.shape(p) for p in params]
        sizes = [int(np.size(p)) for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])

    def flatten(self, params):
        return np.concatenate([np.asarray(p, self.dtype).ravel() for p in params])

    def views(self, flat):
        return tuple(flat[a:b].reshape(shape) for a, b, shape in
                     zip(self.offsets[:-1], self.offsets[1:], self.shapes))

    def bounds(self, shards):
        return np.linspace(0, self.size, shards + 1).round().astype(np.int64)


def run_seed(seed):
    """The integer that seeds every node's sample order (from an int, None or a
    SeedSequence)."""
    sequence = seed if isinstance(seed, np.random.SeedSequence) \
        else np.random.SeedSequence(seed)
    return int(sequence.generate_state(1)[0])


def node_samples(n_samples, nodes, node):
    """The contiguous share (first, last) of the samples that ``node`` owns."""
    first, last = even_spans(n_samples, nodes)[node]
    return int(first), int(last)


def clocks_per_epoch(n_samples, nodes, clock_every):
    """Every node runs the same number of clocks per epoch (the largest share's)."""
    largest = max(last - first for first, last in even_spans(n_samples, nodes))
    every = clock_every if clock_every is not None else max(1, largest // 10)
    return max(1, -(-largest // every))


def clock_runs(n_samples, nodes, node, clocks, epoch, seed, run_length):
    """The runs (sample starts, shifted into the node's share) of each clock of an
    epoch on ``node``: its share's runs in a random order for (seed, node, epoch),
    cut into ``clocks`` nearly equal pieces. A restarted node recomputes them."""
    first, last = node_samples(n_samples, nodes, node)
    rng = np.random.default_rng([seed, node, epoch])
    runs = shuffled_runs(last - first, run_length, rng) + first
    return [runs[a:b] for a, b in even_spans(runs.size, clocks)], last


# --- actors (made Ray actors by ray.remote in _actor_classes) ----------------------

class ParameterShard:
    """One key range of the flat parameter vector. Every element carries the
    version of the last push that changed it, so a pull returns only what changed
    since the puller's last pull. Pushes are idempotent per (node, clock): a
    restarted node that redoes a clock cannot apply it twice."""

    def __init__(self, values, nodes, ordered, start_clock):
        self.values = np.array(values)
        self.stamps = np.zeros(self.values.size, np.int64)
        self.version = 0
        self.nodes = nodes
        self.ordered = ordered
        self.pending = {}  # ordered mode: clock -> {node: (indices, deltas)}
        self.last_clock = [start_clock] * nodes

    def push(self, node, clock, indices, deltas):
        """Add a node's deltas: at ``indices``, or, with indices None, the whole
        range's (a dense push, cheaper when most coordinates changed)."""
        if clock <= self.last_clock[node]:
            return
        self.last_clock[node] = clock
        if indices is None:
            indices = np.flatnonzero(deltas)
            deltas = deltas[indices]
        if not self.ordered:
            self._apply(indices, deltas)
            return
        waiting = self.pending.setdefault(clock, {})
        waiting[node] = (indices, deltas)
        if len(waiting) == self.nodes:
            for sender in sorted(waiting):
                self._apply(*waiting[sender])
            del self.pending[clock]

    def _apply(self, indices, deltas):
        self.version += 1
        self.values[indices] += deltas
        self.stamps[indices] = self.version

    def pull(self, since):
        """(version, indices, values) of what changed after version ``since``;
        indices None (all values) when that is most of the range."""
        changed = np.flatnonzero(self.stamps > since)
        if 2 * changed.size >= self.values.size:
            return self.version, None, self.values
        return self.version, changed.astype(np.int32), self.values[changed]

    def state(self):
        return self.values


class ClockTable:
    """Every node's clock; holds a node back until the slowest is within the
    staleness bound, and records the staleness and waiting it observed. Nodes
    also report their share's loss after each epoch here. (An asyncio actor: many
    nodes wait on it at once.)"""

    def __init__(self, nodes, start_clock):
        import asyncio

        self.clocks = [start_clock] * nodes
        self.changed = asyncio.Condition()
        self.losses = {}  # epoch -> {node: loss sum over its share}
        self.max_staleness = 0
        self.wait_seconds = [0.0] * nodes

    async def tick(self, node, clock):
        async with self.changed:
            self.clocks[node] = max(self.clocks[node], clock)
            self.changed.notify_all()

    async def wait(self, node, clock, staleness):
        start = time.perf_counter()
        async with self.changed:
            if staleness is not None:
                await self.changed.wait_for(lambda: min(self.clocks) >= clock - staleness)
            observed = clock - min(self.clocks)
        self.max_staleness = max(self.max_staleness, observed)
        self.wait_seconds[node] += time.perf_counter() - start
        return observed

    async def report(self, node, epoch, loss_sum):
        async with self.changed:
            self.losses.setdefault(epoch, {})[node] = loss_sum
            self.changed.notify_all()

    async def epoch_losses(self, epoch, nodes):
        async with self.changed:
            await self.changed.wait_for(lambda: len(self.losses.get(epoch, ())) == nodes)
            return dict(self.losses[epoch])

    def clock_of(self, node):
        return self.clocks[node]

    def summary(self):
        return {"clocks": list(self.clocks), "max_staleness": self.max_staleness,
                "wait_seconds": list(self.wait_seconds)}


class NodeWorker:
    """One node: its share of the samples, a replica, the local engine."""

    def __init__(self, node, nodes, source, settings, run, shards, bounds, clock_table):
        objective = source() if callable(source) else source
        self.node, self.nodes, self.settings, self.run_settings = node, nodes, settings, run
        self.shards, self.bounds, self.clock_table = shards, bounds, clock_table
        self.n = objective.n_samples
        self.first, self.last = node_samples(self.n, nodes, node)
        self.layout = FlatLayout(objective.params)
        self.flat = aligned_copy(np.zeros(self.layout.size, self.layout.dtype))
        self.params = self.layout.views(self.flat)
        self.base = np.empty_like(self.flat)
        self.seen = [-1] * len(shards)
        # Arrays from Ray's object store are read-only, and numba's kernels on
        # read-only arrays ran 2.7x slower here (matrix completion): own a copy.
        self.data = tuple(np.array(a) if isinstance(a, np.ndarray) and not a.flags.writeable
                          else a for a in objective.data)
        self.loops = compile_loops(objective.update, objective.loss, objective.fastmath)
        workers = 1 if settings.local_scheduler == "serial" else settings.workers_per_node
        self.runner = ThreadsBackend(workers)
        self.runner.warm_up(self.loops, self.params, self.data,
                            get_scheduler(settings.local_scheduler))
        self.loops.sum_loss(self.params, self.data, 0, 0)
        self.clocks = clocks_per_epoch(self.n, nodes, settings.clock_every)
        self.traffic = {"pushed_bytes": 0, "pulled_bytes": 0, "dense_push_bytes": 0,
                        "pushes": 0, "changed": 0, "updates": 0, "busy_seconds": 0.0,
                        "push_seconds": 0.0, "pull_seconds": 0.0}

    def ready(self):
        """Returns once the actor is built: data loaded, kernels compiled."""
        return True

    def run(self, start_clock, crash_at=None):
        """Clocks start_clock+1 .. the run's last; returns this node's traffic."""
        ray = import_ray()
        run, settings = self.run_settings, self.settings
        schedule = StepSchedule(run["step_schedule"], run["step"], run["decay"])
        self._pull()
        pieces_of = {}  # this epoch's runs per clock, drawn once per epoch
        for clock in range(start_clock, run["epochs"] * self.clocks):
            epoch, part = divmod(clock, self.clocks)
            if epoch not in pieces_of:
                pieces_of = {epoch: clock_runs(self.n, self.nodes, self.node, self.clocks,
                                               epoch, run["seed"], run["run_length"])}
            pieces, limit = pieces_of[epoch]
            runs = pieces[part]
            phase = tuple(np.array([(lo, hi, limit)], np.int64)
                          for lo, hi in even_spans(runs.size, self.runner.workers))
            plan = EpochPlan(runs, run["run_length"], (phase,),
                             settings.local_scheduler == "locked")
            start = time.perf_counter()
            self.traffic["updates"] += int(self.runner.run_epoch(
                self.loops, plan, self.params, self.data, schedule(epoch), epoch))
            self.traffic["busy_seconds"] += time.perf_counter() - start
            if crash_at is not None and clock + 1 == crash_at:
                os._exit(1)  # fault injection: die as a killed node would
            pushing = time.perf_counter()
            self._push(clock + 1)
            ray.get(self.clock_table.tick.remote(self.node, clock + 1))
            waiting = time.perf_counter()
            ray.get(self.clock_table.wait.remote(self.node, clock + 1, settings.staleness))
            pulling = time.perf_counter()
            self._pull()
            waited = pulling - waiting
            self.traffic["push_seconds"] += waiting - pushing
            self.traffic["pull_seconds"] += time.perf_counter() - pulling
            factor = settings.slowdown.get(self.node, 1.0)
            if factor > 1:  # a straggler: each clock's work and messages take longer
                time.sleep((factor - 1) * (time.perf_counter() - start - waited))
            if part == self.clocks - 1:
                loss = self.loops.sum_loss(self.params, self.data, self.first, self.last)
                ray.get(self.clock_table.report.remote(self.node, epoch, loss))
        self.runner.close()
        return self.traffic

    def _push(self, clock):
        """Send each shard the deltas of its coordinates that changed locally."""
        ray = import_ray()
        changed = np.flatnonzero(self.flat != self.base)
        deltas = self.flat[changed] - self.base[changed]
        cuts = np.searchsorted(changed, self.bounds)
        replies = []
        for k, shard in enumerate(self.shards):
            lo, hi = self.bounds[k], self.bounds[k + 1]
            if 2 * (cuts[k + 1] - cuts[k]) >= hi - lo:  # most changed: send them all
                indices, values = None, self.flat[lo:hi] - self.base[lo:hi]
            else:
                indices = (changed[cuts[k]:cuts[k + 1]] - lo).astype(np.int32)
                values = deltas[cuts[k]:cuts[k + 1]]
                self.traffic["pushed_bytes"] += indices.nbytes
            self.traffic["pushed_bytes"] += values.nbytes
            replies.append(shard.push.remote(self.node, clock, indices, values))
        ray.get(replies)
        self.traffic["dense_push_bytes"] += self.flat.nbytes
        self.traffic["pushes"] += 1
        self.traffic["changed"] += changed.size

    def _pull(self):
        """Bring every coordinate that changed on the server since the last pull."""
        ray = import_ray()
        replies = ray.get([shard.pull.remote(self.seen[k])
                           for k, shard in enumerate(self.shards)])
        for k, (version, indices, values) in enumerate(replies):
            if indices is None:
                self.flat[self.bounds[k]:self.bounds[k + 1]] = values
            else:
                self.flat[self.bounds[k] + indices] = values
                self.traffic["pulled_bytes"] += indices.nbytes
            self.traffic["pulled_bytes"] += values.nbytes
            self.seen[k] = version
        self.base[:] = self.flat


_ACTORS = {}


def _actor_classes():
    """The Ray actor classes (made once per process, after Ray is imported)."""
    ray = import_ray()
    if not _ACTORS:
        _ACTORS.update(shard=ray.remote(num_cpus=0)(ParameterShard),
                       clock=ray.remote(num_cpus=0)(ClockTable),
                       node=ray.remote(NodeWorker))
    return _ACTORS


# --- driver ------------------------------------------------------------------------

def fit_ssp(objective, settings: SSPSettings, *, epochs=10, step=0.1, decay=1.0,
            step_schedule="geometric", seed=None, shuffle_block=1,
            evaluate: Optional[Callable] = None, callback: Optional[Callable] = None,
            progress: Optional[Callable] = None, checkpoint=None, checkpoint_every=1,
            resume=None) -> FitResult:
    """Train across ``settings.nodes`` node actors with a sharded parameter server.

    ``objective``: a hogwild.Objective (shipped once through Ray's object store) or
    a callable returning one, which each node calls itself (e.g. to load a file on
    its own machine). Each epoch's record has the mean loss over all samples, each
    node's share evaluated on its replica just after its last pull of the epoch
    (with staleness 0 all replicas are then equal), and the wall seconds of the
    epoch. ``result.distributed`` has the staleness observed, waiting, traffic and
    restarts.
    """
    ray = import_ray()
    if not isinstance(settings, SSPSettings):
        raise HogwildError(f"settings must be a hogwild.distributed.SSPSettings, got "
                           f"{type(settings).__name__}")
    settings = settings.checked()
    check_int("epochs", epochs, 1, MAX_EPOCHS)
    StepSchedule(step_schedule, step, decay)
    local = objective if isinstance(objective, Objective) else objective()
    if not isinstance(local, Objective):
        raise HogwildError(f"objective must be a hogwild.Objective or a callable returning "
                           f"one, got {type(local).__name__}")
    if settings.nodes > local.n_samples:
        raise HogwildError(f"{settings.nodes} nodes for {local.n_samples} samples: at most "
                           "one node per sample")
    started_ray = False
    if not ray.is_initialized():
        if settings.address:
            _join_cluster(ray, settings.address)
        else:  # a local instance with room for every node actor
            start_local_ray(ray, max(os.cpu_count() or 1,
                                     settings.nodes * settings.workers_per_node))
        started_ray = True
    try:
        return _drive(ray, objective, local, settings, epochs, step, decay, step_schedule,
                      seed, shuffle_block, evaluate, callback, progress, checkpoint,
                      checkpoint_every, resume)
    finally:
        if started_ray:
            ray.shutdown()


def start_local_ray(ray, num_cpus):
    """A new Ray instance of this machine alone: every service bound to the
    loopback interface, never RAY_ADDRESS's or an already running cluster
    (address="local"), its files created private (umask 077: the token file
    ~/.ray/auth_token grants access to the instance)."""
    from ray._private import ray_constants

    loopback_only = ray_constants.ENABLE_RAY_CLUSTER  # Ray's own switch, off on macOS
    ray_constants.ENABLE_RAY_CLUSTER = False  # and Windows: services on 127.0.0.1
    umask = os.umask(0o077)
    try:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                 log_to_driver=False)
    finally:
        os.umask(umask)
        ray_constants.ENABLE_RAY_CLUSTER = loopback_only
    _make_private(ray_token_path())


def ray_token_path():
    """Where Ray keeps its authentication token unless told otherwise."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


def _make_private(path):
    """Mode 0600 for a file of ours that grants access (Ray writes it 0644)."""
    try:
        if path.is_file() and path.stat().st_uid == os.getuid():
            path.chmod(0o600)
    except OSError:
        pass


def _join_cluster(ray, address):
    """Join the cluster at ``address`` (asked for explicitly), with Ray's token
    authentication: a cluster without it runs anyone's code."""
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "disabled" or not (os.environ.get("RAY_AUTH_TOKEN")
                                  or ray_token_path().is_file()):
        raise HogwildError(f"joining the Ray cluster at {address} needs Ray's token "
                           "authentication: set RAY_AUTH_MODE=token and give the cluster's "
                           "token in RAY_AUTH_TOKEN or ~/.ray/auth_token (see the README)")
    os.environ["RAY_AUTH_MODE"] = "token"
    ray.init(address=address, include_dashboard=False, log_to_driver=False)


def _by_value(ray, *functions):
    """Send the objective's own code with it: a user's module (a test file, a
    script's sibling) need not be importable on the nodes. The library's modules
    and __main__ (which cloudpickle sends by value anyway) are left alone."""
    for function in functions:
        name = getattr(function, "__module__", None) or "__main__"
        if name != "__main__" and name.split(".")[0] != "hogwild" and name in sys.modules:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])


def _drive(ray, source, local, settings, epochs, step, decay, step_schedule, seed,
           shuffle_block, evaluate, callback, progress, checkpoint, checkpoint_every, resume):
    actors = _actor_classes()
    nodes = settings.nodes
    layout = FlatLayout(local.params)
    history = []
    params = local.params
    fit_settings = {"backend": "ray", "scheduler": settings.local_scheduler, "step": step,
                    "decay": decay, "step_schedule": step_schedule, "seed": seed if seed is None
                    or isinstance(seed, int) else repr(seed), "nodes": nodes,
                    "staleness": settings.staleness, "clock_every": settings.clock_every}
    data_sha256 = functools.cache(lambda: data_fingerprint(local.data))  # once, if needed
    if resume is not None:
        saved = load_checkpoint(resume)
        check_compatible(saved, resume, local, epochs,
                         {**fit_settings, "data_sha256": data_sha256()})
        params = saved.params
        history = restore_field(resume, "history", lambda: [EpochRecord(**record)
                                                            for record in saved.history])
    clocks = clocks_per_epoch(local.n_samples, nodes, settings.clock_every)
    start_clock = len(history) * clocks
    flat = layout.flatten(params)
    bounds = layout.bounds(settings.shards or nodes)
    shards = [actors["shard"].remote(flat[a:b], nodes, settings.staleness == 0, start_clock)
              for a, b in zip(bounds[:-1], bounds[1:])]
    clock_table = actors["clock"].remote(nodes, start_clock)
    _by_value(ray, local.update, local.loss)
    shipped = ray.put(source) if isinstance(source, Objective) else source
    run = {"epochs": epochs, "step": step, "decay": decay, "step_schedule": step_schedule,
           "seed": run_seed(seed), "run_length": shuffle_block}
    schedule = StepSchedule(step_schedule, step, decay)
    metrics = evaluator(evaluate, local, HostParameters())
    workers, finished, restarts = {}, {}, []

    def new_node(node):
        return actors["node"].options(num_cpus=settings.workers_per_node).remote(
            node, nodes, shipped, settings, run, shards, bounds, clock_table)

    def server_state():
        return layout.views(np.concatenate(ray.get([s.state.remote() for s in shards])))

    def save(epochs_done, note=None):
        """The server's state, in hogwild.fit's checkpoint format (the sample orders
        depend on the seed and epoch alone, so the generator state is a placeholder)."""
        save_checkpoint(checkpoint, Checkpoint(
            epoch=epochs_done, params=tuple(np.array(p) for p in server_state()),
            rng_state=np.random.default_rng(0).bit_generator.state,
            step=schedule(epochs_done), history=[asdict(r) for r in history],
            objective=local.name, n_samples=local.n_samples,
            settings={**fit_settings, "data_sha256": data_sha256(), **(note or {})}))

    try:
        began = time.perf_counter()
        built = [new_node(node) for node in range(nodes)]
        ray.get([worker.ready.remote() for worker in built])  # timed epochs start here
        for node, worker in enumerate(built):
            workers[node] = worker, worker.run.remote(start_clock, settings.crash_at.get(node))
        wall = time.perf_counter()
        startup = wall - began
        for epoch in range(len(history), epochs):
            waiting = clock_table.epoch_losses.remote(epoch, nodes)
            while True:
                running = {ref: node for node, (_, ref) in workers.items()
                           if node not in finished}
                ready, _ = ray.wait([waiting, *running], num_returns=1)
                if ready[0] == waiting:
                    break
                node = running[ready[0]]
                try:
                    finished[node] = ray.get(ready[0])
                except ray.exceptions.RayActorError:
                    clock = ray.get(clock_table.clock_of.remote(node))
                    if settings.on_failure == "stop":
                        kept = "pass checkpoint=PATH to keep the server's state"
                        if checkpoint is not None:
                            save(len(history), {"stopped_at_clock": clock})
                            kept = f"the server's state is in {checkpoint}"
                        raise HogwildError(
                            f"node {node} died at clock {clock} (epoch {epoch + 1}); the run "
                            f"was stopped (on_failure='stop'); {kept}") from None
                    restarts.append({"node": node, "clock": clock})
                    worker = new_node(node)
                    workers[node] = worker, worker.run.remote(clock)
            losses = ray.get(waiting)
            now = time.perf_counter()
            # in node order, not arrival order: a float sum's last bits depend on it
            value = float(sum(losses[node] for node in sorted(losses)) / local.n_samples)
            if not math.isfinite(value):
                raise HogwildError(f"the objective diverged to {value} in epoch {epoch + 1} "
                                   f"with step {schedule(epoch):g}; use a smaller step")
            record = EpochRecord(epoch=epoch + 1, step=schedule(epoch), seconds=now - wall,
                                 updates=local.n_samples,
                                 updates_per_s=local.n_samples / max(now - wall, 1e-12),
                                 objective=value,
                                 metrics=metrics(server_state()))
            wall = now
            history.append(record)
            done = epoch + 1
            if checkpoint is not None and checkpoint_every is not None and (
                    done % checkpoint_every == 0 or done == epochs):
                save(done)
            if progress is not None:
                progress(done * local.n_samples, epochs * local.n_samples)
            if callback is not None:
                callback(record)
        traffic = [finished[node] if node in finished else ray.get(ref)
                   for node, (_, ref) in sorted(workers.items())]
        summary = ray.get(clock_table.summary.remote())
        params = tuple(np.array(p) for p in server_state())
    finally:
        for actor in [worker for worker, _ in workers.values()] + shards + [clock_table]:
            ray.kill(actor)
    return FitResult(
        params=params, history=history, scheduler=settings.local_scheduler, backend="ray",
        workers=nodes * settings.workers_per_node, seed=seed, startup_seconds=startup,
        distributed={
            "nodes": nodes, "staleness": settings.staleness, "shards": len(shards),
            "clocks_per_epoch": clocks,
            "clock_every": -(-max(b - a for a, b in even_spans(local.n_samples, nodes))
                             // clocks),
            "max_staleness": summary["max_staleness"],
            "wait_seconds": summary["wait_seconds"], "restarts": restarts,
            "per_node": traffic,
            **{key: sum(t[key] for t in traffic) for key in (
                "pushed_bytes", "pulled_bytes", "dense_push_bytes", "pushes", "changed",
                "updates")}})
