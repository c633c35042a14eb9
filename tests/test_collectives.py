"""The allreduce cost model (hogwild.collectives) against its closed forms."""
import math

import pytest

from hogwild import HogwildError
from hogwild.collectives import ALGORITHMS, LinkCosts, choose, fit_link, predict

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
    assert predict("basic_linear", 8, 1000, LINK) == pytest.approx(
        14 * (LINK.alpha + 1000 * LINK.beta) + 7 * 1000 * LINK.gamma)
    assert predict("nonoverlapping", 5, 1000, LINK) == pytest.approx(
        6 * (LINK.alpha + 1000 * LINK.beta) + 3 * 1000 * LINK.gamma)


def test_the_choice_follows_latency_for_small_messages_and_bandwidth_for_large():
    small, predictions = choose(8, 8, LINK)
    assert small == "recursive_doubling"  # 3 messages against the ring's 14
    assert predictions["ring"] > predictions["recursive_doubling"]
    large, predictions = choose(8, 256 << 20, LINK)
    assert large in ("ring", "rabenseifner")  # 2 (p-1)/p of the bytes, not log2 p times
    assert predictions[large] < predictions["recursive_doubling"] / 1.5
    assert set(predictions) == set(ALGORITHMS)


def test_ping_pong_times_give_back_the_link():
    sizes = [1 << k for k in range(10, 25, 2)]
    fitted = fit_link(sizes, [LINK.alpha + s * LINK.beta for s in sizes])
    assert math.isclose(fitted.alpha, LINK.alpha, rel_tol=1e-6)
    assert math.isclose(fitted.beta, LINK.beta, rel_tol=1e-9)


@pytest.mark.parametrize("call,message", [
    (lambda: predict("tree", 4, 10, LINK), "unknown allreduce algorithm 'tree'; choose one "
     "of: basic_linear, nonoverlapping, recursive_doubling, ring, segmented_ring, "
     "rabenseifner"),
    (lambda: predict("ring", 0, 10, LINK), "ranks must be an integer >= 1, got 0"),
    (lambda: predict("ring", 2, -1, LINK), "nbytes must be an integer >= 0, got -1"),
    (lambda: LinkCosts(-1.0, 0.0, 0.0), "alpha must be a finite number >= 0 (seconds), "
     "got -1.0"),
    (lambda: fit_link([8], [1e-6]), "fit_link needs one time per size and at least two "
     "sizes"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(HogwildError) as error:
        call()
    assert str(error.value) == message


def test_each_pattern_of_transfers_costs_its_own_measured_rate():
    """Recursive doubling and Rabenseifner exchange with a partner each round:
    beta_exchange; the rings send right and receive left: beta_ring; the linear
    and tree algorithms send one at a time: beta."""
    busy = LinkCosts(LINK.alpha, LINK.beta, LINK.gamma, beta_exchange=2 * LINK.beta,
                     beta_ring=3 * LINK.beta)
    n, a, b, g = 1 << 20, LINK.alpha, LINK.beta, LINK.gamma
    assert predict("recursive_doubling", 4, n, busy) == pytest.approx(2 * (a + 2 * n * b + n * g))
    assert predict("rabenseifner", 4, n, busy) == pytest.approx(
        4 * a + 2 * 3 * n / 4 * 2 * b + 3 * n / 4 * g)
    assert predict("ring", 4, n, busy) == pytest.approx(
        2 * 3 * (a + n / 4 * 3 * b) + 3 * n / 4 * g)
    for name in ("basic_linear", "nonoverlapping"):
        assert predict(name, 4, n, busy) == predict(name, 4, n, LINK), name
    assert (LINK.exchange, LINK.ring) == (LINK.beta, LINK.beta)
    # where ring steps cost 3x and exchanges 2x, Rabenseifner beats the ring
    assert choose(4, 256 << 20, busy)[0] == "rabenseifner"
