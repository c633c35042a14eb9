"""Fold-in: users (and items) added to a trained model, or recalculated, without
retraining. The implicit recommenders' new users rank their held-out items as
well as the same users trained in the full model (MovieLens 100K); the explicit
model's fold-in is the training objective's exact minimiser (against NumPy's
least squares) and predicts held-out ratings as well as the full model; a row's
fold-in does not depend on its batch; the model's lists, counts and files follow."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from hogwild.bench.workloads import growth_halves
from hogwild.datasets.ratings import Ratings, interactions_from_ratings, split_ratings
from hogwild.errors import HogwildError
from hogwild.problems.matrix_completion import (ImplicitFactorization, MatrixFactorization,
                                                rmse)
from hogwild.problems.matrix_completion.ranking import ranking_metrics

from conftest import shared_ratings
from test_implicit import planted


def _left_out(n_users, count, seed):
    """(users left out, users kept), each sorted."""
    out = np.sort(np.random.default_rng(seed).choice(n_users, count, replace=False))
    return out, np.setdiff1d(np.arange(n_users), out)


@pytest.mark.parametrize("loss", ["warp", "bpr"])
def test_users_folded_in_rank_as_well_as_trained_ones_on_movielens_100k(loss):
    """200 users of MovieLens 100K left out of training and folded in from their
    training interactions: precision@10 on their held-out items within 0.01 of
    the same users in a model trained on everyone (the mean over 3 seeds: one
    seed's full models differ from each other by up to 0.015 on these users)."""
    data = interactions_from_ratings(shared_ratings("ml-100k"))
    train, test = data.train.tocsr(), data.test.tocsr()
    out, kept = _left_out(train.shape[0], 200, seed=100)
    full_scores, folded_scores = [], []
    for seed in range(3):
        full = ImplicitFactorization(loss=loss, random_state=seed, workers=1).fit(train)
        full_scores.append(ranking_metrics(full.user_factors_[out], full.item_factors_,
                                           full.item_bias_, test[out], train[out])["precision@10"])
        model = ImplicitFactorization(loss=loss, random_state=seed, workers=1).fit(train[kept])
        users = model.fold_in(train[out])
        assert np.array_equal(users, np.arange(kept.size, train.shape[0]))
        folded_scores.append(model.evaluate(sp.vstack([sp.csr_matrix((kept.size, train.shape[1])),
                                                       test[out]]))["precision@10"])
    assert abs(np.mean(folded_scores) - np.mean(full_scores)) <= 0.01, \
        (full_scores, folded_scores)
    assert min(folded_scores) > 0.18  # popularity ranks these users at about 0.10


@pytest.mark.determinism
@pytest.mark.parametrize("loss,adaptive", [("warp", False), ("warp", True), ("bpr", False)])
def test_a_users_fold_in_is_the_same_alone_in_a_batch_and_on_any_worker_count(loss, adaptive):
    train, _ = planted(seed=3)
    model = ImplicitFactorization(loss=loss, adaptive=adaptive, random_state=0, workers=1,
                                  epochs=3).fit(train[:300])
    batch = model.fold_in(train[300:])
    together = model.user_factors_[batch]
    for workers in (1, 2):
        model.set_params(workers=workers)
        alone = model.fold_in(train[350:351], users=[batch[50]])
        assert np.array_equal(model.user_factors_[alone[0]], together[50])
    assert model.user_factors_.shape[0] == 400


def test_recalculated_users_replace_their_items_and_recommend_leaves_the_new_ones_out():
    train, _ = planted(seed=4)
    model = ImplicitFactorization(random_state=0, workers=1, epochs=3).fit(train)
    before = model.user_factors_.copy()
    changed = sp.csr_matrix(([1.0, 1.0, 1.0], ([0, 0, 1], [5, 7, 9])), shape=(2, 300))
    assert np.array_equal(model.fold_in(changed, users=[10, 20]), [10, 20])
    assert np.array_equal(model._seen[1][model._seen[0][10]:model._seen[0][11]], [5, 7])
    assert np.array_equal(model._seen[1][model._seen[0][20]:model._seen[0][21]], [9])
    assert np.array_equal(np.delete(model.user_factors_, [10, 20], 0),
                          np.delete(before, [10, 20], 0))
    items, _ = model.recommend(10, n=298)
    assert not {5, 7} & set(items.tolist()) and items.size == 298
    assert model.item_counts_.sum() == model._seen[1].size


def test_items_folded_in_rank_as_trained_ones_and_do_not_crowd_out_the_rest(tmp_path):
    """Items left out of training entirely and folded in from their users' training
    interactions: precision@10 over every user and item within 0.01 of the full
    model's (a folded item whose bias only grew would top every ranking: each
    pass also steps it down where other users draw it), and their own held-out
    pairs rank (AUC) far above chance; the users' lists gain them, and the model
    file keeps them."""
    train, test = (m.tocsc() for m in planted(n_users=600, seed=6))
    out, kept = _left_out(train.shape[1], 40, seed=1)
    order = np.concatenate([kept, out])  # the folded model's item order
    full = ImplicitFactorization(random_state=0, workers=1).fit(train)
    model = ImplicitFactorization(random_state=0, workers=1).fit(train[:, kept])
    items = model.fold_in_items(train[:, out])
    assert np.array_equal(items, np.arange(kept.size, train.shape[1]))
    expected, folded = full.evaluate(test.tocsr()), model.evaluate(test[:, order].tocsr())
    assert folded["precision@10"] >= expected["precision@10"] - 0.01, (expected, folded)
    assert model.evaluate(_only(test, out)[:, order])["auc"] > 0.8
    assert set(model._seen[1][model._seen[0][0]:model._seen[0][1]]) == \
        set(np.flatnonzero(np.isin(order, train.tocsr()[0].indices)))
    model.save(tmp_path / "m.npz")
    loaded = ImplicitFactorization.load(tmp_path / "m.npz")
    assert np.array_equal(loaded.item_factors_, model.item_factors_)
    assert np.array_equal(loaded.recommend(3)[0], model.recommend(3)[0])


@pytest.mark.parametrize("loss", ["warp", "bpr"])
def test_items_recalculated_from_their_own_interactions_are_what_training_made(loss):
    """100 MovieLens 100K items recalculated in a trained model from their training
    interactions: their biases correlate with the trained ones above 0.95, and
    precision@10 moves by less than 0.005."""
    data = interactions_from_ratings(shared_ratings("ml-100k"))
    train = data.train.tocsc()
    full = ImplicitFactorization(loss=loss, random_state=0, workers=1).fit(train)
    before, trained_bias = full.evaluate(data.test)["precision@10"], full.item_bias_.copy()
    items = np.sort(np.random.default_rng(0).choice(train.shape[1], 100, replace=False))
    full.fold_in_items(train[:, items], items=items)
    assert np.corrcoef(trained_bias[items], full.item_bias_[items])[0, 1] > 0.95
    assert abs(full.evaluate(data.test)["precision@10"] - before) < 0.005


def _only(matrix, columns):
    """``matrix`` (csr) with the entries of ``columns`` alone."""
    mask = np.zeros(matrix.shape[1])
    mask[columns] = 1
    return sp.csr_matrix(matrix @ sp.diags(mask))


@pytest.mark.parametrize("call,message", [
    (lambda m: m.fold_in(np.ones((2, 300))),
     "interactions must be a scipy.sparse matrix, got ndarray"),
    (lambda m: m.fold_in(sp.csr_matrix((2, 5))), "interactions have 5 items; the model has 300"),
    (lambda m: m.fold_in(sp.csr_matrix((2, 300)), users=[1, 400]),
     "users must be indices from 0 to 399 (the model's), got 400"),
    (lambda m: m.fold_in(sp.csr_matrix((2, 300)), users=[1, 1]),
     "users must be distinct: each row is folded in once"),
    (lambda m: m.fold_in(sp.csr_matrix((2, 300)), users=[1]),
     "users gives 1 indices for the 2 users of interactions"),
    (lambda m: m.fold_in(sp.csr_matrix((2, 300)), users=[[1, 2]]),
     "users must be a list of user indices, got int64 of shape (1, 2)"),
    (lambda m: m.fold_in_items(sp.csr_matrix((3, 2))), "interactions have 3 users; the model "
                                                       "has 400"),
    # values a model file holds, edited
    (lambda m: (setattr(m, "reg_", "0.1"), m.fold_in(sp.csr_matrix((1, 300)))),
     "reg_ must be a finite number >= 0, got '0.1'"),
    (lambda m: (setattr(m, "adaptive_", "yes"), m.fold_in(sp.csr_matrix((1, 300)))),
     "adaptive_ must be True or False, got 'yes'"),
])
def test_bad_fold_ins_are_named(call, message):
    train, _ = planted(seed=2)
    model = ImplicitFactorization(random_state=0, workers=1, epochs=1).fit(train)
    with pytest.raises(HogwildError) as error:
        call(model)
    assert str(error.value) == message


def _normal_equations_hold(model, users, items, values, side):
    """The gradient of the training objective in a folded row is zero: the biased
    model's per-rating regulariser (n mu) or the paper's (mu)."""
    biased = model.model == "biased"
    if side == "user":
        row = model._user_index.find(users[:1])[0]
        X, b = model.user_factors_[row].astype(np.float64), model.user_bias_[row]
        F, c = model.item_factors_[model._item_index.find(items)], \
            model.item_bias_[model._item_index.find(items)]
    else:
        row = model._item_index.find(items[:1])[0]
        X, b = model.item_factors_[row].astype(np.float64), model.item_bias_[row]
        F, c = model.user_factors_[model._user_index.find(users)], \
            model.user_bias_[model._user_index.find(users)]
    F, c = F.astype(np.float64), c.astype(np.float64)
    offset = model.global_mean_ if biased else 0.0
    error = offset + b + c + F @ X - values
    scale = values.size if biased else 1
    assert np.allclose(F.T @ error + model.reg_ * scale * X, 0, atol=1e-3)
    if biased:
        assert abs(error.sum() + model.bias_reg_ * scale * b) < 1e-3


@pytest.mark.parametrize("model_name", ["biased", "paper"])
def test_explicit_fold_in_is_the_training_objectives_minimiser(model_name):
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 50, 2000), rng.integers(0, 40, 2000)
    values = rng.integers(1, 6, 2000).astype(np.float32)
    model = MatrixFactorization(model=model_name, rank=8, random_state=0, workers=1,
                                epochs=3).fit((users, items, values))
    new_items = np.array([3, 5, 8, 13, 21, 34])
    new_values = np.array([5, 4, 1, 2, 5, 3], np.float32)
    new_users = np.full(6, 1000)
    model.fold_in((new_users, new_items, new_values))
    _normal_equations_hold(model, new_users, new_items, new_values, "user")
    assert model.user_ids_[-1] == 1000 and model.user_factors_.shape[0] == 51
    raters = np.array([0, 2, 4, 6, 8])
    model.fold_in_items((raters, np.full(5, 7), np.array([1, 2, 3, 4, 5], np.float32)))
    _normal_equations_hold(model, raters, np.full(5, 7), np.array([1, 2, 3, 4, 5.0]), "item")
    assert model.item_factors_.shape[0] == 40  # a known item: recalculated in place


def test_explicit_fold_in_predicts_held_out_ratings_as_the_full_model(tmp_path):
    """200 users of MovieLens 100K left out of training and folded in: their test
    RMSE within 0.01 of the full model's on the same ratings (with a fifth of the
    users gone, the items learn from less), far below the cold start's."""
    train, test = split_ratings(shared_ratings("ml-100k"), 0.2, 0, by="user")
    out = np.random.default_rng(0).choice(np.unique(train.users), 200, replace=False)
    trained_out, tested_out = np.isin(train.users, out), np.isin(test.users, out)
    held = test.subset(tested_out)
    full = MatrixFactorization(random_state=0, workers=1).fit(train)
    model = MatrixFactorization(random_state=0, workers=1).fit(train.subset(~trained_out))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # items rated only by the users left out
        cold = rmse(model.predict(held.users, held.items), held.values)
        model.fold_in(train.subset(trained_out))
        folded = rmse(model.predict(held.users, held.items), held.values)
        expected = rmse(full.predict(held.users, held.items), held.values)
    assert folded <= expected + 0.01 and folded < cold - 0.05, (expected, folded, cold)
    user = out[0]
    rated = set(train.items[train.users == user].tolist())
    recommended, _ = model.recommend(user, n=50)
    assert not rated & set(recommended.tolist())
    model.save(tmp_path / "mf.npz")
    loaded = MatrixFactorization.load(tmp_path / "mf.npz")
    assert np.array_equal(loaded.recommend(user)[0], model.recommend(user)[0])
    some = train.subset(train.users == out[1])
    model.fold_in(some)
    loaded.fold_in(some)  # a saved model folds in as the one in memory
    assert np.array_equal(loaded.user_factors_, model.user_factors_)


def test_explicit_fold_in_names_what_it_cannot_use():
    ratings = Ratings(np.array([1, 2, 3, 1]), np.array([10, 20, 30, 30]),
                      np.array([1, 2, 3, 4], np.float32))
    model = MatrixFactorization(rank=2, random_state=0, workers=1, epochs=1).fit(ratings)
    with pytest.warns(UserWarning, match="1 of 2 ratings have an item the model does not "
                                         "know; left out of the fold-in"):
        model.fold_in((np.array([9, 9]), np.array([10, 99]), np.array([5.0, 1.0])))
    with pytest.raises(HogwildError, match="^no rating has an item the model knows: nothing "
                                           "to fold in$"):
        model.fold_in((np.array([9]), np.array([99]), np.array([5.0])))
    with pytest.raises(HogwildError, match=r"^user ids must be of the model's kind \(int64\), "
                                           r"got <U1$"):
        model.fold_in((np.array(["a"]), np.array([10]), np.array([5.0])))


def test_partial_fit_on_movielens_1ms_second_half_ranks_as_a_model_of_both():
    """A model of the first half of MovieLens 1M's training interactions, then
    partial_fit on the second (a tenth of the users and a twentieth of the items
    new): precision@10 within 0.005 of a model trained on both at once (the mean
    of 2 seeds; scripts/bench_recommend.py times both)."""
    data = interactions_from_ratings(shared_ratings("ml-1m"))
    first, second, users, items, old_users, old_items = growth_halves(data.train)
    test = data.test.tocsr()[users][:, items]
    both, partial = [], []
    for seed in range(2):
        whole = ImplicitFactorization(random_state=seed, workers=1).fit(first + second)
        both.append(whole.evaluate(test)["precision@10"])
        model = ImplicitFactorization(random_state=seed, workers=1).fit(
            first[:old_users][:, :old_items])
        model.partial_fit(second)
        assert model.user_factors_.shape[0] == first.shape[0]
        partial.append(model.evaluate(test)["precision@10"])
    assert np.mean(partial) >= np.mean(both) - 0.005, (both, partial)


def test_partial_fit_grows_the_model_and_keeps_its_lists_sums_and_file(tmp_path):
    train, _ = planted(seed=8)
    first, second, _, _, old_users, old_items = growth_halves(train, seed=1)
    model = ImplicitFactorization(adaptive=True, random_state=0, workers=1, epochs=3).fit(
        first[:old_users][:, :old_items])
    trained_sums = model._sums[0].copy()
    model.partial_fit(second)
    assert model.user_factors_.shape == (train.shape[0], 32)
    assert model.item_factors_.shape[0] == model.item_bias_.size == train.shape[1]
    assert model._sums[0].size == train.shape[0] and model._sums[1].size == train.shape[1]
    assert np.all(model._sums[0][:old_users] >= trained_sums)  # continued, not restarted
    assert model.item_counts_.sum() == (first + second).nnz == model._seen[1].size
    assert len(model.history_) == 2  # 0.6 of 3 epochs
    model.save(tmp_path / "m.npz")
    loaded = ImplicitFactorization.load(tmp_path / "m.npz")
    assert all(np.array_equal(a, b) for a, b in zip(loaded._sums, model._sums))
    loaded.partial_fit(sp.csr_matrix(([1.0], ([train.shape[0]], [0])),
                                     shape=(train.shape[0] + 1, train.shape[1])), epochs=1)
    assert loaded.user_factors_.shape[0] == train.shape[0] + 1
    with pytest.raises(HogwildError, match=r"^interactions are 5 x 300; the model has \d+ "
                                           r"users and 300 items: new users and items come "
                                           r"after the model's$"):
        model.partial_fit(sp.csr_matrix((5, 300)))
    fresh = ImplicitFactorization(random_state=0, workers=1, epochs=1).partial_fit(train)
    assert fresh.user_factors_.shape[0] == train.shape[0]  # not fitted yet: fitted


def _growth(ratings, seed):
    """(first, second, test) of ``ratings``: a fifth held out for testing, a tenth of
    the users and a twentieth of the items only in the second half, the rest of
    the training ratings split at random."""
    rng = np.random.default_rng(seed)
    test = rng.random(len(ratings)) < 0.2
    users, items = np.unique(ratings.users), np.unique(ratings.items)
    new = np.isin(ratings.users, rng.choice(users, users.size // 10, replace=False)) | \
        np.isin(ratings.items, rng.choice(items, items.size // 20, replace=False))
    second = ((rng.random(len(ratings)) < 0.5) | new) & ~test
    return ratings.subset(~second & ~test), ratings.subset(second), ratings.subset(test)


def test_ratings_partial_fit_on_movielens_1ms_second_half_predicts_as_a_model_of_both():
    """A model of the first half of MovieLens 1M's training ratings, then
    partial_fit on the second (new users and items included): test RMSE within
    0.002 of a model of both at once (0.0001-0.0003 here), far below the first
    half's model."""
    ratings = shared_ratings("ml-1m")
    first, second, test = _growth(ratings, 0)
    whole = MatrixFactorization(random_state=0, workers=1).fit(
        Ratings(*(np.concatenate([a, b]) for a, b in zip(
            (first.users, first.items, first.values), (second.users, second.items,
                                                        second.values)))))
    model = MatrixFactorization(random_state=0, workers=1).fit(first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the first half's model lacks the new ids
        alone = rmse(model.predict(test.users, test.items), test.values)
        model.partial_fit(second)
        grown = rmse(model.predict(test.users, test.items), test.values)
        expected = rmse(whole.predict(test.users, test.items), test.values)
    assert grown <= expected + 0.002 and grown < alone - 0.03, (expected, grown, alone)
    assert model.user_ids_.size == whole.user_ids_.size
    assert model._seen[1].size == len(first) + len(second) == model.item_counts_.sum()


def test_ratings_partial_fit_keeps_every_rating_grows_and_files_follow(tmp_path):
    ratings = Ratings(np.array([1, 2, 3, 1, 2]), np.array([10, 20, 30, 30, 10]),
                      np.array([1, 2, 3, 4, 5], np.float32))
    model = MatrixFactorization(rank=2, random_state=0, workers=1, epochs=5).fit(ratings)
    # user 9 rates a known item and item 99, which user 8 alone rates with item 98,
    # rated by nobody else: 8 and 98 start from drawn factors
    new = (np.array([9, 9, 8, 1]), np.array([10, 99, 98, 20]),
           np.array([2, 3, 4, 5], np.float32))
    model.partial_fit(new)
    assert sorted(model.user_ids_.tolist()) == [1, 2, 3, 8, 9]
    assert sorted(model.item_ids_.tolist()) == [10, 20, 30, 98, 99]
    assert model._seen[1].size == model._seen_values.size == 9 == model.item_counts_.sum()
    assert len(model.history_) == 3  # 0.6 of 5 epochs
    assert np.all(np.isfinite(model.predict(new[0], new[1])))
    model.save(tmp_path / "mf.npz")
    loaded = MatrixFactorization.load(tmp_path / "mf.npz")
    assert np.array_equal(loaded._seen_values, model._seen_values)
    loaded.partial_fit(([1], [10], [3.0]), epochs=1)
    assert loaded._seen[1].size == 10  # the pair rated again: kept beside the first
    arrays = dict(np.load(tmp_path / "mf.npz"))
    del arrays["seen_values"]  # a file of an earlier version
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(HogwildError, match=r"^this model keeps no training ratings \(trained "
                                           r"on ratings streamed from disk, or saved by an "
                                           r"earlier version\), and partial_fit trains on "
                                           r"them again: fit the model again$"):
        MatrixFactorization.load(tmp_path / "old.npz").partial_fit(new)
    for bad, message in (((np.array([1]), np.array([10, 20]), np.array([1.0])),
                          r"^users, items and values must have the same length"),
                         (([1], [10], [np.nan]), r"NaN"),
                         (([], [], []), r"^empty data: no new ratings$")):
        with pytest.raises(HogwildError, match=message):
            model.partial_fit(bad)
    fresh = MatrixFactorization(rank=2, random_state=0, workers=1, epochs=1).partial_fit(ratings)
    assert fresh.user_ids_.size == 3  # not fitted yet: fitted
