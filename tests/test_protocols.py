"""The published evaluation protocols: leave-one-out splits hold out one
interaction per user, the sampled negatives are items the user has in neither set,
and HR@k / NDCG@k follow He et al. 2017's definitions (checked by hand); the
benchmark's quick run reports every model."""
import numpy as np
import pytest
import scipy.sparse as sp

from hogwild.datasets.ratings import Ratings, leave_one_out
from hogwild.errors import HogwildError
from hogwild.problems.matrix_completion.ranking import hit_ratio_ndcg, sampled_negatives


def test_leave_one_out_holds_out_one_interaction_of_each_user_with_two_or_more():
    users = np.array([1, 1, 1, 2, 2, 3, 1])
    items = np.array([10, 11, 12, 10, 13, 14, 10])  # (1, 10) rated twice: one interaction
    data = leave_one_out(Ratings(users, items, np.array([1, 5, 3, 2, 2, 4, 4], np.float32)))
    assert data.test.getnnz(axis=1).tolist() == [1, 1, 0]  # user 3 has one: kept
    assert data.train.getnnz(axis=1).tolist() == [2, 1, 1]
    assert (data.train.multiply(data.test)).nnz == 0
    assert leave_one_out(Ratings(users, items, np.ones(7, np.float32)), seed=1).test.nnz == 2


def test_sampled_negatives_are_unseen_distinct_and_the_same_for_a_seed():
    rng = np.random.default_rng(0)
    train = sp.csr_matrix((rng.random((50, 400)) < 0.1).astype(np.float32))
    held = [(user, np.flatnonzero(train[user].toarray().ravel() == 0)[0])
            for user in range(0, 50, 2)]
    test = sp.csr_matrix((np.ones(len(held)), tuple(np.array(held).T)), shape=(50, 400))
    users, candidates = sampled_negatives(train, test, 100, seed=3)
    assert users.tolist() == list(range(0, 50, 2)) and candidates.shape == (25, 101)
    for row, user in enumerate(users):
        known = set(train[user].indices) | set(test[user].indices)
        assert candidates[row, 0] in known and not known & set(candidates[row, 1:].tolist())
        assert np.unique(candidates[row, 1:]).size == 100
    assert np.array_equal(sampled_negatives(train, test, 100, seed=3)[1], candidates)
    with pytest.raises(HogwildError, match=r"^user 0 has \d+ items to draw 400 negatives from$"):
        sampled_negatives(train, test, 400)


def test_hit_ratio_and_ndcg_are_he_et_als():
    scores = np.array([[0.9, 0.1, 0.2, 0.3],     # rank 0: hit, ndcg 1
                       [0.5, 0.6, 0.7, 0.1],     # rank 2: hit at k=3, ndcg 1/log2(4)
                       [0.5, 0.5, 0.1, 0.1],     # a tie ranks against it: rank 1
                       [0.0, 0.6, 0.7, 0.8]])    # rank 3: a miss at k=3
    measures = hit_ratio_ndcg(scores, k=3)
    assert measures["hr@3"] == 0.75
    assert measures["ndcg@3"] == pytest.approx((1 + 0.5 + 1 / np.log2(3)) / 4)


def test_quick_run_reports_every_model(quick_benchmark):
    _, report, table = quick_benchmark("bench_protocols")
    run = report["leave_one_out"]
    assert {"hogwild-warp", "hogwild-bpr", "most-popular"} <= set(run["results"])
    for label, result in run["results"].items():
        assert 0 <= result["ndcg@10"] <= result["hr@10"] <= 1, label
    assert run["results"]["hogwild-warp"]["hr@10"] > run["results"]["most-popular"]["hr@10"]
    assert "| hogwild-warp |" in table and "as published" in table
