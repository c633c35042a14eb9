"""RayBackend: the engine's side of backend "ray" (see hogwild.backends.ray)."""
import os
import sys
import time

import numpy as np

from hogwild.backends.base import HostBackend
from hogwild.backends.ray.cluster import import_ray, join_cluster, send_by_value, start_local_ray
from hogwild.backends.ray.node import actor_classes
from hogwild.backends.ray.settings import LOCAL_SCHEDULERS
from hogwild.backends.sharding import FlatLayout, largest_share, run_seed
from hogwild.errors import HogwildError, WorkerLost
from hogwild.limits import check_workers


class RayBackend(HostBackend):
    """The engine's side of a run on Ray: starts the server shards, the clock table
    and the node actors, waits for the nodes' epochs, and reads the server's state.
    A node that dies is restarted at its last clock (``on_failure="restart"``) or
    ends the run with hogwild.errors.WorkerLost (``"stop"``). A server shard that
    dies is restored from the last checkpoint's values for its range (its updates
    since are lost), or without one the run stops naming the shard."""

    name = "ray"
    schedulers = LOCAL_SCHEDULERS
    plans_itself = True
    runs_ahead = True
    accepts_sources = True

    @classmethod
    def requested_workers(cls, config):
        """Threads per node: one unless asked."""
        return 1 if config.workers is None else config.workers

    def checkpoint_settings(self, config):
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
        self.finished, self.restarts, self.restored = {}, [], []
        self.saved = None  # (epoch, flat state) of the last checkpoint written
        self.started = False
        self._loss, self._state = None, None
        self.started_ray = not self.ray.is_initialized()
        self.local = None  # the LocalRay this run started
        if self.started_ray:
            if self.settings.address:
                join_cluster(self.ray, self.settings.address)
            else:  # a local instance with room for every node actor
                check_workers(self.nodes * workers, config.oversubscribe,
                              name="nodes x threads per node")
                self.local = start_local_ray(self.ray,
                                             max(os.cpu_count() or 1, self.nodes * workers))

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
        actors = actor_classes()
        flat = self.layout.flatten(params)
        self.bounds = self.layout.bounds(self.settings.shards or self.nodes)
        self.shards = [self._new_shard(k, flat, self.settings.crash_shard_at.get(k))
                       for k in range(len(self.bounds) - 1)]
        self.clock_table = actors["clock"].remote(self.nodes)
        send_by_value(ray, objective.update, objective.loss, objective.penalty)
        self.shipped = ray.put(objective) if isinstance(self.source, Objective) else self.source
        self.built = [self._new_node(node) for node in range(self.nodes)]
        ray.get([worker.ready.remote() for worker in self.built])
        self.startup_seconds = time.perf_counter() - began

    def _new_shard(self, k, flat, crash_at=None):
        """Server shard ``k`` holding ``flat``'s values of its range (``crash_at``:
        fault injection, the clock at which it dies)."""
        return actor_classes()["shard"].remote(
            flat[self.bounds[k]:self.bounds[k + 1]], self.nodes, self.settings.staleness == 0,
            self.settings.staleness_aware, crash_at)

    def checkpointed(self, epoch, params):
        """Keep the checkpoint's state: a shard that dies is restored from it."""
        self.saved = epoch, self.layout.flatten(params)

    def _restore_dead_shards(self):
        """Replace every dead server shard by one holding the last checkpoint's
        values for its range, its pushes done up to each node's clock; or, without
        a checkpoint (or with on_failure="stop"), stop the run naming the shard."""
        ray, dead = self.ray, []
        for k, shard in enumerate(self.shards):
            try:
                ray.get(shard.alive.remote())
            except ray.exceptions.RayActorError:
                dead.append(k)
        if not dead:
            return
        clocks = ray.get(self.clock_table.summary.remote())["clocks"]
        epoch = max(clocks) // self.clocks + 1  # the epoch the nodes were in
        for k in dead:
            where = (f"parameter-server shard {k} (parameters {self.bounds[k]:,} to "
                     f"{self.bounds[k + 1] - 1:,}) died in epoch {epoch}")
            if self.settings.on_failure == "stop":
                raise HogwildError(f"{where}; the run was stopped (on_failure='stop')")
            if self.saved is None:
                raise HogwildError(f"{where}, and no checkpoint holds its values: pass "
                                   "checkpoint=PATH (--checkpoint) to restore a lost shard "
                                   "from the last one")
            saved_epoch, state = self.saved
            self.shards[k] = self._new_shard(k, state)
            ray.get(self.shards[k].start_at.remote(clocks))
            self.restored.append({"shard": k, "epoch": epoch, "from_epoch": saved_epoch})
            print(f"hogwild: {where}; restored from the checkpoint after epoch {saved_epoch} "
                  "(its updates since are lost)", file=sys.stderr, flush=True)

    def _new_node(self, node):
        return actor_classes()["node"].options(num_cpus=self.workers).remote(
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
            except ray.exceptions.RayActorError as error:
                # the node's task failed calling a dead server shard (a RayTaskError),
                # or the node itself died
                node_died = not isinstance(error, ray.exceptions.RayTaskError)
                self._restore_dead_shards()
                clock = ray.get(self.clock_table.clock_of.remote(node))
                if node_died and self.settings.on_failure == "stop":
                    raise WorkerLost(f"node {node} died at clock {clock} (epoch {epoch + 1}); "
                                     "the run was stopped (on_failure='stop')",
                                     {"stopped_at_clock": clock}) from None
                if node_died:
                    self.restarts.append({"node": node, "clock": clock})
                    print(f"hogwild: node {node} died at clock {clock} (epoch {epoch + 1}); "
                          "restarted from that clock", file=sys.stderr, flush=True)
                else:  # a new actor, with the restored shard
                    ray.kill(self.running[node][0])
                worker = self._new_node(node)
                self.running[node] = worker, worker.run.remote(clock)
        reported = ray.get(waiting)
        # in node order, not arrival order: a float sum's last bits depend on it
        self._loss = float(sum(reported[node][0] for node in sorted(reported)))
        self._steps = [reported[node][1] for node in sorted(reported)]
        self._state = None
        return self.n

    def applied_step(self, steps):
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

    def penalty_sum(self, penalty, params, data):
        """0 once the nodes have reported an epoch: each adds to its loss its share
        of the penalty on its own replica (the server's state moves on as nodes run
        ahead); before, the server's state's."""
        return 0.0 if self._loss is not None else super().penalty_sum(penalty, params, data)

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
            **({"restored_shards": self.restored} if self.restored else {}),
            "per_node": traffic,
            **{key: sum(t[key] for t in traffic) for key in (
                "pushed_bytes", "pulled_bytes", "dense_push_bytes", "pushes", "changed",
                "updates")}}

    def close(self):
        actors = [worker for worker, _ in self.running.values()] + self.built + self.shards
        for actor in actors + ([self.clock_table] if self.clock_table is not None else []):
            self.ray.kill(actor)
        self.running, self.built, self.shards, self.clock_table = {}, [], [], None
        if self.local is not None:
            self.local.close()
            self.local = None
        elif self.started_ray:
            self.ray.shutdown()
        self.started_ray = False
