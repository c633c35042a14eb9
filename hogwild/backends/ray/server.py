"""The parameter server's actors: ParameterShard (one key range of the flat
parameter vector, with a version per coordinate) and ClockTable (every node's
clock, the staleness bound, and the nodes' epoch losses). Plain classes: made
Ray actors by node.actor_classes."""
import os
import time

import numpy as np


class ParameterShard:
    """One key range of the flat parameter vector. Every element carries the
    version of the last push that changed it, so a pull returns only what changed
    since the puller's last pull. Pushes are idempotent per (node, clock): a
    restarted node that redoes a clock cannot apply it twice. A run of one node
    pushes its values, not their changes: the server then holds exactly what the
    node computed (base + (value - base) can round away from the value), so one
    node is bitwise the serial run."""

    def __init__(self, values, nodes, ordered, staleness_aware=False, crash_at=None):
        self.values = np.array(values)
        self.crash_at = crash_at  # fault injection: die at the first push of this clock
        self.staleness_aware = staleness_aware
        self.push_staleness = []  # per push: other nodes' pushes applied since its pull
        self.stamps = np.zeros(self.values.size, np.int64)
        self.version = 0
        self.nodes = nodes
        self.ordered = ordered
        self.pending = {}  # ordered mode: clock -> {node: (indices, deltas)}
        self.last_clock = [0] * nodes

    def start_at(self, clock):
        """A resumed run starts at ``clock`` (a restored shard at each node's clock,
        a list): pushes up to it are done."""
        self.last_clock = list(clock) if isinstance(clock, list) else [clock] * self.nodes

    def alive(self):
        """Answers while the actor lives (a dead one's call raises RayActorError)."""
        return True

    def push(self, node, clock, indices, deltas, since=None):
        """Add a node's deltas: at ``indices``, or, with indices None, the whole
        range's (a dense push, cheaper when most coordinates changed). ``since``:
        the version of the node's last pull. The pushes applied after it are the
        push's staleness tau (Zhang et al., IJCAI 2016): with staleness_aware, the
        deltas are divided by tau where it is above 1, as if the step had been."""
        if clock <= self.last_clock[node]:
            return
        if clock == self.crash_at:
            os._exit(1)  # fault injection: die as a killed server would
        self.last_clock[node] = clock
        if since is not None and not self.ordered:
            tau = self.version - since
            self.push_staleness.append(tau)
            if self.staleness_aware and tau > 1:
                deltas = deltas / deltas.dtype.type(tau)
        if indices is None:
            indices = np.flatnonzero(deltas != self.values if self.nodes == 1 else deltas)
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
        if self.nodes == 1:  # the node's values (see the class docstring)
            self.values[indices] = deltas
        else:
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

