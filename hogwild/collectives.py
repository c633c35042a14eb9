"""The alpha-beta-gamma cost model of allreduce, per Open MPI algorithm.

A message of n bytes between two ranks costs alpha + n beta (alpha the per-message
overhead, beta = 1/B the time per byte on the link); reducing n bytes costs
n gamma (gamma = 1/C, the reduction's time per byte). For p ranks each algorithm
is a number of rounds, the bytes each round sends and the bytes it reduces
(Thakur, Rabenseifner and Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 2005; Patarasuk and Yuan, "Bandwidth optimal
all-reduce algorithms for clusters of workstations", JPDC 2009):

    basic_linear        reduce to rank 0 and broadcast, one rank at a time:
                        2 (p-1) (alpha + n beta) + (p-1) n gamma
    nonoverlapping      binomial-tree reduce, then binomial-tree broadcast:
                        2 L (alpha + n beta) + L n gamma,       L = ceil(log2 p)
    recursive_doubling  L rounds exchanging all n bytes:
                        L (alpha + n beta_x + n gamma)
    ring                reduce-scatter then allgather around a ring, n / p bytes
                        a step: 2 (p-1) (alpha + n beta_r / p) + (p-1) n gamma / p
    segmented_ring      the ring, each step's block sent in segments of at most
                        ``segment`` bytes: more messages, the same bytes
    rabenseifner        recursive-halving reduce-scatter then recursive-doubling
                        allgather: 2 L alpha + 2 (p-1) n beta / p + (p-1) n gamma / p

Steps in which every rank sends at once need not run at the one-way rate that a
ping-pong measures (both directions of a connection share it, and all the ranks'
transfers share the hosts and the switch), so the model takes the rate of each
pattern from a measurement of that pattern: a round in which every rank
exchanges n bytes with one partner (a sendrecv: recursive doubling's rounds,
Rabenseifner's halving and doubling) costs n beta_x, and a ring step, every rank
sending to its right and receiving from its left, n beta_r. The linear and tree
algorithms, whose transfers are mostly one at a time, cost n beta. (On links
emulated on one 2-core host, beta_x and beta_r came out at 1.2 to 2.5 times beta.)

For recursive doubling and Rabenseifner, L counts the largest power of two q <= p,
and when p > q two more rounds of the whole vector, and one more reduction, fold
the other p - q ranks in: 2 (alpha + n beta) + n gamma (the rabenseifner terms
then use q).

The numbers are Open MPI's ``coll_tuned_allreduce_algorithm`` values, so a choice
can be forced with ``--mca coll_tuned_use_dynamic_rules 1 --mca
coll_tuned_allreduce_algorithm K``. The costs of a link (LinkCosts) come from
measurements: ``fit_link`` fits alpha and beta to ping-pong times (and beta_x to
exchange times).
"""
import math
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
    """alpha: seconds a message costs whatever its size; beta: seconds a byte costs
    on the link (1 / bandwidth) one transfer at a time; gamma: seconds reducing a
    byte costs; beta_exchange and beta_ring: seconds a byte costs when every rank
    exchanges with a partner at once, or sends to its right neighbour while
    receiving from its left (None: beta)."""

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
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise HogwildError(f"{name} must be a finite number >= 0 (seconds), got "
                                   f"{value!r}")

    @property
    def exchange(self):
        """Seconds per byte of a round of pairwise exchanges."""
        return self.beta if self.beta_exchange is None else self.beta_exchange

    @property
    def ring(self):
        """Seconds per byte of a ring step."""
        return self.beta if self.beta_ring is None else self.beta_ring


def predict(algorithm, ranks, nbytes, costs, segment=DEFAULT_SEGMENT):
    """Predicted seconds of one allreduce of ``nbytes`` bytes over ``ranks`` ranks by
    ``algorithm`` (a name of ALGORITHMS) on links of LinkCosts ``costs``."""
    if algorithm not in ALGORITHMS:
        raise HogwildError(f"unknown allreduce algorithm {algorithm!r}; choose one of: "
                           f"{', '.join(ALGORITHMS)}")
    p = check_int("ranks", ranks, 1)
    n = check_int("nbytes", nbytes, 0)
    if p == 1:
        return 0.0
    a, b, g, x = costs.alpha, costs.beta, costs.gamma, costs.exchange
    if algorithm == "basic_linear":
        return 2 * (p - 1) * (a + n * b) + (p - 1) * n * g
    if algorithm == "nonoverlapping":
        rounds = math.ceil(math.log2(p))
        return 2 * rounds * (a + n * b) + rounds * n * g
    if algorithm in ("ring", "segmented_ring"):
        block = n / p
        messages = 1 if algorithm == "ring" else \
            max(1, math.ceil(block / check_int("segment", segment, 1)))
        return 2 * (p - 1) * (messages * a + block * costs.ring) + (p - 1) * block * g
    q = 1 << (p.bit_length() - 1)  # the largest power of two <= p
    rounds = q.bit_length() - 1
    fold = 0.0 if q == p else 2 * (a + n * b) + n * g
    if algorithm == "recursive_doubling":
        return rounds * (a + n * x + n * g) + fold
    block = n / q  # rabenseifner
    return 2 * rounds * a + 2 * (q - 1) * block * x + (q - 1) * block * g + fold


def choose(ranks, nbytes, costs, segment=DEFAULT_SEGMENT):
    """(the fastest algorithm by the model, {algorithm: predicted seconds})."""
    predictions = {name: predict(name, ranks, nbytes, costs, segment) for name in ALGORITHMS}
    return min(predictions, key=predictions.get), predictions


def fit_link(sizes, seconds):
    """LinkCosts' alpha and beta from one-way message times ``seconds`` at ``sizes``
    bytes (half a ping-pong's round trip): beta the slope between the two largest
    sizes, alpha what is left of the smallest's time (clipped at 0). Not a least
    squares line: a link's first bytes can be cheaper than the rest (a token
    bucket's burst, a window still growing), and the slope of large messages is
    what large allreduces pay. gamma, the reduction's cost, is measured apart and
    left 0 here."""
    sizes = np.asarray(sizes, np.float64)
    seconds = np.asarray(seconds, np.float64)
    if sizes.shape != seconds.shape or sizes.size < 2 or np.unique(sizes).size < 2:
        raise HogwildError("fit_link needs one time per size and at least two sizes")
    order = np.argsort(sizes, kind="stable")
    sizes, seconds = sizes[order], seconds[order]
    beta = max(float((seconds[-1] - seconds[-2]) / (sizes[-1] - sizes[-2])), 0.0)
    return LinkCosts(max(float(seconds[0] - sizes[0] * beta), 0.0), beta, 0.0)
