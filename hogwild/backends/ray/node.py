"""A node actor (NodeWorker: its share of the samples, a replica, the local
engine) and ParameterServer, the nodes' Reconciler: push the changes, tick,
wait within the staleness bound, pull."""
import os
import time

import numpy as np

from hogwild.backends.host import aligned_copy
from hogwild.backends.ray.cluster import import_ray
from hogwild.backends.ray.server import ClockTable, ParameterShard
from hogwild.backends.reconcile import Reconciler, work_apart
from hogwild.backends.sharding import FlatLayout, node_samples, piece_plans
from hogwild.backends.threads import ThreadsBackend
from hogwild.kernels.compiler import compile_loops
from hogwild.schedulers import get_scheduler


class ParameterServer(Reconciler):
    """A node's side of the server: ``flat`` is its replica (the local engine
    updates views of it). A reconcile ends the node's current clock: push the
    deltas of the coordinates that changed locally (indices and values, or a
    shard's whole range where most of it changed), tick, wait until the slowest
    node is at most ``staleness`` clocks behind, and pull what changed on the
    server since the last pull; the replica then equals the server's state. A
    straggler (``slowdown`` > 1) then sleeps so that its clock took that many
    times its busy time."""

    def __init__(self, node, nodes, flat, shards, bounds, clock_table, staleness,
                 slowdown=1.0):
        self.node, self.nodes, self.flat, self.base = node, nodes, flat, np.empty_like(flat)
        self.shards, self.bounds, self.clock_table = shards, bounds, clock_table
        self.staleness, self.slowdown = staleness, slowdown
        self.seen = [-1] * len(shards)
        self.clock = 0           # the clocks this node has finished
        self.piece_started = 0.0  # when the current clock's work began (perf_counter)
        self.traffic = {"pushed_bytes": 0, "pulled_bytes": 0, "dense_push_bytes": 0,
                        "pushes": 0, "changed": 0, "updates": 0, "busy_seconds": 0.0,
                        "push_seconds": 0.0, "pull_seconds": 0.0}

    def reconcile(self):
        ray = import_ray()
        self.clock += 1
        pushing = time.perf_counter()
        self.push(self.clock)
        ray.get(self.clock_table.tick.remote(self.node, self.clock))
        waiting = time.perf_counter()
        ray.get(self.clock_table.wait.remote(self.node, self.clock, self.staleness))
        pulling = time.perf_counter()
        self.pull()
        self.traffic["push_seconds"] += waiting - pushing
        self.traffic["pull_seconds"] += time.perf_counter() - pulling
        if self.slowdown > 1:  # a straggler: each clock's work and messages take longer
            worked = time.perf_counter() - self.piece_started - (pulling - waiting)
            time.sleep((self.slowdown - 1) * worked)
        return True

    def push(self, clock):
        """Send each shard the deltas of its coordinates that changed locally (their
        values when this node is alone: see ParameterShard)."""
        ray = import_ray()
        alone = self.nodes == 1
        changed = np.flatnonzero(self.flat != self.base)
        deltas = self.flat[changed] if alone else self.flat[changed] - self.base[changed]
        cuts = np.searchsorted(changed, self.bounds)
        replies = []
        for k, shard in enumerate(self.shards):
            lo, hi = self.bounds[k], self.bounds[k + 1]
            if 2 * (cuts[k + 1] - cuts[k]) >= hi - lo:  # most changed: send them all
                indices, values = None, self.flat[lo:hi] if alone \
                    else self.flat[lo:hi] - self.base[lo:hi]
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

    def pull(self):
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


class NodeWorker:
    """One node: its share of the samples, a replica, the local engine."""

    def __init__(self, node, nodes, source, settings, run, shards, bounds, clock_table):
        """``run``: the run's epochs, step schedule, seed, run length, scheduler and
        workers per node."""
        objective = source() if callable(source) else source
        self.node, self.nodes, self.settings, self.run_settings = node, nodes, settings, run
        self.n = objective.n_samples
        self.first, self.last = node_samples(self.n, nodes, node)
        layout = FlatLayout(objective.params, "ray")
        flat = aligned_copy(np.zeros(layout.size, layout.dtype))
        self.params = layout.views(flat)
        self.server = ParameterServer(node, nodes, flat, shards, bounds, clock_table,
                                      settings.staleness, settings.slowdown.get(node, 1.0))
        # Arrays from Ray's object store are read-only, and numba's kernels on
        # read-only arrays ran 2.7x slower here (matrix completion): own a copy.
        self.data = tuple(np.array(a) if isinstance(a, np.ndarray) and not a.flags.writeable
                          else a for a in objective.data)
        self.loops = compile_loops(objective.update, objective.loss, objective.fastmath)
        self.penalty = objective.penalty
        scheduler = get_scheduler(run["scheduler"])
        self.planner = scheduler.planner(self.last - self.first, run["workers"])
        self.runner = ThreadsBackend(self.planner.workers)
        self.runner.warm_up(self.loops, self.params, self.data, scheduler)
        self.loops.sum_loss(self.params, self.data, 0, 0)
        self.clocks = settings.clocks_per_epoch(self.n, nodes)

    def ready(self):
        """Returns once the actor is built: data loaded, kernels compiled."""
        return True

    def run(self, start_clock, crash_at=None):
        """Clocks start_clock+1 .. the run's last (work apart, then reconcile, piece
        after piece); after each epoch's last clock, report its loss over the
        node's share and the step applied. Returns this node's traffic."""
        ray = import_ray()
        run, server, traffic = self.run_settings, self.server, self.server.traffic
        server.clock = start_clock
        server.pull()
        for epoch in range(start_clock // self.clocks, run["epochs"]):
            steps = run["schedule"].epoch_steps(epoch)

            def run_piece(plan, epoch=epoch, steps=steps):
                k = server.clock - epoch * self.clocks  # this piece of the epoch
                server.piece_started = time.perf_counter()
                done = int(self.runner.run_epoch(
                    self.loops, plan, self.params, self.data,
                    steps.over(k / self.clocks, (k + 1) / self.clocks), epoch))
                traffic["updates"] += done
                traffic["busy_seconds"] += time.perf_counter() - server.piece_started
                if crash_at is not None and server.clock + 1 == crash_at:
                    os._exit(1)  # fault injection: die as a killed node would
                return done
            plans = piece_plans(self.planner, self.n, self.nodes, self.node, self.clocks,
                                epoch, run["seed"], run["run_length"])
            work_apart(plans[server.clock - epoch * self.clocks:], run_piece, server)
            loss = self.loops.sum_loss(self.params, self.data, self.first, self.last)
            if self.penalty is not None:  # this node's share of it, on its replica
                loss += self.penalty(self.params, self.data) * (self.last - self.first) / self.n
            ray.get(server.clock_table.report.remote(self.node, epoch, loss, steps.mean))
        self.runner.close()
        return traffic


_ACTORS = {}


def actor_classes():
    """The Ray actor classes (made once per process, after Ray is imported)."""
    ray = import_ray()
    if not _ACTORS:
        _ACTORS.update(shard=ray.remote(num_cpus=0)(ParameterShard),
                       clock=ray.remote(num_cpus=0)(ClockTable),
                       node=ray.remote(NodeWorker))
    return _ACTORS
