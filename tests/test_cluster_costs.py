"""The costs of allreduce on a described cluster (hogwild.cluster_costs) against
their closed forms and known optima: BytePS's summation service meets ring
allreduce without spare machines and a parameter server with as many as workers;
the packing of spanning trees reaches the Nash-Williams and Tutte bound, found
here by trying every partition of the ranks."""
import itertools
import math

import numpy as np
import pytest

from hogwild import HogwildError
from hogwild.cluster_costs import (SMALLEST_CHUNK, SUMMATION_CHUNK, blink, double_binary_tree,
                                   hierarchical, pack_spanning_trees, summation_service,
                                   summation_shares)
from hogwild.collectives import ALGORITHMS, LinkCosts, predict

LINK = LinkCosts(alpha=20e-6, beta=1e-9, gamma=0.25e-9)  # 20 us, 1 GB/s, 4 GB/s
NO_SUMS = LinkCosts(alpha=20e-6, beta=1e-9, gamma=0.0)


def partitions(items):
    """Every partition of ``items`` into non-empty blocks."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in partitions(rest):
        for i in range(len(smaller)):
            yield smaller[:i] + [[first] + smaller[i]] + smaller[i + 1:]
        yield [[first]] + smaller


def tutte_nash_williams(capacity):
    """The most spanning trees a capacitated graph packs (fractionally): the least,
    over partitions of its vertices into k >= 2 blocks, of the capacity crossing
    between blocks over k - 1."""
    p = len(capacity)
    best = math.inf
    for blocks in partitions(list(range(p))):
        if len(blocks) < 2:
            continue
        block_of = {v: i for i, block in enumerate(blocks) for v in block}
        crossing = sum(capacity[a][b] for a, b in itertools.combinations(range(p), 2)
                       if block_of[a] != block_of[b])
        best = min(best, crossing / (len(blocks) - 1))
    return best


def complete(p, capacity=1.0):
    return capacity * (np.ones((p, p)) - np.eye(p))


def test_tree_packing_reaches_the_nash_williams_tutte_bound():
    cycle = np.zeros((5, 5))
    for i in range(5):
        cycle[i, (i + 1) % 5] = cycle[(i + 1) % 5, i] = 1
    assert pack_spanning_trees(complete(4)).rate == pytest.approx(2)  # p / 2
    assert pack_spanning_trees(complete(8, 3.0)).rate == pytest.approx(12)
    assert pack_spanning_trees(cycle).rate == pytest.approx(5 / 4)
    rng = np.random.default_rng(0)
    for _ in range(6):
        p = int(rng.integers(3, 7))
        capacity = np.triu(rng.uniform(0, 10, (p, p)) * (rng.random((p, p)) < 0.7), 1)
        capacity[np.arange(p - 1), np.arange(1, p)] += 0.5  # a path: connected
        capacity = capacity + capacity.T
        packing = pack_spanning_trees(capacity)
        assert packing.rate == pytest.approx(tutte_nash_williams(capacity), rel=1e-7)
        load = np.zeros((p, p))
        for tree, rate in zip(packing.trees, packing.rates):
            assert len(tree) == p - 1 and rate > 0
            for a, b in tree:
                load[a, b] += rate
        assert np.all(load + load.T <= capacity * (1 + 1e-9))  # no link over its bandwidth


def test_a_link_matrix_that_is_not_one_is_refused_by_name():
    with pytest.raises(HogwildError, match="^the link matrix does not connect every rank: "
                                           "no spanning tree$"):
        pack_spanning_trees(np.kron(np.eye(2), complete(2)))
    with pytest.raises(HogwildError, match=r"^the link matrix must be symmetric, finite and "
                                           r">= 0 \(bytes/s between two ranks, 0 for no "
                                           r"link\)$"):
        pack_spanning_trees(np.triu(complete(3)))
    with pytest.raises(HogwildError, match=r"^the link matrix must be square over at least 2 "
                                           r"ranks, got shape \(1, 1\)$"):
        pack_spanning_trees([[0.0]])


def test_blink_on_a_uniform_clique_sends_the_vector_down_half_the_ranks_worth_of_trees():
    p, n, bandwidth = 6, 1 << 24, 1e9
    packing = pack_spanning_trees(complete(p, bandwidth))
    seconds = blink(packing, n, alpha=LINK.alpha, gamma=0.0)
    assert packing.rate == pytest.approx(p / 2 * bandwidth)
    deepest = max(seconds - 2 * n / packing.rate, 0) / (2 * LINK.alpha)
    assert 1 <= round(deepest) <= p - 1 and deepest == pytest.approx(round(deepest))
    # a slow bridge between two fast groups is the whole rate
    bridged = np.zeros((6, 6))
    bridged[:3, :3] = bridged[3:, 3:] = 10e9
    np.fill_diagonal(bridged, 0)
    bridged[0, 3] = bridged[3, 0] = 1e9
    assert pack_spanning_trees(bridged).rate == pytest.approx(1e9)
    # each rank reduces what its children send it, in every tree
    with_sums = blink(packing, n, LINK.alpha, LINK.gamma)
    assert seconds + n * LINK.gamma / 2 <= with_sums <= seconds + (p - 1) * n * LINK.gamma


def test_the_summation_service_moves_ring_allreduces_bytes_without_spare_machines():
    """Pipelined in m chunks, the first push and the last pull add one chunk's
    bytes to the ring's 2 (w - 1) / w of the vector each way."""
    bytes_only = LinkCosts(alpha=0.0, beta=1e-9, gamma=0.0)
    for workers in (2, 3, 8):
        n = 3 << 20
        chunks = math.ceil(n / workers / SUMMATION_CHUNK)
        assert summation_service(workers, 0, n, bytes_only) == pytest.approx(
            (chunks + 1) / chunks * predict("ring", workers, n, bytes_only), rel=1e-12)


def test_with_as_many_spare_machines_as_workers_it_is_a_parameter_server():
    w, n = 4, 1 << 24
    chunks = n // w // SUMMATION_CHUNK  # each server sums a quarter, in 512 KiB chunks
    assert summation_service(w, w, n, NO_SUMS) == pytest.approx(  # n each way, m + 1 rounds
        (chunks + 1) * NO_SUMS.alpha + (chunks + 1) / chunks * n * NO_SUMS.beta)
    assert summation_shares(w, w) == (0.0, pytest.approx(1 / w))


def test_every_byte_is_summed_once_and_each_spare_machine_takes_traffic_off_the_links():
    for w in (2, 5, 16):
        for k in range(w + 1):
            worker_share, server_share = summation_shares(w, k)
            assert w * worker_share + k * server_share == pytest.approx(1)
    for w in (3, 5, 16):  # (two workers send the vector each way whatever k is)
        times = [summation_service(w, k, 1 << 26, NO_SUMS) for k in range(w + 1)]
        assert all(later < earlier for earlier, later in zip(times, times[1:]))
    # the sums are priced too: one spare machine summing 16 workers' larger parts at
    # 1 GB/s costs more than it saves on 1 GB/s links
    slow_sums = LinkCosts(alpha=20e-6, beta=1e-9, gamma=1e-9)
    assert summation_service(16, 1, 1 << 26, slow_sums) > summation_service(16, 0, 1 << 26,
                                                                            slow_sums)
    with pytest.raises(HogwildError, match="^servers must be an integer from 0 to 4, got 5$"):
        summation_service(4, 5, 1000, LINK)


def test_double_binary_trees_pipeline_at_full_bandwidth_with_logarithmic_latency():
    p, n = 16, 1 << 26
    seconds, chunk = double_binary_tree(p, n, LINK)
    steps = 4 + math.ceil(n / (2 * chunk)) - 1
    assert seconds == pytest.approx(2 * steps * (LINK.alpha + 2 * chunk * LINK.beta)
                                    + n * LINK.gamma)
    assert SMALLEST_CHUNK <= chunk <= n // 2 and chunk & (chunk - 1) == 0
    for other in (chunk // 2, chunk * 2):  # the chunk the model picks is the best
        if SMALLEST_CHUNK <= other <= n // 2:
            other_steps = 4 + math.ceil(n / (2 * other)) - 1
            assert seconds <= 2 * other_steps * (LINK.alpha + 2 * other * LINK.beta) \
                + n * LINK.gamma
    # large vectors: twice the vector through each rank, as the ring's 2 (p - 1) / p
    huge = 1 << 32
    assert double_binary_tree(p, huge, LINK)[0] == pytest.approx(
        2 * huge * LINK.beta + huge * LINK.gamma, rel=0.02)
    # many ranks, small vectors: log p steps beat the ring's 2 (p - 1)
    assert double_binary_tree(256, 4096, LINK)[0] < predict("ring", 256, 4096, LINK) / 10
    assert double_binary_tree(1, n, LINK) == (0.0, 0)


def test_hierarchical_is_a_reduce_and_broadcast_per_node_around_the_leaders_allreduce():
    inside = LinkCosts(alpha=1e-6, beta=0.1e-9, gamma=0.25e-9)  # shared memory: 10 GB/s
    between = LinkCosts(alpha=100e-6, beta=80e-9, gamma=0.25e-9)  # 100 Mbit/s
    n = 1 << 22
    seconds, leaders = hierarchical(2, 2, n, inside, between)
    flat_between = {name: predict(name, 2, n, between) for name in ALGORITHMS}
    assert leaders == min(flat_between, key=flat_between.get)
    assert seconds == pytest.approx(predict("nonoverlapping", 2, n, inside)
                                    + flat_between[leaders])
    # every rank on the slow link (a flat ring over 4) sends more over it than one leader
    assert seconds < predict("ring", 4, n, between)
    assert hierarchical(1, 4, n, inside, between)[0] == pytest.approx(
        predict("nonoverlapping", 4, n, inside))


def test_links_of_any_scale_pack_alike():
    """Rates of 10^30 bytes/s (a link measured as nearly free) are solved in units of
    the fastest link: the packing scales with them."""
    for scale in (1e-6, 1.0, 1e30):
        assert pack_spanning_trees(complete(5, scale)).rate == pytest.approx(2.5 * scale)
    assert pack_spanning_trees(complete(2, 3e9)).rate == pytest.approx(3e9)
