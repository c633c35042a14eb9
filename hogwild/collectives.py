"""The alpha-beta-gamma cost model of allreduce, per Open MPI algorithm.

A message of n bytes between two ranks costs alpha + n beta (alpha the per-message
overhead, beta = 1/B the time per byte on the link); reducing n bytes costs
n gamma (gamma = 1/C, the reduction's time per byte). For p ranks each algorithm
is a number of rounds, the bytes each round sends and the bytes it reduces
(Thakur, Rabenseifner and Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 2005; Patarasuk and Yuan, "Bandwidth optimal
all-reduce algorithms for clusters of workstations", JPDC 2009):

    basic_linear        every rank sends to rank 0, which reduces and sends the
                        result to every rank; the p - 1 transfers of a phase
                        overlap, and rank 0's link carries their bytes:
                        2 (alpha + (p-1) n beta) + (p-1) n gamma
    nonoverlapping      binomial-tree reduce, then binomial-tree broadcast:
                        2 L (alpha + n beta) + L n gamma,       L = ceil(log2 p)
                        (a round of several transfers at once at beta_r)
    recursive_doubling  L rounds exchanging all n bytes:
                        L (alpha + n beta_x + n gamma)
    ring                reduce-scatter then allgather around a ring, n / p bytes
                        a step: 2 (p-1) (alpha + n beta_r / p) + (p-1) n gamma / p
    segmented_ring      the ring, each step's block sent in segments of at most
                        ``segment`` bytes: more messages, the same bytes
    rabenseifner        recursive-halving reduce-scatter then recursive-doubling
                        allgather, rounds of n/2, n/4, ... bytes:
                        2 L alpha + 2 (p-1) n beta_x / p + (p-1) n gamma / p

Steps in which every rank sends at once need not run at the one-way rate that a
ping-pong measures (both directions of a connection share it, and all the ranks'
transfers share the hosts and the switch), so the model prices each pattern by
a measurement of that pattern: a round in which every rank exchanges n bytes
with one partner (a sendrecv: recursive doubling's rounds, Rabenseifner's halving
and doubling) at beta_x, and a ring step, every rank sending to its right and
receiving from its left, at beta_r; so do the rounds of a binomial tree in which
several ranks send at once (an upper bound: not every rank is busy). A transfer
alone pays beta.

For recursive doubling and Rabenseifner, L counts the largest power of two q <= p,
and when p > q two more rounds of the whole vector, and one more reduction, fold
the other p - q ranks in: 2 (alpha + n beta) + n gamma (the rabenseifner terms
then use q).

A link is either LinkCosts (alpha, the betas and gamma: the closed forms above)
or MeasuredLink, the times of each pattern measured at a few sizes and
interpolated between them, in the manner of PLogP (Kielmann, Bal and Verstoep,
"Fast measurement of LogP parameters for message passing platforms", 2000): a
real link is not affine. Small transfers can run faster than large ones' rate (a
token bucket's burst, TCP's window, eager protocols), and an algorithm whose
steps are 16 KiB pays the 16 KiB price, not alpha plus 16 KiB at the rate of
megabytes. Both answer the same three questions, the seconds of one message, of
one exchange round and of one ring step of n bytes, which ``predict`` composes.

On several nodes (``predict(..., nodes=(ranks per node, link between))``, the
ranks filling the nodes in order) a round runs at the link its partners share
(Across), the partners being those Open MPI pairs: where several of a node's
ranks send across at once, their flows share the node's link (the round moves
that many times the bytes over it). Recursive doubling and rabenseifner fold the
ranks beyond a power of two into their neighbours and number the rest afresh
(_fold), which moves some rounds across nodes; "nonoverlapping" runs Open MPI's
binomial reduce and broadcast, on two different trees, level by level
(_reduce_levels, _broadcast_levels); a ring step has one pair crossing between each two nodes
(the job's own ring step where it was measured: ``nodes=(per_node, between,
whole)``). Checked against emulated nodes of 2 and 3 ranks in
docs/allreduce_probe_2x2_100mbit.md and docs/allreduce_probe_2x3_100mbit.md.

The numbers are Open MPI's ``coll_tuned_allreduce_algorithm`` values, so a choice
can be forced with ``--mca coll_tuned_use_dynamic_rules 1 --mca
coll_tuned_allreduce_algorithm K``.
"""
import math
from collections import Counter
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hogwild.errors import HogwildError, check_int

# Open MPI's coll_tuned_allreduce_algorithm numbers
ALGORITHMS = {"basic_linear": 1, "nonoverlapping": 2, "recursive_doubling": 3, "ring": 4,
              "segmented_ring": 5, "rabenseifner": 6}
DEFAULT_SEGMENT = 1 << 20  # bytes a segmented ring sends at most per message


@dataclass(frozen=True)
class LinkCosts:
    """An affine link. alpha: seconds a message costs whatever its size; beta:
    seconds a byte costs on the link (1 / bandwidth) one transfer at a time; gamma:
    seconds reducing a byte costs; beta_exchange and beta_ring: seconds a byte
    costs when every rank exchanges with a partner at once, or sends to its right
    neighbour while receiving from its left (None: beta)."""

    alpha: float
    beta: float
    gamma: float
    beta_exchange: Optional[float] = None
    beta_ring: Optional[float] = None

    def __post_init__(self):
        for name in ("alpha", "beta", "gamma", "beta_exchange", "beta_ring"):
            value = getattr(self, name)
            if name.startswith("beta_") and value is None:
                continue
            _check_seconds(name, value)

    def message(self, n):
        """Seconds of one n-byte message, one transfer at a time."""
        return self.alpha + n * self.beta

    def exchange_round(self, n):
        """Seconds of a round in which every rank swaps n bytes with a partner."""
        return self.alpha + n * (self.beta if self.beta_exchange is None else self.beta_exchange)

    def ring_step(self, n):
        """Seconds of a ring step: every rank sends n bytes right, receives n from the left."""
        return self.alpha + n * (self.beta if self.beta_ring is None else self.beta_ring)

    def slowest_message(self, n):
        """Seconds of the slowest rank's n-byte message: every rank's link alike."""
        return self.message(n)

    def figures(self):
        """The link for a report."""
        return {"alpha_s": self.alpha, "beta_s_per_byte": self.beta,
                "beta_exchange_s_per_byte": self.exchange_round(1) - self.alpha,
                "beta_ring_s_per_byte": self.ring_step(1) - self.alpha,
                "gamma_s_per_byte": self.gamma}


@dataclass(frozen=True)
class MeasuredLink:
    """A link as measured: the seconds of one message (``message_seconds``), of one
    exchange round and of one ring step at each of ``sizes`` bytes (ascending), and
    gamma. Between two sizes a cost is interpolated linearly; past the largest it
    grows at the slope between the two largest (what large transfers pay); below
    the smallest it is the smallest's. Times that fall with size (noise) are raised
    to the largest time of a smaller size, so a cost never falls as n grows.
    ``slowest``: the slowest rank's message to rank 0 over the measured one's (a
    straggler's link; 1 where every rank's is alike)."""

    sizes: tuple
    message_seconds: tuple
    exchange_seconds: tuple
    ring_seconds: tuple
    gamma: float
    slowest: float = 1.0

    def __post_init__(self):
        sizes = np.asarray(self.sizes, np.float64)
        if sizes.ndim != 1 or sizes.size < 2 or not np.all(np.diff(sizes) > 0) or sizes[0] <= 0:
            raise HogwildError("a measured link needs at least two ascending positive sizes")
        for name in ("message_seconds", "exchange_seconds", "ring_seconds"):
            times = getattr(self, name)
            if len(times) != sizes.size:
                raise HogwildError(f"{name} must have one time per size ({sizes.size}), got "
                                   f"{len(times)}")
            for value in times:
                _check_seconds(name, value)
            object.__setattr__(self, name, tuple(np.maximum.accumulate(
                np.asarray(times, np.float64)).tolist()))
        object.__setattr__(self, "sizes", tuple(int(z) for z in self.sizes))
        _check_seconds("gamma", self.gamma)
        if not (isinstance(self.slowest, (int, float)) and math.isfinite(self.slowest)
                and self.slowest >= 1):
            raise HogwildError(f"slowest must be a finite number >= 1, got {self.slowest!r}")

    def _cost(self, times, n):
        sizes = self.sizes
        if n <= sizes[-1]:
            return float(np.interp(n, sizes, times))
        return times[-1] + (n - sizes[-1]) * _slope(sizes, times)

    def message(self, n):
        """Seconds of one n-byte message, one transfer at a time."""
        return self._cost(self.message_seconds, n)

    def exchange_round(self, n):
        """Seconds of a round in which every rank swaps n bytes with a partner."""
        return self._cost(self.exchange_seconds, n)

    def ring_step(self, n):
        """Seconds of a ring step: every rank sends n bytes right, receives n from the left."""
        return self._cost(self.ring_seconds, n)

    def slowest_message(self, n):
        """Seconds of the slowest rank's n-byte message (to rank 0)."""
        return self.message(n) * self.slowest

    def affine(self):
        """LinkCosts summing this link up: each beta the slope of its pattern between
        the two largest sizes, alpha what is left of the smallest message's time."""
        beta = _slope(self.sizes, self.message_seconds)
        return LinkCosts(max(self.message_seconds[0] - self.sizes[0] * beta, 0.0), beta,
                         self.gamma, _slope(self.sizes, self.exchange_seconds),
                         _slope(self.sizes, self.ring_seconds))

    def figures(self):
        """The link for a report: the affine summary and every measured time."""
        return {**self.affine().figures(), "bytes": list(self.sizes),
                "message_s": list(self.message_seconds),
                "exchange_round_s": list(self.exchange_seconds),
                "ring_step_s": list(self.ring_seconds), "slowest_message_factor": self.slowest}


def _check_seconds(name, value):
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise HogwildError(f"{name} must be a finite number >= 0 (seconds), got {value!r}")


def _slope(sizes, times):
    return max((times[-1] - times[-2]) / (sizes[-1] - sizes[-2]), 0.0)


def predict(algorithm, ranks, nbytes, costs, segment=DEFAULT_SEGMENT, nodes=None):
    """Predicted seconds of one allreduce of ``nbytes`` bytes over ``ranks`` ranks by
    ``algorithm`` (a name of ALGORITHMS) on a link ``costs`` (LinkCosts or
    MeasuredLink). ``nodes``: (ranks per node, the link between nodes), the ranks
    filling the nodes in order and ``costs`` the link inside a node: a round whose
    partners are on different nodes runs at the link between them, the flows of a
    node's ranks sharing it (see Across)."""
    if algorithm not in ALGORITHMS:
        raise HogwildError(f"unknown allreduce algorithm {algorithm!r}; choose one of: "
                           f"{', '.join(ALGORITHMS)}")
    p = check_int("ranks", ranks, 1)
    n = check_int("nbytes", nbytes, 0)
    if p == 1:
        return 0.0
    link = Across(costs, *nodes) if nodes is not None else Across(costs, p, costs)
    g = costs.gamma
    if algorithm == "basic_linear":
        return 2 * link.gather(p, n) + (p - 1) * n * g
    if algorithm == "nonoverlapping":
        rounds = [(_tree_transfers(p, k), 1 << k) for k in range(math.ceil(math.log2(p)))]
        sums = len(rounds) * n * g
        if 1 < link.per_node < p:  # nodes of several ranks: Open MPI's trees, level by level
            return sum(link.tree_level(n, edges) for edges in
                       _reduce_levels(p) + _broadcast_levels(p)) + sums
        return 2 * sum(link.message(n, apart) if transfers == 1 else link.ring_step(n, apart)
                       for transfers, apart in rounds) + sums
    if algorithm in ("ring", "segmented_ring"):
        block = n / p
        messages = 1 if algorithm == "ring" else \
            max(1, math.ceil(block / check_int("segment", segment, 1)))
        return 2 * (p - 1) * messages * link.ring(block / messages) + \
            (p - 1) * block * g
    q = 1 << (p.bit_length() - 1)  # the largest power of two <= p
    rounds = q.bit_length() - 1
    kept, folded = _fold(p, q)
    fold = 0.0 if q == p else 2 * link.message_between(n, folded) + n * g
    if algorithm == "recursive_doubling":
        return sum(link.exchange_between(n, _partners(kept, 1 << i)) + n * g
                   for i in range(rounds)) + fold
    halving = sum(2 * link.exchange_between(n / (2 << i), _partners(kept, 1 << i))
                  for i in range(rounds))  # rabenseifner
    return halving + (q - 1) * n / q * g + fold


@dataclass(frozen=True)
class Across:
    """The links a round of an allreduce uses: ``inside`` for partners on one node
    (``per_node`` ranks fill each node in order), ``between`` for partners on two,
    where the flows that leave (or enter) one node at once share its link; a
    round given by how far apart its partners are (``apart`` ranks: the trees of
    one rank a node, the linear algorithm) or by its pairs."""

    inside: object
    per_node: int
    between: object
    whole: Optional[object] = None  # the link measured over every rank of the job

    def _crosses(self, apart):
        return apart >= self.per_node  # the tree's and the linear algorithm's rounds

    def message(self, n, apart):
        return (self.between if self._crosses(apart) else self.inside).message(n)

    def ring_step(self, n, apart):
        """A round of transfers at once between partners ``apart`` ranks apart."""
        return (self.between if self._crosses(apart) else self.inside).ring_step(n)

    def ring(self, n):
        """A step of the ring over every rank: inside each node, and one pair
        crossing between each two nodes; where the job's own ring was measured
        (``whole``), that step. (Estimated from the links alone, a crossing on two
        nodes is priced at the leaders' ring step, one pair both ways; the job's
        ring crosses one way per pair, which a link can run faster or slower.)"""
        if self.whole is not None:
            return self.whole.ring_step(n)
        if self.per_node == 1:
            return self.between.ring_step(n)
        return max(self.inside.ring_step(n), self.between.ring_step(n))

    def _leaving(self, pairs):
        """The most of ``pairs`` (sender, receiver) that leave one node (0: every
        pair is inside a node): their flows share that node's link."""
        leaving = Counter(a // self.per_node for a, b in pairs
                          if a // self.per_node != b // self.per_node)
        return max(leaving.values(), default=0)

    def tree_level(self, n, edges):
        """A level of a tree's transfers of n bytes, (child, parent) all at once:
        where any crosses, at the link between nodes with the most flows that leave
        or enter one node sharing it; else inside (a message, or a ring step where
        several run at once)."""
        node = self.per_node
        crossing = [(a // node, b // node) for a, b in edges if a // node != b // node]
        flows = max([*Counter(a for a, _ in crossing).values(),
                     *Counter(b for _, b in crossing).values()], default=0)
        if flows:
            return self.between.message(flows * n)
        return self.inside.message(n) if len(edges) == 1 else self.inside.ring_step(n)

    def exchange_between(self, n, pairs):
        """A round of exchanges of n bytes between ``pairs`` (both ways listed)."""
        flows = self._leaving(pairs)
        return self.between.exchange_round(flows * n) if flows else self.inside.exchange_round(n)

    def message_between(self, n, pairs):
        """A round of one-way messages of n bytes from each pair's first rank."""
        flows = self._leaving(pairs)
        return self.between.message(flows * n) if flows else self.inside.message(n)

    def gather(self, p, n):
        """One phase of the linear algorithm: rank 0 receives (or sends) n bytes from
        (to) every other rank, its node's over the link inside, the others' over
        the one between, both at once; no faster than the slowest rank's message
        (a straggler's link, as the job's link measured it)."""
        far = p - self.per_node
        near = min(self.per_node, p) - 1
        return max(self.inside.message(near * n) if near else 0.0,
                   self.between.message(far * n) if far > 0 else 0.0,
                   (self.between if self.whole is None else self.whole).slowest_message(n))


def _fold(p, q):
    """(the ranks that remain, the folding pairs) where Open MPI's recursive
    doubling and rabenseifner fold p ranks into q, a power of two: of the first
    2 (p - q) ranks the even ones hand their vector to the next (odd) one and wait;
    the remaining ranks take the places 0 .. q-1 in order, the odd folded ones
    first (ompi_coll_base_allreduce_intra_recursivedoubling)."""
    extra = p - q
    kept = [2 * v + 1 if v < extra else v + extra for v in range(q)]
    return kept, [(2 * j, 2 * j + 1) for j in range(extra)]


def _partners(kept, distance):
    """The pairs (both ways) of a round at ``distance`` among the ``kept`` ranks."""
    return [(kept[v], kept[v ^ distance]) for v in range(len(kept))]


def _broadcast_levels(p):
    """Open MPI's binomial broadcast over p ranks from rank 0 (its bmtree: a rank's
    parent is the rank with its highest bit cleared), as levels of (child, parent)
    transfers, by depth from the root."""
    depth = max(r.bit_count() for r in range(p))
    return [[(r, r ^ (1 << (r.bit_length() - 1))) for r in range(1, p) if r.bit_count() == d]
            for d in range(1, depth + 1)]


def _reduce_levels(p):
    """Open MPI's binomial reduce over p ranks to rank 0, which runs on its in-order
    bmtree (a rank's parent is the rank with its lowest set bit cleared: ranks 0-3
    make 0 <- 1, 0 <- 2, 2 <- 3), as levels of (child, parent) transfers: a rank
    sends once its children have, the leaves first."""
    height = [1] * p  # of each rank's subtree; children are above their parent
    for r in range(p - 1, 0, -1):
        parent = r & (r - 1)
        height[parent] = max(height[parent], height[r] + 1)
    return [[(r, r & (r - 1)) for r in range(1, p) if height[r] == h]
            for h in range(1, max(height[1:], default=0) + 1)]


def _tree_transfers(p, k):
    """Transfers at once in round k of a binomial tree over p ranks: the ranks r
    with r mod 2^(k+1) = 2^k send to r - 2^k."""
    step = 1 << k
    return (p - step - 1) // (2 * step) + 1


def choose(ranks, nbytes, costs, segment=DEFAULT_SEGMENT, nodes=None):
    """(the fastest algorithm by the model, {algorithm: predicted seconds}); ``nodes``
    as for predict."""
    predictions = {name: predict(name, ranks, nbytes, costs, segment, nodes)
                   for name in ALGORITHMS}
    return min(predictions, key=predictions.get), predictions
