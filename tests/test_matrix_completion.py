"""Matrix completion: kernels against a NumPy reference, planted low-rank recovery,
blocked reproducibility, MovieLens accuracy, the estimator's API and its errors."""
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import HogwildError, Objective, fit
from hogwild.datasets.jumbo import make_jumbo
from hogwild.datasets.ratings import Ratings
from hogwild.kernels.compiler import compile_loops
from hogwild.problems.matrix_completion import MatrixFactorization, factor_kernels, rmse
from reference.naive import mf_biased_sgd_epoch, mf_paper_sgd_epoch

SIGMA = 0.5


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def planted():
    """2000 x 2000, rank 5, noise SIGMA: 400,000 training ratings (100 per row)."""
    train, test, _ = make_jumbo(2000, 2000, 400_000, rank=5, noise=SIGMA, test_ratings=20_000,
                                seed=0, folder=None)
    return train, test


# --- the kernels do what the formulas say ---------------------------------------------

def reference_sweep(model, L, R, bu, bi, users, items, values, consts, step):
    """One serial pass in float64 NumPy, written straight from the module docstring."""
    L, R, bu, bi = (a.astype(np.float64) for a in (L, R, bu, bi))
    for u, v, z in zip(users, items, values, strict=True):
        if model == "paper":
            err = L[u] @ R[v] - z
            ru, rv = consts[0][u], consts[1][v]
            L[u], R[v] = (L[u] * (1 - step * ru) - step * err * R[v],
                          R[v] * (1 - step * rv) - step * err * L[u])
        else:
            mu, mu_bias, mean = consts
            err = mean + bu[u] + bi[v] + L[u] @ R[v] - z
            bu[u], bi[v] = (bu[u] - step * (err + mu_bias * bu[u]),
                            bi[v] - step * (err + mu_bias * bi[v]))
            L[u], R[v] = (L[u] * (1 - step * mu) - step * err * R[v],
                          R[v] * (1 - step * mu) - step * err * L[u])
    return L, R, bu, bi


@pytest.mark.parametrize("model", ["paper", "biased"])
@pytest.mark.parametrize("rank", [1, 7, 32])
def test_kernel_matches_the_reference_update(model, rank):
    rng = np.random.default_rng(rank)
    n, nu, ni = 400, 30, 20
    users = rng.integers(0, nu, n).astype(np.int32)
    items = rng.integers(0, ni, n).astype(np.int32)
    values = rng.uniform(1, 5, n).astype(np.float32)
    L = rng.normal(0, 0.3, (nu, rank)).astype(np.float32)
    R = rng.normal(0, 0.3, (ni, rank)).astype(np.float32)
    bu, bi = np.zeros(nu, np.float32), np.zeros(ni, np.float32)
    if model == "paper":
        consts = (rng.uniform(0, 0.5, nu).astype(np.float32),
                  rng.uniform(0, 0.5, ni).astype(np.float32))
        params, data = (L, R), (users, items, values) + consts
    else:
        consts = np.array([0.05, 0.02, 3.0], np.float32)
        params, data = (L, R, bu, bi), (users, items, values, consts)
    update, loss = factor_kernels(rank, model)
    result = fit(Objective(update, loss, params, data, n, fastmath=True), epochs=1,
                 step=0.01, scheduler="serial", shuffle_block=n, seed=0)
    expected = reference_sweep(model, L, R, bu, bi, users, items, values, consts, 0.01)
    for got, want in zip(result.params, expected):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


# --- convergence --------------------------------------------------------------------------

@pytest.mark.parametrize("scheduler,workers", [("serial", 1), ("hogwild", 2), ("blocked", 2)])
def test_planted_low_rank_matrix_is_recovered_to_the_noise(planted, scheduler, workers):
    """Documented settings (README): rank 5, plain model, reg 1, 20 epochs."""
    train, test = planted
    model = MatrixFactorization(rank=5, model="paper", reg=1.0, scheduler=scheduler,
                                workers=workers, random_state=0).fit(train, eval_set=test)
    assert model.history_[-1].metrics["test_rmse"] < 1.10 * SIGMA
    assert model.workers_ == workers


@pytest.mark.parametrize("model", ["paper", "biased"])
@pytest.mark.parametrize("merge", ["mean", "sum"])
def test_hot_rows_replicated_recover_the_planted_matrix(planted, model, merge):
    """replication="hot" with the rows of more than 0.03% of the ratings (about
    120 of a row's ~100 +- 10) copied per worker: the paper model's per-row
    regularisation is read at the copies' ids too."""
    train, test = planted
    fitted = MatrixFactorization(rank=5, model=model, reg=1.0 if model == "paper" else None,
                                 workers=2, random_state=0, replication="hot", merge=merge,
                                 hot_fraction=0.0003).fit(train, eval_set=test)
    assert fitted.history_[-1].metrics["test_rmse"] < 1.10 * SIGMA
    assert all(a["copied_rows"] > 0 for a in fitted.replicated_["arrays"])


def test_blocked_is_bitwise_reproducible_across_worker_counts(planted):
    train, _ = planted

    def factors(workers, seed):
        m = MatrixFactorization(rank=8, scheduler="blocked", grid=6, workers=workers,
                                epochs=3, random_state=seed).fit(train)
        return m.user_factors_, m.item_factors_, m.user_bias_, m.item_bias_

    one, two, other = factors(1, 11), factors(2, 11), factors(2, 12)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(one[0], other[0])


def test_serial_is_bitwise_reproducible(planted):
    train, _ = planted
    runs = [MatrixFactorization(rank=4, scheduler="serial", epochs=2, random_state=5).fit(train)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].user_factors_, runs[1].user_factors_)


@pytest.mark.parametrize("model", ["biased", "paper"])
def test_movielens_1m_rank_32_rmse(ml1m_split, model):
    """README settings: rank 32, 20 epochs, the model's default reg and step, 2 workers.
    LIBMF reaches 0.853 and Surprise's SVD 0.871 on such a split; the paper's
    degree-scaled ("paper") form regularises light users much harder and does worse."""
    train, test = ml1m_split
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 28 test ratings have an unseen user or item
        m = MatrixFactorization(rank=32, model=model, workers=2, random_state=0).fit(train,
                                                                              eval_set=test)
    final = m.history_[-1].metrics["test_rmse"]
    assert final <= (0.855 if model == "biased" else 0.880), final


# --- inputs, ids, predict, recommend, save/load ----------------------------------------

def string_id_ratings():
    rng = np.random.default_rng(0)
    users = np.array([f"user-{u}" for u in rng.integers(0, 50, 3000)], dtype=object)
    items = np.array([f"movie-{i}" for i in rng.integers(0, 40, 3000)], dtype=object)
    return users, items, rng.integers(1, 6, 3000).astype(np.float32)


def test_accepts_tuples_dataframes_ratings_and_sparse_matrices():
    pd = pytest.importorskip("pandas")
    users, items, values = string_id_ratings()
    kwargs = dict(rank=4, epochs=2, scheduler="serial", random_state=0)
    from_tuple = MatrixFactorization(**kwargs).fit((users, items, values))
    frame = pd.DataFrame({"item": items, "user": users, "rating": values, "extra": 0})
    from_frame = MatrixFactorization(**kwargs).fit(frame)
    np.testing.assert_array_equal(from_tuple.user_factors_, from_frame.user_factors_)
    assert from_tuple.user_ids_[0] == "user-0"
    coo = sp.coo_matrix((values, (np.arange(3000) % 50, np.arange(3000) % 40)))
    from_sparse = MatrixFactorization(**kwargs).fit(coo)
    assert from_sparse.user_factors_.shape == (50, 4)
    ratings = Ratings(np.arange(3000) % 50, np.arange(3000) % 40, values)
    assert MatrixFactorization(**kwargs).fit(ratings).item_factors_.shape == (40, 4)


def test_predict_and_recommend_use_external_ids():
    users, items, values = string_id_ratings()
    m = MatrixFactorization(rank=4, epochs=5, scheduler="serial", random_state=0).fit(
        (users, items, values))
    u, i = m._user_index.find(["user-3"])[0], m._item_index.find(["movie-7"])[0]
    expected = (m.global_mean_ + m.user_bias_[u] + m.item_bias_[i]
                + m.user_factors_[u] @ m.item_factors_[i])
    assert m.predict(["user-3"], ["movie-7"])[0] == pytest.approx(expected, rel=1e-5)
    recommended, scores = m.recommend("user-3", n=5)
    seen = set(items[users == "user-3"])
    assert len(recommended) == min(5, 40 - len(seen)) and not seen & set(recommended)
    assert np.all(np.diff(scores) <= 0)
    np.testing.assert_allclose(m.predict(["user-3"] * len(recommended), recommended), scores,
                               rtol=1e-5)
    everything, _ = m.recommend("user-3", n=100, exclude_seen=False)
    assert len(everything) == 40


def test_unseen_ids_fall_back_with_one_warning_or_raise():
    users, items, values = string_id_ratings()
    m = MatrixFactorization(rank=4, epochs=2, scheduler="serial", random_state=0).fit(
        (users, items, values))
    with pytest.warns(UserWarning, match="1 of 2 pairs have a user or item never seen in "
                                         "training; predicted by the training mean") as seen:
        out = m.predict(["user-1", "stranger"], ["movie-1", "movie-2"])
    assert len(seen) == 1
    j = m._item_index.find(["movie-2"])[0]
    assert out[1] == pytest.approx(m.global_mean_ + m.item_bias_[j])
    with pytest.raises(HogwildError, match="user id 'stranger' was never seen in training"):
        m.predict(["stranger"], ["movie-1"], unknown="error")
    with pytest.raises(HogwildError, match="user id 'nobody' was never seen in training"):
        m.recommend("nobody", unknown="error")  # the default falls back (cold start)


def test_test_set_with_unseen_ids_warns_once_and_still_scores():
    users, items, values = string_id_ratings()
    test = (np.array(["user-1", "ghost"], dtype=object), np.array(["movie-1", "movie-1"],
                                                                   dtype=object),
            np.array([4.0, 3.0], np.float32))
    with pytest.warns(UserWarning, match="1 of 2 test ratings have a user or item never "
                                         "seen") as seen:
        m = MatrixFactorization(rank=4, epochs=3, scheduler="serial", random_state=0).fit(
            (users, items, values), eval_set=test)
    assert len(seen) == 1
    assert all(np.isfinite(r.metrics["test_rmse"]) for r in m.history_)


@pytest.mark.parametrize("ids", ["strings", "ints"])
def test_save_and_load_round_trip(tmp_path, ids):
    users, items, values = string_id_ratings()
    if ids == "ints":
        users = np.array([int(u.split("-")[1]) * 7 for u in users])
    m = MatrixFactorization(rank=6, epochs=2, random_state=0, scheduler="blocked").fit(
        (users, items, values))
    m.save(tmp_path / "model.npz")
    loaded = MatrixFactorization.load(tmp_path / "model.npz")
    assert loaded.get_params() == m.get_params()
    np.testing.assert_array_equal(loaded.predict(users[:100], items[:100]),
                                  m.predict(users[:100], items[:100]))
    for a, b in zip(loaded.recommend(users[0], 3), m.recommend(users[0], 3)):
        np.testing.assert_array_equal(a, b)


def test_loading_a_file_of_another_kind_or_version_is_refused(tmp_path):
    np.savez(tmp_path / "other.npz", meta=np.array('{"kind": "something-else"}'))
    with pytest.raises(HogwildError, match=r"other.npz is not a hogwild matrix-factorization "
                                           r"model \(kind 'something-else'\)"):
        MatrixFactorization.load(tmp_path / "other.npz")
    np.savez(tmp_path / "future.npz",
             meta=np.array('{"kind": "hogwild.MatrixFactorization", "version": 99}'))
    with pytest.raises(HogwildError, match="future.npz is a version 99 model file; this "
                                           "hogwild reads version 1"):
        MatrixFactorization.load(tmp_path / "future.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(HogwildError, match=r"text.npz is not a hogwild model file \(not an "
                                           r"\.npz archive\)"):
        MatrixFactorization.load(tmp_path / "text.npz")
    with pytest.raises(HogwildError, match="cannot read .*absent.npz: no such file"):
        MatrixFactorization.load(tmp_path / "absent.npz")


@pytest.mark.parametrize("kwargs,data,message", [
    ({"rank": 0}, None, "rank must be an integer from 1 to 512, got 0"),
    ({"rank": 513}, None, "rank must be an integer from 1 to 512, got 513"),
    ({"model": "svd++"}, None, "unknown model 'svd\\+\\+'; choose one of: biased, paper"),
    ({"scheduler": "fast"}, None,
     "unknown scheduler 'fast'; choose one of: hogwild, blocked, fpsgd, serial, locked, colored, "
     "cyclades"),
    ({"reg": -1}, None, "reg must be a finite number >= 0, got -1"),
    ({"step": 0}, None, "step must be a finite number > 0, got 0"),
    ({"init_scale": -0.1}, None, "init_scale must be a finite number >= 0, got -0.1"),
    ({"init_scale": float("inf")}, None, "init_scale must be a finite number >= 0, got inf"),
    ({"init_scale": "small"}, None, "init_scale must be a finite number >= 0, got 'small'"),
    ({}, ([1, 2], [1, 2], [4.0, np.nan]),
     r"ratings hold 1 NaN, Inf or values beyond float32's range \(the first at position 1: "
     r"nan\)"),
    ({}, ([1, 2], [1, 2], [4.0, 1e39]),
     r"ratings hold 1 NaN, Inf or values beyond float32's range \(the first at position 1: "
     r"1e\+39\)"),
    ({}, (np.zeros(0, int), np.zeros(0, int), np.zeros(0)),
     "empty data: the training set has no ratings"),
    ({}, ([1, 2], [1], [4.0, 3.0]),
     "users, items and values must have the same length, got 2, 1 and 2"),
    ({}, "ratings.csv", "ratings must be hogwild Ratings, a \\(users, items, values\\) tuple"),
])
def test_bad_input_messages(kwargs, data, message):
    data = ([1, 2, 3], [1, 2, 1], [4.0, 3.0, 5.0]) if data is None else data
    with pytest.raises(HogwildError, match=message):
        MatrixFactorization(epochs=1, **kwargs).fit(data)


def test_unfitted_model_says_so():
    with pytest.raises(AttributeError, match=r"^this MatrixFactorization is not fitted yet; "
                                             r"call fit\(ratings\) first$"):
        MatrixFactorization().predict([1], [1])  # scikit-learn's NotFittedError, if installed


def test_rmse_helper():
    assert rmse([1.0, 3.0], [2.0, 3.0]) == pytest.approx(np.sqrt(0.5))


@pytest.mark.parametrize("scheduler", ["colored", "cyclades"])
def test_conflict_free_schedulers_are_bitwise_reproducible_across_workers(scheduler):
    train, test, _ = make_jumbo(300, 200, 6000, rank=3, noise=0.5, seed=4, folder=None)

    def factors(workers):
        m = MatrixFactorization(rank=4, scheduler=scheduler, workers=workers, epochs=3,
                                random_state=2).fit(train, eval_set=test)
        return m.user_factors_, m.item_factors_, m.history_[-1].metrics["test_rmse"]

    one, two = factors(1), factors(2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    assert one[2] == two[2] < 1.5


def test_huge_integer_ids_need_no_table_of_their_size(tmp_path):
    """Issue 16, item 4: one rating id of 10**12 made IdIndex allocate a table of
    10**12 + 1 entries (7.28 TiB). Ids far beyond the data's size are searched in
    sorted order instead; fit, predict, recommend and a saved model all work."""
    import resource

    users = np.array([10**12, 5, 10**12, 5, 3 * 10**9, 7] * 50)
    items = np.array([1, 2, 2, 1, 1, 2] * 50)
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 3.0] * 50, np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = MatrixFactorization(rank=2, epochs=3, workers=1, random_state=0).fit((users, items,
                                values))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB
    assert sorted(model.user_ids_) == [5, 7, 3 * 10**9, 10**12]  # in the layout's order
    index, row = model._user_index, list(model.user_ids_).index
    np.testing.assert_array_equal(index.find(np.array([10**12, 5, 6, 2**63 - 1, -1])),
                                  [row(10**12), row(5), -1, -1, -1])
    np.testing.assert_array_equal(index.find(np.array([10**12], np.uint64)), [row(10**12)])
    assert model.predict([10**12], [1])[0] > model.predict([5], [1])[0]
    model.save(tmp_path / "m.npz")
    loaded = MatrixFactorization.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict([10**12, 3 * 10**9], [1, 1]),
                                  model.predict([10**12, 3 * 10**9], [1, 1]))
    assert loaded.recommend(10**12, n=1)[0].size == 0  # it rated both items


@pytest.mark.parametrize("model", ["biased", "paper"])
def test_serial_kernels_match_the_numpy_reference(model):
    """The compiled update (fast-math, as the estimator compiles it) against the
    plain NumPy epochs of tests/reference, rating by rating in the same order."""
    rng = np.random.default_rng(3)
    n_users, n_items, n, rank, step = 30, 20, 600, 8, 0.05
    users = rng.integers(0, n_users, n).astype(np.int32)
    items = rng.integers(0, n_items, n).astype(np.int32)
    ratings = rng.integers(1, 6, n).astype(np.float32)
    L = (0.3 * rng.standard_normal((n_users, rank))).astype(np.float32)
    R = (0.3 * rng.standard_normal((n_items, rank))).astype(np.float32)
    if model == "biased":
        biases = (0.1 * rng.standard_normal(n_users)).astype(np.float32), \
            (0.1 * rng.standard_normal(n_items)).astype(np.float32)
        params = (L, R, *biases)
        data = (users, items, ratings, np.array([0.06, 0.02, ratings.mean()], np.float32))
    else:
        degree_reg = [(0.5 / np.maximum(np.bincount(keys, minlength=size), 1)).astype(np.float32)
                      for keys, size in ((users, n_users), (items, n_items))]
        params = (L, R)
        data = (users, items, ratings, *degree_reg)
    expected = [p.astype(np.float64) for p in params]
    initial = [p.copy() for p in params]
    loops = compile_loops(*factor_kernels(rank, model), fastmath=True)
    for epoch in range(3):
        order = rng.permutation(n).astype(np.int64)
        loops.run_spans(order, np.array([[0, n, n]], np.int64), 1, params, data,
                        np.array([step]), 0, 1, epoch)
        if model == "biased":
            mf_biased_sgd_epoch(users, items, ratings, *expected, float(data[3][2]), 0.06, 0.02,
                                step, order)
        else:
            mf_paper_sgd_epoch(users, items, ratings, *expected, *data[3:], step, order)
    for got, want in zip(params, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert all(not np.allclose(got, start, atol=1e-3) for got, start in zip(params, initial))


def test_mf_objective_builds_what_the_estimator_trains_for_users_and_benchmarks():
    from hogwild.problems.matrix_completion import mf_objective, rating_model

    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 60, 5000), rng.integers(0, 40, 5000)
    values = (3 + rng.standard_normal((60, 2)) @ rng.standard_normal((2, 40)))[users, items]
    biased = mf_objective(users, items, values, rank=4, seed=0)
    assert biased.name == "mf-biased-rank4" and [p.shape for p in biased.params] == [
        (60, 4), (40, 4), (60,), (40,)]
    np.testing.assert_allclose(biased.data[3], [0.06, 0.06, np.mean(values)], rtol=1e-6)
    result = fit(biased, epochs=30, step=rating_model("biased").step, scheduler="serial",
                 seed=0)
    L, R, bu, bi = result.params
    predicted = np.mean(values) + bu[users] + bi[items] + np.sum(L[users] * R[items], axis=1)
    assert np.sqrt(np.mean((predicted - values) ** 2)) < 0.25  # the planted rank-2 matrix
    paper = mf_objective(users, items, values, rank=4, model="paper", reg=6.0, seed=0)
    assert len(paper.params) == 2
    np.testing.assert_allclose(paper.data[3], 6.0 / np.bincount(users, minlength=60),
                               rtol=1e-6)
    with pytest.raises(HogwildError, match="unknown model 'plain'; choose one of: biased, "
                                           "paper"):
        mf_objective(users, items, values, model="plain")


def test_a_blocked_layout_of_ratings_on_disk_is_cached_for_the_next_fit(tmp_path, monkeypatch):
    """The second fit with the same seed and grid reads the layout instead of making
    it, and trains bitwise as the first; a damaged entry is made again."""
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.phases import PhaseLog, recording

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    train, test, _ = make_jumbo(400, 300, 30_000, rank=3, seed=1)
    fits = []
    for _ in range(2):
        with recording(PhaseLog()) as log:
            model = MatrixFactorization(rank=3, epochs=3, scheduler="blocked", random_state=7,
                                        workers=2, shuffle_ratings=False).fit(train, test)
        fits.append((model, list(log.seconds)))
    assert "block layout" in fits[0][1] and "block layout" not in fits[1][1]
    assert "read cached layout" in fits[1][1]
    (entry,) = (tmp_path / "layouts").iterdir()
    for a, b in ((fits[0][0].user_factors_, fits[1][0].user_factors_),
                 (fits[0][0].item_bias_, fits[1][0].item_bias_),
                 (fits[0][0].user_ids_, fits[1][0].user_ids_)):
        np.testing.assert_array_equal(a, b)
    os.truncate(entry / "values.npy", 1000)
    with pytest.warns(UserWarning, match=r"the block layout cached in .* is damaged"):
        again = MatrixFactorization(rank=3, epochs=3, scheduler="blocked", random_state=7,
                                    workers=2, shuffle_ratings=False).fit(train, test)
    np.testing.assert_array_equal(again.user_factors_, fits[0][0].user_factors_)
    other = MatrixFactorization(rank=3, epochs=1, scheduler="blocked", random_state=8, workers=2,
                                shuffle_ratings=False).fit(train)
    assert [p.name for p in (tmp_path / "layouts").iterdir()] == [entry.name]  # replaced
    assert other.history_[0].objective != fits[0][0].history_[0].objective


# --- issue 31: predictions on the rating scale, cold start ------------------------------

def _scaled_ratings(n_users=60, n_items=40, seed=0):
    """Ratings on a 1-5 scale, many at its ends (where raw predictions overshoot)."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n_users, 3000)
    items = rng.integers(0, n_items, 3000)
    taste = rng.normal(0, 1.5, n_users)[users] + rng.normal(0, 1.5, n_items)[items]
    return users, items, np.clip(np.round(3 + taste), 1, 5).astype(np.float32)


def test_predictions_are_clipped_to_the_training_scale_and_the_recorded_rmse_is_predicts():
    users, items, values = _scaled_ratings()
    train, test = slice(0, 2500), slice(2500, None)
    options = dict(rank=8, epochs=30, workers=1, random_state=0, step=0.05)
    model = MatrixFactorization(**options).fit(
        (users[train], items[train], values[train]),
        eval_set=(users[test], items[test], values[test]))
    raw = MatrixFactorization(clip=False, **options).fit((users[train], items[train],
                                                          values[train]))
    assert model.rating_range_ == (1.0, 5.0)
    every_pair = np.meshgrid(np.arange(60), np.arange(40))
    clipped, unclipped = (m.predict(every_pair[0].ravel(), every_pair[1].ravel())
                          for m in (model, raw))
    assert unclipped.max() > 5 and unclipped.min() < 1  # the overshoot clipping removes
    np.testing.assert_array_equal(clipped, np.clip(unclipped, 1, 5))
    recorded = model.history_[-1].metrics["test_rmse"]
    assert recorded == pytest.approx(rmse(model.predict(users[test], items[test]),
                                          values[test]), rel=1e-5)


def test_an_unseen_user_gets_the_items_an_unseen_user_is_predicted_to_like(tmp_path):
    users, items, values = _scaled_ratings()
    model = MatrixFactorization(rank=8, epochs=5, workers=1,
                                random_state=0).fit((users, items, values))
    with pytest.warns(UserWarning, match="^user id 'new' was never seen in training; "
                                         "recommending the items an unseen user"):
        ids, scores = model.recommend("new", n=5)
    fallback = model.global_mean_ + model.item_bias_.astype(np.float64)
    np.testing.assert_array_equal(ids, model.item_ids_[np.argsort(-fallback, kind="stable")[:5]])
    np.testing.assert_allclose(scores, np.sort(fallback)[::-1][:5], rtol=1e-6)
    with pytest.raises(HogwildError, match="^user id 'new' was never seen in training$"):
        model.recommend("new", unknown="error")
    model.save(tmp_path / "m.npz")
    loaded = MatrixFactorization.load(tmp_path / "m.npz")
    assert loaded.rating_range_ == (1.0, 5.0)
    with pytest.warns(UserWarning):
        np.testing.assert_array_equal(loaded.recommend("new", n=5)[0], ids)
