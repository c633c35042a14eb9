"""What an allreduce would cost on a described cluster, beyond the flat Open MPI
algorithms of hogwild.collectives: hierarchical allreduce over two link classes,
BytePS's summation service on spare machines, and two GPU-cluster algorithms that
no CPU engine runs, NCCL's double binary trees and Blink's packed spanning trees
(priced only). Links are hogwild.collectives' LinkCosts or MeasuredLink; n is the
vector's bytes, p the ranks.

    hierarchical        Open MPI's han (Horovod's hierarchical allreduce is the
                        same three phases): a binomial reduce to one leader per
                        node and a binomial broadcast back, over the link inside
                        a node, around an allreduce of the leaders by the flat
                        algorithm the model chooses on the link between nodes:
                        nonoverlapping(ranks per node, n, inside)
                        + min over flat algorithms (nodes, n, between)
    summation_service   BytePS (Jiang et al., OSDI 2020, Theorem 1): w workers
                        and k spare machines that only add. A worker's machine
                        sums (w - k) / (w^2 + kw - 2k) of the vector, a spare one
                        2 (w - 1) / (w^2 + kw - 2k); each worker pushes its other
                        parts and pulls the sums, so that every machine's link
                        carries B = 2 w (w - 1) / (w^2 + kw - 2k) n bytes each
                        way (ring allreduce's 2 (w-1)/w n at k = 0, a parameter
                        server's n at k = w). Pipelined in m chunks (the largest
                        part in pieces of at most SUMMATION_CHUNK bytes), a
                        round moves B / m bytes a way over each machine's link
                        (flows to and from every other machine at once, priced
                        as one transfer of their bytes); the first push and
                        the last pull run alone (one way: a message), the
                        m - 1 rounds between them push a chunk to the owner
                        that is sending the last one back (both ways between
                        the same machines: an exchange round):
                        2 message(B / m) + (m - 1) exchange_round(B / m), plus
                        the busiest machine's sums of w copies of its part.
                        Many chunks: B at the exchange's rate, BytePS's bound.
    double_binary_tree  NCCL 2.4 (Sanders, Speck and Traff, "Two-tree algorithms
                        for full bandwidth broadcast, reduction and scan", 2009):
                        the vector in halves, each reduced up one of two binary
                        trees and broadcast down it in pipelined chunks of s
                        bytes; a rank is interior in at most one tree, so a step
                        moves at most 2 s bytes in and out of it:
                        2 (D + ceil(n / 2s) - 1) ring_step(2 s) + n gamma,
                        D = floor(log2 p), s the power of two that minimises it
    blink               Blink (Wang et al., MLSys 2020): spanning trees packed
                        over the link matrix (the best fractional packing: a
                        linear programme over trees, by column generation with a
                        minimum spanning tree for each new column), the vector
                        split across the trees by their
                        rates and reduced then broadcast along each, the phases
                        not overlapped: 2 n / R + 2 D alpha + the busiest rank's
                        sums, R the packing's rate (bytes/s), D the deepest tree.

Double binary trees and Blink are GPU collectives (NCCL, Blink's NVLink
schedules): hogwild prices them so that the table of algorithms is complete, and
never runs them.
"""
import math
from dataclasses import dataclass

import numpy as np

from hogwild.collectives import ALGORITHMS, predict
from hogwild.errors import HogwildError, check_int

PRICED_ONLY = ("double_binary_tree", "blink")  # GPU collectives: no CPU engine runs them
SMALLEST_CHUNK = 1 << 10  # bytes: the double binary tree's pipeline chunks start here
SUMMATION_CHUNK = 1 << 19  # bytes: the summation service's pipeline chunks, at most


def hierarchical(nodes, ranks_per_node, nbytes, inside, between):
    """(seconds, the leaders' flat algorithm) of a hierarchical allreduce of
    ``nbytes`` bytes over ``nodes`` nodes of ``ranks_per_node`` ranks each."""
    nodes = check_int("nodes", nodes, 1)
    local = check_int("ranks_per_node", ranks_per_node, 1)
    n = check_int("nbytes", nbytes, 0)
    in_node = predict("nonoverlapping", local, n, inside)  # reduce, then broadcast
    leaders = {name: predict(name, nodes, n, between) for name in ALGORITHMS}
    best = min(leaders, key=leaders.get)
    return in_node + leaders[best], best


def summation_shares(workers, servers):
    """(a worker machine's share, a spare machine's share) of the vector that it
    sums, by BytePS's Theorem 1; the spare share is 0 without spare machines."""
    w = check_int("workers", workers, 1)
    k = check_int("servers", servers, 0, w)
    denominator = w * w + k * w - 2 * k
    return (w - k) / denominator, (2 * (w - 1) / denominator if k else 0.0)


def summation_service(workers, servers, nbytes, link, chunk=SUMMATION_CHUNK):
    """Seconds of a synchronous update of ``nbytes`` bytes summed by BytePS's
    summation service: ``workers`` machines, ``servers`` spare machines (at most
    as many as workers: beyond that BytePS gains nothing), each part pushed and
    pulled in pipelined chunks of at most ``chunk`` bytes (m chunks to the
    largest part)."""
    w = check_int("workers", workers, 1)
    k = check_int("servers", servers, 0, w)
    n = check_int("nbytes", nbytes, 0)
    if w == 1:
        return 0.0
    worker_share, server_share = summation_shares(w, k)
    largest = max(worker_share, server_share) * n
    chunks = max(1, math.ceil(largest / check_int("chunk", chunk, 1)))
    each_way = 2 * w * (w - 1) / (w * w + k * w - 2 * k) * n
    per_round = each_way / chunks
    fill_and_drain = 2 * link.message(per_round)  # the first push, the last pull
    overlapped = (chunks - 1) * link.exchange_round(per_round)  # a push beside a pull
    sums = w * largest * link.gamma
    return fill_and_drain + overlapped + sums


def double_binary_tree(ranks, nbytes, link):
    """(seconds, the pipeline chunk in bytes) of NCCL's double binary tree allreduce."""
    p = check_int("ranks", ranks, 1)
    n = check_int("nbytes", nbytes, 0)
    if p == 1 or n == 0:
        return 0.0, 0
    depth = p.bit_length() - 1
    best = None
    chunk = SMALLEST_CHUNK
    while True:
        steps = depth + math.ceil(n / (2 * chunk)) - 1
        seconds = 2 * steps * link.ring_step(2 * chunk) + n * link.gamma
        if best is None or seconds < best[0]:
            best = (seconds, chunk)
        if 2 * chunk >= n:
            return best
        chunk *= 2


@dataclass(frozen=True)
class TreePacking:
    """Spanning trees packed over a link matrix: each tree its edges (pairs of
    ranks) and its rate (bytes/s); ``rate`` their sum."""

    trees: tuple
    rates: tuple
    rate: float


def pack_spanning_trees(bandwidth):
    """The best fractional packing of spanning trees into the symmetric matrix
    ``bandwidth`` (bytes/s between two ranks, 0 where they have no link): the
    linear programme over trees (rates that sum to the most, no link over its
    bandwidth), solved by column generation, each new column the lightest
    spanning tree under the links' dual prices (the Nash-Williams and Tutte bound
    is its value)."""
    from scipy.optimize import linprog
    from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

    capacity = np.asarray(bandwidth, np.float64)
    if capacity.ndim != 2 or capacity.shape[0] != capacity.shape[1] or capacity.shape[0] < 2:
        raise HogwildError(f"the link matrix must be square over at least 2 ranks, got "
                           f"shape {capacity.shape}")
    if not np.all(np.isfinite(capacity)) or np.any(capacity < 0) \
            or not np.allclose(capacity, capacity.T):
        raise HogwildError("the link matrix must be symmetric, finite and >= 0 (bytes/s "
                           "between two ranks, 0 for no link)")
    p = capacity.shape[0]
    linked = np.triu(capacity, 1) > 0
    if connected_components(linked, directed=False)[0] > 1:
        raise HogwildError("the link matrix does not connect every rank: no spanning tree")
    edges = [tuple(e) for e in np.argwhere(linked).tolist()]
    index = {edge: i for i, edge in enumerate(edges)}
    unit = capacity.max()  # solved in units of the fastest link: well scaled
    caps = np.array([capacity[a, b] for a, b in edges]) / unit

    def lightest_tree(prices):
        weights = np.zeros((p, p))
        for (a, b), price in zip(edges, prices):
            weights[a, b] = 1 + price  # every tree has p - 1 links: the same lightest
        tree = minimum_spanning_tree(weights).tocoo()
        return tuple(sorted(index[min(a, b), max(a, b)] for a, b in zip(tree.row, tree.col)))

    trees = [lightest_tree(1 / caps)]
    while True:
        incidence = np.zeros((len(edges), len(trees)))
        for column, tree in enumerate(trees):
            incidence[list(tree), column] = 1
        solved = linprog(-np.ones(len(trees)), A_ub=incidence, b_ub=caps, method="highs")
        if solved.status != 0:
            raise HogwildError(f"packing spanning trees failed: {solved.message}")
        prices = np.maximum(-solved.ineqlin.marginals, 0)  # the dual: a price per link
        tree = lightest_tree(prices)
        if prices[list(tree)].sum() >= 1 - 1e-9 or tree in trees:
            break
        trees.append(tree)
    kept = [(tree, rate) for tree, rate in zip(trees, solved.x) if rate > 0]
    return TreePacking(tuple(tuple(edges[i] for i in tree) for tree, _ in kept),
                       tuple(float(rate * unit) for _, rate in kept), float(-solved.fun * unit))


def _depth_and_children(edges, p):
    """(the tree's depth from its centre, each rank's number of children)."""
    neighbours = [[] for _ in range(p)]
    for a, b in edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    best = None
    for root in range(p):
        level, parent, order = {root: 0}, {root: None}, [root]
        for rank in order:
            for other in neighbours[rank]:
                if other not in level:
                    level[other], parent[other] = level[rank] + 1, rank
                    order.append(other)
        depth = max(level.values())
        if best is None or depth < best[0]:
            children = np.zeros(p)
            for rank, up in parent.items():
                if up is not None:
                    children[up] += 1
            best = (depth, children)
    return best


def blink(packing, nbytes, alpha, gamma):
    """Seconds of Blink's allreduce of ``nbytes`` bytes over the spanning trees of
    ``packing`` (pack_spanning_trees: pack once, price every size), with ``alpha``
    seconds a message and ``gamma`` seconds a byte reduced."""
    n = check_int("nbytes", nbytes, 0)
    p = 1 + len(packing.trees[0])
    sums, deepest = np.zeros(p), 0
    for edges, rate in zip(packing.trees, packing.rates):
        depth, children = _depth_and_children(edges, p)
        deepest = max(deepest, depth)
        sums += children * n * rate / packing.rate
    return 2 * n / packing.rate + 2 * deepest * alpha + float(sums.max()) * gamma
