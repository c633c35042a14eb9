"""SSPSettings: how backend "ray" spreads a run over nodes (see
hogwild.backends.ray)."""
import math
from dataclasses import dataclass, field, replace
from typing import Optional

from hogwild.backends.ray.cluster import parse_address
from hogwild.backends.sharding import largest_share, pieces_per_epoch
from hogwild.errors import HogwildError, check_int, choose

LOCAL_SCHEDULERS = ("hogwild", "locked", "serial")
ON_FAILURE = ("restart", "stop")
MAX_NODES = 4096  # node actors of a cluster; a local instance is bounded by its cores


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
    on_failure: str = "restart"         # a dead node actor: "restart" it (a dead server
    # shard: restore it from the last checkpoint) or "stop" the run
    slowdown: dict = field(default_factory=dict)  # node -> factor >= 1: a straggler, whose
    # clocks (updates and messages, not waiting) take that many times longer
    crash_at: dict = field(default_factory=dict)  # node -> clock (fault injection)
    crash_shard_at: dict = field(default_factory=dict)  # shard -> clock: it dies at the
    # first push of that clock (fault injection)
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
        shards = self.shards or self.nodes
        for shard, clock in self.crash_shard_at.items():
            if not (isinstance(shard, int) and 0 <= shard < shards and isinstance(clock, int)
                    and clock >= 1):
                raise HogwildError(f"crash_shard_at: shard {shard} clock {clock}; shards are "
                                   f"0..{shards - 1} and clocks >= 1")
        return self

    def clocks_per_epoch(self, n_samples, nodes):
        """Every node runs as many clocks per epoch (the largest share's count), of
        clock_every updates, or by default a tenth of the largest share."""
        every = self.clock_every
        if every is None:
            every = max(1, largest_share(n_samples, nodes) // 10)
        return pieces_per_epoch(n_samples, nodes, every)

