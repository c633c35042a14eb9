"""backend="ray": stale synchronous parallel (SSP) training over several nodes.

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
- A push's staleness tau is the number of other nodes' pushes the shard applied
  since the pushing node's last pull. ``staleness_aware=True`` divides the push's
  deltas by tau where tau > 1, i.e. the step of stale updates (Zhang, Gupta, Lian
  and Liu, "Staleness-aware Async-SGD for Distributed Deep Learning", IJCAI 2016);
  a straggler's pushes are the stalest.

Messages between actors carry numpy arrays and numbers only. The objective's
Python functions travel once, from the driver to the node actors, when they start.

The driver runs hogwild.fit's epoch loop like every backend: RayBackend's epoch
waits for the nodes' epoch (the nodes run ahead within the staleness bound), its
loss sum adds the nodes' losses, and its host copy of the parameters is the
server's state.
"""
import atexit
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import numpy as np

from hogwild.backends.base import HostBackend
from hogwild.backends.host import aligned_copy
from hogwild.backends.sharding import (FlatLayout, largest_share, node_samples, piece_plans,
                                      pieces_per_epoch, run_seed)
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import HogwildError, WorkerLost, check_int, choose
from hogwild.kernels.compiler import compile_loops
from hogwild.limits import check_workers
from hogwild.schedulers import get_scheduler

LOCAL_SCHEDULERS = ("hogwild", "locked", "serial")
ON_FAILURE = ("restart", "stop")
MAX_NODES = 4096  # node actors of a cluster; a local instance is bounded by its cores


def import_ray():
    try:
        import ray
    except ImportError:
        raise HogwildError("backend 'ray' needs Ray: pip install 'hogwild[distributed]'") \
            from None
    return ray


@dataclass(frozen=True)
class SSPSettings:
    """How a run is spread over nodes (see the module docstring). The scheduler and
    the workers of each node are the run's (hogwild.TrainingConfig)."""

    nodes: int = 2
    staleness: Optional[int] = 0        # None: no bound (asynchronous)
    clock_every: Optional[int] = None   # local updates per clock; None: a tenth of an
    # epoch of the largest node
    shards: Optional[int] = None        # parameter-server actors; None: one per node
    address: Optional[str] = None       # an existing Ray cluster; None: start a local one
    on_failure: str = "restart"         # a dead node actor: "restart" it or "stop" the run
    slowdown: dict = field(default_factory=dict)  # node -> factor >= 1: a straggler, whose
    # clocks (updates and messages, not waiting) take that many times longer
    crash_at: dict = field(default_factory=dict)  # node -> clock (fault injection)
    staleness_aware: bool = False       # divide a push's deltas by its staleness

    def checked(self):
        """These settings validated (staleness inf becomes None), or a HogwildError
        naming the field."""
        check_int("nodes", self.nodes, 1, MAX_NODES)
        if isinstance(self.staleness, float) and math.isinf(self.staleness) \
                and self.staleness > 0:
            return replace(self, staleness=None).checked()
        if self.staleness is not None:
            check_int("staleness", self.staleness, 0)
        if self.clock_every is not None:
            check_int("clock_every", self.clock_every, 1)
        if self.shards is not None:
            check_int("shards", self.shards, 1)
        choose(ON_FAILURE, self.on_failure, "on_failure")
        if self.address is not None:
            parse_address(self.address)
        if not isinstance(self.staleness_aware, bool):
            raise HogwildError(f"staleness_aware must be True or False, got "
                               f"{self.staleness_aware!r}")
        if self.staleness_aware and self.staleness == 0:
            raise HogwildError("staleness_aware scales pushes by their staleness, and with "
                               "staleness=0 (bulk synchronous) none is stale; give a bound "
                               ">= 1 or inf")
        for node, factor in self.slowdown.items():
            if not (0 <= node < self.nodes and factor >= 1):
                raise HogwildError(f"slowdown: node {node} factor {factor}; nodes are "
                                   f"0..{self.nodes - 1} and factors >= 1")
        for node, clock in self.crash_at.items():
            if not (0 <= node < self.nodes and isinstance(clock, int) and clock >= 1):
                raise HogwildError(f"crash_at: node {node} clock {clock}; nodes are "
                                   f"0..{self.nodes - 1} and clocks >= 1")
        return self

    def clocks_per_epoch(self, n_samples, nodes):
        """Every node runs as many clocks per epoch (the largest share's count), of
        clock_every updates, or by default a tenth of the largest share."""
        every = self.clock_every
        if every is None:
            every = max(1, largest_share(n_samples, nodes) // 10)
        return pieces_per_epoch(n_samples, nodes, every)


# --- actors (made Ray actors by ray.remote in _actor_classes) ----------------------

class ParameterShard:
    """One key range of the flat parameter vector. Every element carries the
    version of the last push that changed it, so a pull returns only what changed
    since the puller's last pull. Pushes are idempotent per (node, clock): a
    restarted node that redoes a clock cannot apply it twice."""

    def __init__(self, values, nodes, ordered, staleness_aware=False):
        self.values = np.array(values)
        self.staleness_aware = staleness_aware
        self.push_staleness = []  # per push: other nodes' pushes applied since its pull
        self.stamps = np.zeros(self.values.size, np.int64)
        self.version = 0
        self.nodes = nodes
        self.ordered = ordered
        self.pending = {}  # ordered mode: clock -> {node: (indices, deltas)}
        self.last_clock = [0] * nodes

    def start_at(self, clock):
        """A resumed run starts at ``clock``: pushes up to it are done."""
        self.last_clock = [clock] * self.nodes

    def push(self, node, clock, indices, deltas, since=None):
        """Add a node's deltas: at ``indices``, or, with indices None, the whole
        range's (a dense push, cheaper when most coordinates changed). ``since``:
        the version of the node's last pull. The pushes applied after it are the
        push's staleness tau (Zhang et al., IJCAI 2016): with staleness_aware, the
        deltas are divided by tau where it is above 1, as if the step had been."""
        if clock <= self.last_clock[node]:
            return
        self.last_clock[node] = clock
        if since is not None and not self.ordered:
            tau = self.version - since
            self.push_staleness.append(tau)
            if self.staleness_aware and tau > 1:
                deltas = deltas / deltas.dtype.type(tau)
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

    def staleness_summary(self):
        """The pushes' staleness: mean, largest, and how many were scaled down."""
        taus = np.array(self.push_staleness or [0])
        return {"mean_push_staleness": float(taus.mean()),
                "max_push_staleness": int(taus.max()),
                "scaled_pushes": int((taus > 1).sum()) if self.staleness_aware else 0}


class ClockTable:
    """Every node's clock; holds a node back until the slowest is within the
    staleness bound, and records the staleness and waiting it observed. Nodes
    also report their share's loss after each epoch here. (An asyncio actor: many
    nodes wait on it at once.)"""

    def __init__(self, nodes):
        import asyncio

        self.clocks = [0] * nodes
        self.changed = asyncio.Condition()
        self.losses = {}  # epoch -> {node: (loss sum over its share, step it applied)}
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

    async def report(self, node, epoch, loss_sum, step):
        async with self.changed:
            self.losses.setdefault(epoch, {})[node] = loss_sum, step
            self.changed.notify_all()

    async def epoch_losses(self, epoch, nodes):
        async with self.changed:
            await self.changed.wait_for(lambda: len(self.losses.get(epoch, ())) == nodes)
            return dict(self.losses[epoch])

    def start_at(self, clock):
        self.clocks = [clock] * len(self.clocks)

    def clock_of(self, node):
        return self.clocks[node]

    def summary(self):
        return {"clocks": list(self.clocks), "max_staleness": self.max_staleness,
                "wait_seconds": list(self.wait_seconds)}


class NodeWorker:
    """One node: its share of the samples, a replica, the local engine."""

    def __init__(self, node, nodes, source, settings, run, shards, bounds, clock_table):
        """``run``: the run's epochs, step schedule, seed, run length, scheduler and
        workers per node."""
        objective = source() if callable(source) else source
        self.node, self.nodes, self.settings, self.run_settings = node, nodes, settings, run
        self.shards, self.bounds, self.clock_table = shards, bounds, clock_table
        self.n = objective.n_samples
        self.first, self.last = node_samples(self.n, nodes, node)
        self.layout = FlatLayout(objective.params, "ray")
        self.flat = aligned_copy(np.zeros(self.layout.size, self.layout.dtype))
        self.params = self.layout.views(self.flat)
        self.base = np.empty_like(self.flat)
        self.seen = [-1] * len(shards)
        # Arrays from Ray's object store are read-only, and numba's kernels on
        # read-only arrays ran 2.7x slower here (matrix completion): own a copy.
        self.data = tuple(np.array(a) if isinstance(a, np.ndarray) and not a.flags.writeable
                          else a for a in objective.data)
        self.loops = compile_loops(objective.update, objective.loss, objective.fastmath)
        scheduler = get_scheduler(run["scheduler"])
        self.planner = scheduler.planner(self.last - self.first, run["workers"])
        self.runner = ThreadsBackend(self.planner.workers)
        self.runner.warm_up(self.loops, self.params, self.data, scheduler)
        self.loops.sum_loss(self.params, self.data, 0, 0)
        self.clocks = settings.clocks_per_epoch(self.n, nodes)
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
        schedule = run["schedule"]
        self._pull()
        plans_of = {}  # this epoch's plan per clock, drawn once per epoch
        for clock in range(start_clock, run["epochs"] * self.clocks):
            epoch, part = divmod(clock, self.clocks)
            if epoch not in plans_of:
                plans_of = {epoch: piece_plans(self.planner, self.n, self.nodes, self.node,
                                               self.clocks, epoch, run["seed"],
                                               run["run_length"])}
            plan = plans_of[epoch][part]
            start = time.perf_counter()
            step = schedule(epoch)
            self.traffic["updates"] += int(self.runner.run_epoch(
                self.loops, plan, self.params, self.data, step, epoch))
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
                ray.get(self.clock_table.report.remote(self.node, epoch, loss, step))
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
            replies.append(shard.push.remote(self.node, clock, indices, values, self.seen[k]))
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



# --- Ray itself ------------------------------------------------------------------

def start_local_ray(ray, num_cpus):
    """A new Ray instance of this machine alone: every service bound to the
    loopback interface, never RAY_ADDRESS's or an already running cluster
    (address="local"), its files created private (umask 077: the token file
    ~/.ray/auth_token grants access to the instance) in a folder of this user's
    alone (Ray makes its session folders mode 0777, and its default /tmp/ray is
    shared by every user without the sticky bit), removed when this process ends."""
    from ray._private import ray_constants

    folder = tempfile.mkdtemp(prefix="hogwild-ray-")  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    loopback_only = ray_constants.ENABLE_RAY_CLUSTER  # Ray's own switch, off on macOS
    ray_constants.ENABLE_RAY_CLUSTER = False  # and Windows: services on 127.0.0.1
    umask = os.umask(0o077)
    try:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                 log_to_driver=False, _temp_dir=folder)
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


CONNECT_SECONDS = 10  # to reach a cluster's address before Ray itself tries
JOIN_SECONDS = 60  # for a trial join in a child process (Ray alone may retry for many minutes)


def parse_address(address):
    """(host, port) of a cluster address 'HOST:PORT' or 'ray://HOST:PORT' (an IPv6
    host in brackets), or a HogwildError saying what is expected."""
    found = re.fullmatch(r"(?:ray://)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})",
                         str(address).strip())
    if not found or not 1 <= int(found.group(2)) <= 65535:
        raise HogwildError(f"Ray address {address!r}: expected HOST:PORT (the head's address, "
                           "e.g. 10.0.0.5:6379) or ray://HOST:PORT, with a port from 1 to 65535")
    return found.group(1).strip("[]"), int(found.group(2))


def _join_cluster(ray, address):
    """Join the cluster at ``address`` (asked for explicitly), with Ray's token
    authentication: a cluster without it runs anyone's code. An address nobody
    answers at fails within CONNECT_SECONDS, and one where something other than
    Ray answers within JOIN_SECONDS: a child process joins first, and is killed
    if it has not joined by then (Ray alone retries for many minutes)."""
    host, port = parse_address(address)
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "disabled" or not (os.environ.get("RAY_AUTH_TOKEN")
                                  or ray_token_path().is_file()):
        raise HogwildError(f"joining the Ray cluster at {address} needs Ray's token "
                           "authentication: set RAY_AUTH_MODE=token and give the cluster's "
                           "token in RAY_AUTH_TOKEN or ~/.ray/auth_token (see the README)")
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else \
            (error.strerror or str(error))
        raise HogwildError(f"cannot reach the Ray cluster at {address} ({reason}, within "
                           f"{CONNECT_SECONDS} s): is Ray running there ('ray start --head')?") \
            from None
    os.environ["RAY_AUTH_MODE"] = "token"
    trial = [sys.executable, "-c", "import sys, ray; ray.init(address=sys.argv[1], "
             "include_dashboard=False, log_to_driver=False, logging_level='error'); "
             "ray.shutdown()", address]
    try:
        joined = subprocess.run(trial, capture_output=True, text=True, timeout=JOIN_SECONDS)
    except subprocess.TimeoutExpired:
        raise HogwildError(f"cannot join the Ray cluster at {address}: something answers there, "
                           f"but no Ray cluster joined within {JOIN_SECONDS} s") from None
    if joined.returncode != 0:
        said = [line for line in joined.stderr.strip().splitlines() if line.strip()]
        raise HogwildError(f"cannot join the Ray cluster at {address}: "
                           f"{said[-1] if said else f'exit status {joined.returncode}'}")
    ray.init(address=address, include_dashboard=False, log_to_driver=False)


def _by_value(ray, *functions):
    """Send the objective's own code with it: a user's module (a test file, a
    script's sibling) need not be importable on the nodes. The library's modules
    and __main__ (which cloudpickle sends by value anyway) are left alone."""
    for function in functions:
        name = getattr(function, "__module__", None) or "__main__"
        if name != "__main__" and name.split(".")[0] != "hogwild" and name in sys.modules:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])


# --- the backend -------------------------------------------------------------------

class RayBackend(HostBackend):
    """The engine's side of a run on Ray: starts the server shards, the clock table
    and the node actors, waits for the nodes' epochs, and reads the server's state.
    A node that dies is restarted at its last clock (``on_failure="restart"``) or
    ends the run with hogwild.errors.WorkerLost (``"stop"``)."""

    name = "ray"
    schedulers = LOCAL_SCHEDULERS
    plans_itself = True
    runs_ahead = True
    accepts_sources = True

    @classmethod
    def requested_workers(cls, config):
        """Threads per node: one unless asked."""
        return 1 if config.workers is None else config.workers

    @classmethod
    def checkpoint_settings(cls, config):
        settings = config.distributed
        return {"backend": "ray", "nodes": settings.nodes, "staleness": settings.staleness,
                "staleness_aware": settings.staleness_aware,
                "clock_every": settings.clock_every}

    @classmethod
    def open(cls, workers, config, source):
        return cls(workers, config, source)

    def __init__(self, workers, config, source):
        self.ray = import_ray()
        self.settings, self.source = config.distributed, source
        self.nodes = self.settings.nodes
        self.workers = workers
        self.run = {"epochs": config.epochs, "schedule": config.schedule,
                    "seed": run_seed(config.seed), "run_length": config.shuffle_block,
                    "scheduler": config.scheduler, "workers": workers}
        self.shards, self.clock_table, self.built, self.running = [], None, [], {}
        self.finished, self.restarts = {}, []
        self.started = False
        self._loss, self._state = None, None
        self.started_ray = not self.ray.is_initialized()
        if self.started_ray:
            if self.settings.address:
                _join_cluster(self.ray, self.settings.address)
            else:  # a local instance with room for every node actor
                check_workers(self.nodes * workers, config.oversubscribe,
                              name="nodes x threads per node")
                start_local_ray(self.ray, max(os.cpu_count() or 1, self.nodes * workers))

    def worker_count(self, planned):
        return self.nodes * planned

    def share(self, params, data, n_samples):
        if self.nodes > n_samples:
            raise HogwildError(f"{self.nodes} nodes for {n_samples} samples: at most one "
                               "node per sample")
        self.layout = FlatLayout(params, "ray")
        self.n, self.data = n_samples, data
        self.clocks = self.settings.clocks_per_epoch(n_samples, self.nodes)
        return params, data

    def warm_up(self, loops, params, data, scheduler, objective):
        """Start the server shards, the clock table and the nodes, and wait until
        every node has its data and compiled loops."""
        from hogwild.objective import Objective

        ray, began = self.ray, time.perf_counter()
        actors = _actor_classes()
        flat = self.layout.flatten(params)
        self.bounds = self.layout.bounds(self.settings.shards or self.nodes)
        self.shards = [actors["shard"].remote(flat[a:b], self.nodes, self.settings.staleness == 0,
                                              self.settings.staleness_aware)
                       for a, b in zip(self.bounds[:-1], self.bounds[1:])]
        self.clock_table = actors["clock"].remote(self.nodes)
        _by_value(ray, objective.update, objective.loss)
        self.shipped = ray.put(objective) if isinstance(self.source, Objective) else self.source
        self.built = [self._new_node(node) for node in range(self.nodes)]
        ray.get([worker.ready.remote() for worker in self.built])
        self.startup_seconds = time.perf_counter() - began

    def _new_node(self, node):
        return _actor_classes()["node"].options(num_cpus=self.workers).remote(
            node, self.nodes, self.shipped, self.settings, self.run, self.shards, self.bounds,
            self.clock_table)

    def _start(self, epoch):
        """Set the nodes running from the first clock of ``epoch`` to the run's end."""
        ray, start_clock = self.ray, epoch * self.clocks
        if start_clock:  # a resumed run: the server and the clocks start there
            ray.get([shard.start_at.remote(start_clock) for shard in self.shards]
                    + [self.clock_table.start_at.remote(start_clock)])
        for node, worker in enumerate(self.built):
            self.running[node] = worker, worker.run.remote(start_clock,
                                                           self.settings.crash_at.get(node))
        self.started = True

    def run_epoch(self, loops, plan, params, data, step, epoch):
        """Wait until every node has finished ``epoch`` (restarting a dead node, or
        raising WorkerLost); the nodes go on with the next clocks meanwhile."""
        ray = self.ray
        if not self.started:
            self._start(epoch)
        waiting = self.clock_table.epoch_losses.remote(epoch, self.nodes)
        while True:
            running = {ref: node for node, (_, ref) in self.running.items()
                       if node not in self.finished}
            # a timeout: a Ctrl-C between waits reaches the engine's handler
            ready, _ = ray.wait([waiting, *running], num_returns=1, timeout=0.25)
            if not ready:
                continue
            if ready[0] == waiting:
                break
            node = running[ready[0]]
            try:
                self.finished[node] = ray.get(ready[0])
            except ray.exceptions.RayActorError:
                clock = ray.get(self.clock_table.clock_of.remote(node))
                if self.settings.on_failure == "stop":
                    raise WorkerLost(f"node {node} died at clock {clock} (epoch {epoch + 1}); "
                                     "the run was stopped (on_failure='stop')",
                                     {"stopped_at_clock": clock}) from None
                self.restarts.append({"node": node, "clock": clock})
                worker = self._new_node(node)
                self.running[node] = worker, worker.run.remote(clock)
        reported = ray.get(waiting)
        # in node order, not arrival order: a float sum's last bits depend on it
        self._loss = float(sum(reported[node][0] for node in sorted(reported)))
        self._steps = [reported[node][1] for node in sorted(reported)]
        self._state = None
        return self.n

    def applied_step(self, step):
        """The step the nodes applied in the epoch (each computes it from the run's
        schedule, running ahead of the engine; their mean, should they differ)."""
        return sum(self._steps) / len(self._steps)

    def loss_sum(self, loops, params, data, n):
        """The training data's: the sum of the nodes' losses over their shares of the
        last epoch, each on its replica just after its last pull of the epoch. Before
        the first epoch, and for any other data (a metric's): computed here on the
        server's state."""
        if data is self.data and self._loss is not None:
            return self._loss
        return loops.sum_loss(self.to_host(params), data, 0, n)

    def all_finite(self, params):
        return super().all_finite(self.to_host(params))

    def to_host(self, params):
        """The server's state (fetched once per epoch)."""
        if self._state is None:
            flat = np.concatenate(self.ray.get([s.state.remote() for s in self.shards]))
            self._state = self.layout.views(flat)
        return self._state

    def export(self, params):
        return tuple(np.array(p) for p in self.to_host(params))

    def report(self):
        """Staleness, waiting, traffic and restarts of the run."""
        if not self.started:
            return None
        ray = self.ray
        traffic = [self.finished[node] if node in self.finished else ray.get(ref)
                   for node, (_, ref) in sorted(self.running.items())]
        summary = ray.get(self.clock_table.summary.remote())
        return {
            "nodes": self.nodes, "staleness": self.settings.staleness,
            "shards": len(self.shards), "clocks_per_epoch": self.clocks,
            "clock_every": -(-largest_share(self.n, self.nodes) // self.clocks),
            "max_staleness": summary["max_staleness"],
            "staleness_aware": self.settings.staleness_aware,
            **ray.get(self.shards[0].staleness_summary.remote()),
            "wait_seconds": summary["wait_seconds"], "restarts": self.restarts,
            "per_node": traffic,
            **{key: sum(t[key] for t in traffic) for key in (
                "pushed_bytes", "pulled_bytes", "dense_push_bytes", "pushes", "changed",
                "updates")}}

    def close(self):
        actors = [worker for worker, _ in self.running.values()] + self.built + self.shards
        for actor in actors + ([self.clock_table] if self.clock_table is not None else []):
            self.ray.kill(actor)
        self.running, self.built, self.shards, self.clock_table = {}, [], [], None
        if self.started_ray:
            self.ray.shutdown()
            self.started_ray = False
