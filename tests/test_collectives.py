"""The allreduce cost model (hogwild.collectives) against its closed forms."""
from dataclasses import astuple, replace

import pytest

from hogwild import HogwildError
from hogwild.collectives import ALGORITHMS, LinkCosts, MeasuredLink, choose, predict

LINK = LinkCosts(alpha=20e-6, beta=1e-9, gamma=0.25e-9)  # 20 us, 1 GB/s, 4 GB/s


def test_the_ring_is_two_passes_of_a_pth_of_the_vector_and_one_reduction():
    p, n = 4, 1_000_000
    expected = 2 * (p - 1) * (LINK.alpha + n / p * LINK.beta) + (p - 1) * n / p * LINK.gamma
    assert predict("ring", p, n, LINK) == pytest.approx(expected, rel=1e-12)
    # a segment as large as a block changes nothing; smaller ones add messages only
    assert predict("segmented_ring", p, n, LINK, segment=n) == pytest.approx(expected)
    assert predict("segmented_ring", p, n, LINK, segment=n // 40) == pytest.approx(
        expected + 2 * (p - 1) * 9 * LINK.alpha)


def test_recursive_doubling_and_rabenseifner_fold_in_ranks_beyond_a_power_of_two():
    n, a, b, g = 4096, LINK.alpha, LINK.beta, LINK.gamma
    fold = 2 * (a + n * b) + n * g
    assert predict("recursive_doubling", 8, n, LINK) == pytest.approx(3 * (a + n * b + n * g))
    assert predict("recursive_doubling", 6, n, LINK) == pytest.approx(
        2 * (a + n * b + n * g) + fold)
    assert predict("rabenseifner", 8, n, LINK) == pytest.approx(
        6 * a + 2 * 7 * n / 8 * b + 7 * n / 8 * g)
    assert predict("rabenseifner", 6, n, LINK) == pytest.approx(
        4 * a + 2 * 3 * n / 4 * b + 3 * n / 4 * g + fold)


def test_one_rank_costs_nothing_and_linear_costs_grow_with_the_ranks():
    assert all(predict(name, 1, 10**6, LINK) == 0.0 for name in ALGORITHMS)
    # rank 0's link carries the p - 1 transfers of each phase, whose latencies overlap
    assert predict("basic_linear", 8, 1000, LINK) == pytest.approx(
        2 * (LINK.alpha + 7 * 1000 * LINK.beta) + 7 * 1000 * LINK.gamma)
    assert predict("nonoverlapping", 5, 1000, LINK) == pytest.approx(
        6 * (LINK.alpha + 1000 * LINK.beta) + 3 * 1000 * LINK.gamma)


def test_the_choice_follows_latency_for_small_messages_and_bandwidth_for_large():
    small, predictions = choose(8, 8, LINK)
    assert small == "basic_linear"  # two latencies: each phase's 7 transfers overlap
    assert predictions["ring"] > predictions["recursive_doubling"]  # 14 latencies against 3
    large, predictions = choose(8, 256 << 20, LINK)
    assert large in ("ring", "rabenseifner")  # 2 (p-1)/p of the bytes, not log2 p times
    assert predictions[large] < predictions["recursive_doubling"] / 1.5
    assert set(predictions) == set(ALGORITHMS)


def measured(link, sizes):
    """The MeasuredLink whose times are ``link``'s at ``sizes``."""
    return MeasuredLink(sizes, [link.message(z) for z in sizes],
                        [link.exchange_round(z) for z in sizes],
                        [link.ring_step(z) for z in sizes], link.gamma)


def test_a_measured_affine_link_predicts_what_its_closed_forms_do():
    busy = LinkCosts(LINK.alpha, LINK.beta, LINK.gamma, beta_exchange=2 * LINK.beta,
                     beta_ring=3 * LINK.beta)
    link = measured(busy, [1 << k for k in range(10, 23, 2)])
    # alpha and each pattern's beta come back
    assert astuple(link.affine()) == pytest.approx(astuple(busy), rel=1e-9)
    for ranks in (2, 4, 6, 8):
        for nbytes in (1 << 16, 1 << 20, 1 << 28):  # every step >= 1 KiB: interpolated
            for name in ALGORITHMS:
                assert predict(name, ranks, nbytes, link) == pytest.approx(
                    predict(name, ranks, nbytes, busy), rel=1e-9), (name, ranks, nbytes)


def test_a_measured_link_prices_each_step_at_its_own_size():
    """A token bucket's burst: transfers up to 64 KiB run 4x faster than the rate
    of large ones. The ring's 16 KiB steps of a 64 KiB allreduce pay the measured
    16 KiB price, not alpha plus 16 KiB at the large transfers' rate."""
    sizes = [1 << k for k in range(10, 23, 2)]
    slow = LinkCosts(LINK.alpha, 4 * LINK.beta, LINK.gamma)
    times = [LINK.message(z) if z <= 1 << 16 else LINK.message(1 << 16)
             + (z - (1 << 16)) * slow.beta for z in sizes]
    link = MeasuredLink(sizes, times, times, times, LINK.gamma)
    assert link.ring_step(1 << 14) == pytest.approx(LINK.message(1 << 14))
    assert link.affine().beta == pytest.approx(slow.beta)
    assert predict("ring", 4, 1 << 16, link) == pytest.approx(predict("ring", 4, 1 << 16, LINK))
    assert predict("ring", 4, 1 << 16, link.affine()) > 2 * predict("ring", 4, 1 << 16, link)
    # past the largest size, the slope between the two largest; below the smallest, flat
    assert link.message(1 << 24) - link.message(1 << 22) == pytest.approx(
        ((1 << 24) - (1 << 22)) * slow.beta)
    assert link.message(10) == link.message(1 << 10)
    # noise that makes a larger transfer cheaper is raised to the smaller one's time
    dip = MeasuredLink([1024, 2048, 4096], [3e-6, 2e-6, 5e-6], [1e-6] * 3, [1e-6] * 3, 0.0)
    assert dip.message_seconds == (3e-6, 3e-6, 5e-6)


def test_a_straggler_link_prices_the_linear_gather_at_its_own_rate():
    """One rank's link 5x slower than the partner's the probe timed (slowest=5): the
    linear algorithm's gather on 4 ranks waits for that rank's message, 5 message
    times, more than the 3 the others' messages take into rank 0 at once; the
    algorithms priced by rounds that every rank runs are not changed (their
    measured rounds already waited for the slowest rank)."""
    sizes = [1 << k for k in range(10, 23, 2)]
    even, straggler = measured(LINK, sizes), replace(measured(LINK, sizes), slowest=5.0)
    n = 1 << 20
    assert predict("basic_linear", 4, n, straggler) == pytest.approx(
        2 * 5 * LINK.message(n) + 3 * n * LINK.gamma)
    assert predict("basic_linear", 4, n, even) == pytest.approx(
        2 * LINK.message(3 * n) + 3 * n * LINK.gamma)
    assert predict("basic_linear", 8, n, replace(even, slowest=5.0)) == \
        predict("basic_linear", 8, n, even)  # 7 messages into rank 0 take longer
    for name in set(ALGORITHMS) - {"basic_linear"}:
        assert predict(name, 4, n, straggler) == predict(name, 4, n, even), name
    assert straggler.figures()["slowest_message_factor"] == 5.0


@pytest.mark.parametrize("call,message", [
    (lambda: predict("tree", 4, 10, LINK), "unknown allreduce algorithm 'tree'; choose one "
     "of: basic_linear, nonoverlapping, recursive_doubling, ring, segmented_ring, "
     "rabenseifner"),
    (lambda: predict("ring", 0, 10, LINK), "ranks must be an integer >= 1, got 0"),
    (lambda: predict("ring", 2, -1, LINK), "nbytes must be an integer >= 0, got -1"),
    (lambda: LinkCosts(-1.0, 0.0, 0.0), "alpha must be a finite number >= 0 (seconds), "
     "got -1.0"),
    (lambda: MeasuredLink([8], [1e-6], [1e-6], [1e-6], 0.0), "a measured link needs at least "
     "two ascending positive sizes"),
    (lambda: MeasuredLink([8, 16], [1e-6], [1e-6] * 2, [1e-6] * 2, 0.0), "message_seconds must "
     "have one time per size (2), got 1"),
    (lambda: MeasuredLink([8, 16], [1e-6, float("nan")], [1e-6] * 2, [1e-6] * 2, 0.0),
     "message_seconds must be a finite number >= 0 (seconds), got nan"),
    (lambda: MeasuredLink([8, 16], [1e-6] * 2, [1e-6] * 2, [1e-6] * 2, 0.0, slowest=0.5),
     "slowest must be a finite number >= 1, got 0.5"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(HogwildError) as error:
        call()
    assert str(error.value) == message


def test_each_pattern_of_transfers_costs_its_own_measured_rate():
    """Recursive doubling and Rabenseifner exchange with a partner each round:
    beta_exchange; the rings send right and receive left, and a tree's round of
    several transfers has several ranks sending at once: beta_ring; a transfer
    alone: beta."""
    busy = LinkCosts(LINK.alpha, LINK.beta, LINK.gamma, beta_exchange=2 * LINK.beta,
                     beta_ring=3 * LINK.beta)
    n, a, b, g = 1 << 20, LINK.alpha, LINK.beta, LINK.gamma
    assert predict("recursive_doubling", 4, n, busy) == pytest.approx(2 * (a + 2 * n * b + n * g))
    assert predict("rabenseifner", 4, n, busy) == pytest.approx(
        4 * a + 2 * 3 * n / 4 * 2 * b + 3 * n / 4 * g)
    assert predict("ring", 4, n, busy) == pytest.approx(
        2 * 3 * (a + n / 4 * 3 * b) + 3 * n / 4 * g)
    assert predict("basic_linear", 4, n, busy) == predict("basic_linear", 4, n, LINK)
    # the tree's first round has two transfers at once (1 -> 0, 3 -> 2), its second one
    assert predict("nonoverlapping", 4, n, busy) == pytest.approx(
        2 * ((a + n * 3 * b) + (a + n * b)) + 2 * n * g)
    assert LINK.exchange_round(n) == LINK.ring_step(n) == LINK.message(n)
    # where ring steps cost 3x and exchanges 2x, Rabenseifner beats the ring
    assert choose(4, 256 << 20, busy)[0] == "rabenseifner"


def test_on_several_nodes_the_rounds_between_them_run_at_the_slower_link():
    """Two nodes of two ranks (ranks 0, 1 on one, 2, 3 on the other): a round whose
    partners are on different nodes runs at the link between them, the ranks of a
    node sharing it where several cross (an exchange); the others inside. The
    partners are Open MPI's, measured against emulated nodes in
    docs/allreduce_probe_2x3_100mbit.md."""
    inside = LinkCosts(alpha=1e-6, beta=0.1e-9, gamma=0.25e-9)
    between = LinkCosts(alpha=50e-6, beta=10e-9, gamma=0.25e-9)
    n, g, nodes = 1 << 20, inside.gamma, (2, between)
    assert predict("recursive_doubling", 4, n, inside, nodes=nodes) == pytest.approx(
        inside.exchange_round(n) + between.exchange_round(2 * n) + 2 * n * g)
    assert predict("rabenseifner", 4, n, inside, nodes=nodes) == pytest.approx(
        2 * inside.exchange_round(n / 2) + 2 * between.exchange_round(2 * n / 4)
        + 3 * n / 4 * g)
    # Open MPI's binomial reduce runs on its in-order tree (a rank's parent: its
    # lowest set bit cleared), 0 <- 1, 0 <- 2, 2 <- 3: 1 -> 0 and 3 -> 2 inside the
    # nodes at once, then 2 -> 0 crosses; its broadcast on the other binomial tree (a
    # rank's parent: its highest bit cleared), 0 -> 1, 0 -> 2, 1 -> 3: 0 -> 2 crosses,
    # then 1 -> 3 does (measured on emulated nodes: 0.75x the four crossings' price)
    assert predict("nonoverlapping", 4, n, inside, nodes=nodes) == pytest.approx(
        inside.ring_step(n) + 3 * between.message(n) + 2 * n * g)
    assert predict("ring", 4, n, inside, nodes=nodes) == pytest.approx(
        6 * between.ring_step(n / 4) + 3 * n / 4 * g)  # one pair a step crosses
    # 6 ranks, 3 a node: recursive doubling folds 0 into 1 (inside) and 2 into 3
    # (across), then Open MPI numbers 1, 3, 4, 5 as 0-3: both rounds have a pair
    # crossing (1-3, then 1-4), one flow a node
    assert predict("recursive_doubling", 6, n, inside, nodes=(3, between)) == pytest.approx(
        2 * between.message(n) + 2 * between.exchange_round(n) + 3 * n * g)
    # the job's own ring step, where it was measured, prices the rings alone
    whole = LinkCosts(alpha=70e-6, beta=7e-9, gamma=1.0)
    for name in ALGORITHMS:
        expected = 6 * whole.ring_step(n / 4) + 3 * n / 4 * g if "ring" in name else \
            predict(name, 4, n, inside, nodes=nodes)
        assert predict(name, 4, n, inside, nodes=(2, between, whole)) == pytest.approx(expected)
    assert predict("basic_linear", 4, n, inside, nodes=nodes) == pytest.approx(
        2 * max(inside.message(n), between.message(2 * n)) + 3 * n * g)
    # one rank a node: every round crosses, as the flat model on the link between
    # (both links sum at the same gamma here)
    for name in ALGORITHMS:
        assert predict(name, 4, n, inside, nodes=(1, between)) == pytest.approx(
            predict(name, 4, n, between), rel=1e-12)


def test_the_start_up_probe_is_sized_by_what_the_run_exchanges():
    """The probe timed every link at 1 KiB-4 MiB whatever the model (77 s of a
    start-up between emulated hosts for a 1 KB model), and also where --allreduce
    named the algorithm."""
    from hogwild.backends.mpi.probe import PROBE_SIZES, probe_sizes_for

    assert probe_sizes_for(1000) == (1 << 10, 1 << 12)
    assert probe_sizes_for(500_000) == tuple(1 << k for k in range(10, 21, 2))  # to 1 MiB
    assert probe_sizes_for(1 << 20) == tuple(1 << k for k in range(10, 21, 2))
    assert probe_sizes_for(10 << 20) == PROBE_SIZES  # the largest the probe times
    assert probe_sizes_for(10 << 20, "ring") == PROBE_SIZES[:2]
    assert probe_sizes_for(10 << 20, "hierarchical") == PROBE_SIZES
