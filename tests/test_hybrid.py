"""The hybrid model (user and item features): items held out of training entirely
are ranked from their features above what their features predict of popularity,
on planted data and on MovieLens 100K beside the model without features; features
do not cost warm users; the explicit loss predicts cold items' ratings; bad input
is refused by name."""
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from hogwild.datasets.movielens import (movielens_1m_item_features,
                                        movielens_100k_item_features,
                                        movielens_100k_user_features)
from hogwild.datasets.ratings import interactions_from_ratings
from hogwild.datasets.registry import load_ratings
from hogwild.errors import HogwildError
from hogwild.paths import shared_data_dir
from hogwild.problems.matrix_completion import HybridFactorization, ImplicitFactorization

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from bench_hybrid import cold_split, feature_popularity, planted  # noqa: E402

ML_100K = shared_data_dir() / "movielens-100k"
needs_ml_100k = pytest.mark.skipif(not (ML_100K / "u.item").is_file(),
                                   reason="MovieLens 100K (u.data, u.item, u.user) is not in "
                                          "the shared data folder (HOGWILD_DATA)")


def cold_precision(model, train, test, warm_features, cold_features, users=None):
    model.fit(train, user_features=users, item_features=warm_features)
    cold = model.add_items(cold_features)
    assert cold.tolist() == list(range(train.shape[1], train.shape[1] + cold.size))
    from bench_hybrid import measures
    return measures(model.user_factors_, model.item_factors_[cold], model.item_bias_[cold],
                    test)["precision@10"]


@pytest.fixture(scope="module")
def planted_split():
    ratings, features = planted(0)
    train, test, warm, cold, _, item_ids = cold_split(ratings, 0)
    items = features(item_ids)
    return train, test, items[warm], items[cold]


@pytest.mark.parametrize("loss", ["warp", "bpr"])
def test_cold_items_are_ranked_by_their_features_on_planted_groups(planted_split, loss):
    train, test, warm, cold = planted_split
    baseline = feature_popularity(train, test, warm, cold)["precision@10"]
    found = cold_precision(HybridFactorization(loss=loss, random_state=0, workers=1),
                           train, test, warm, cold)
    # each user's group's items are a sixth of the cold ones, liked 15 times as often
    assert found > 0.12 > 2 * baseline


def test_the_objective_falls_for_every_loss(planted_split):
    train, _, warm, _ = planted_split
    for loss in ("warp", "bpr", "squared"):
        model = HybridFactorization(loss=loss, random_state=1, workers=2, epochs=8)
        model.fit(train, item_features=warm)
        objective = [record.objective for record in model.history_]
        assert objective[-1] < 0.9 * objective[0], (loss, objective)


def test_a_new_user_is_served_from_their_features():
    rng = np.random.default_rng(3)
    groups, n_users, n_items = 4, 400, 200
    user_group, item_group = rng.integers(0, groups, n_users), rng.integers(0, groups, n_items)
    likes = rng.random((n_users, n_items)) < np.where(
        user_group[:, None] == item_group[None, :], 0.3, 0.01)
    one_hot = sp.csr_matrix(np.eye(groups, dtype=np.float32)[user_group])
    model = HybridFactorization(random_state=0, workers=1).fit(
        sp.csr_matrix(likes.astype(np.float32)), user_features=one_hot)
    for group in range(groups):
        new = model.add_users(np.eye(groups, dtype=np.float32)[[group]])
        with np.errstate(all="ignore"):
            items, _ = model.recommend(int(new[0]), n=10)
        assert (item_group[items] == group).mean() >= 0.8
    assert model.user_factors_.shape[0] == n_users + groups
    assert np.all(model.recommend_all(users=[n_users], n=5)[0] >= 0)  # no popularity warning


@needs_ml_100k
def test_movielens_cold_items_beat_their_feature_popularity():
    ratings = load_ratings("ml-100k")
    train, test, warm, cold, user_ids, item_ids = cold_split(ratings, 0)
    items = movielens_100k_item_features(item_ids)[0]
    users = movielens_100k_user_features(user_ids)[0]
    baseline = feature_popularity(train, test, items[warm], items[cold])["precision@10"]
    found = cold_precision(HybridFactorization(item_identity=False, random_state=0, workers=1),
                           train, test, items[warm], items[cold], users)
    assert found > baseline + 0.04  # 0.159 against 0.103 here


@needs_ml_100k
def test_features_do_not_cost_warm_users_their_precision():
    data = interactions_from_ratings(load_ratings("ml-100k"), seed=0)
    items = movielens_100k_item_features(data.item_ids)[0]
    users = movielens_100k_user_features(data.user_ids)[0]
    plain = ImplicitFactorization(random_state=0, workers=1).fit(data.train).score(data.test)
    hybrid = HybridFactorization(random_state=0, workers=1).fit(data.train, users, items)
    assert hybrid.score(data.test) > plain - 0.01  # 0.2263 against 0.2256 here


@needs_ml_100k
def test_explicit_ratings_with_features_beat_the_model_without():
    ratings = load_ratings("ml-100k")
    user_ids, u = np.unique(ratings.users, return_inverse=True)
    item_ids, i = np.unique(ratings.items, return_inverse=True)
    test = np.random.default_rng(0).random(u.size) < 0.2
    train = sp.csr_matrix((ratings.values[~test], (u[~test], i[~test])),
                          shape=(user_ids.size, item_ids.size))
    errors = []
    for features in ((None, None), (movielens_100k_user_features(user_ids)[0],
                                    movielens_100k_item_features(item_ids)[0])):
        model = HybridFactorization(loss="squared", random_state=0, workers=1)
        model.fit(train, *features)
        errors.append(np.sqrt(np.mean((model.predict(u[test], i[test])
                                       - ratings.values[test]) ** 2)))
    assert errors[1] < errors[0] - 0.01 and errors[1] < 0.91  # 0.894 against 0.913 here


def test_movielens_feature_files_are_read_by_id(tmp_path):
    (tmp_path / "u.genre").write_text("unknown|0\nAction|1\nComedy|2\n")
    (tmp_path / "u.item").write_text("7|A (1995)|01-Jan-1995||url|0|1|1\r\n"
                                     "9|B|||url|1|0|0\n", encoding="latin-1")
    (tmp_path / "u.occupation").write_text("artist\nwriter\n")
    (tmp_path / "u.user").write_text("3|17|F|writer|0\n5|60|M|artist|1\n")
    items, names = movielens_100k_item_features([9, 7], tmp_path)
    assert names[:3] == ["unknown", "Action", "Comedy"] and names[3] == "year<1960"
    assert items.toarray()[0].tolist()[:3] == [1, 0, 0] and items[0].nnz == 1  # no date
    assert items[1].indices.tolist() == [1, 2, 3 + 9]  # 1995's group: the tenth
    users, names = movielens_100k_user_features([5, 3], tmp_path)
    assert [names[c] for c in users[0].indices] == ["age>=56", "M", "artist"]
    assert [names[c] for c in users[1].indices] == ["age<18", "F", "writer"]
    with pytest.raises(HogwildError, match=r"^id 4 is not in .*u\.user$"):
        movielens_100k_user_features([4], tmp_path)
    (tmp_path / "u.user").write_text("3|17|X|writer|0\n")
    with pytest.raises(HogwildError, match=r"u\.user, line 1: not a MovieLens line: "):
        movielens_100k_user_features([3], tmp_path)
    (tmp_path / "movies.dat.gz").write_bytes(__import__("gzip").compress(
        b"1::Toy Story (1995)::Animation|Comedy\n2::Odd::Comedy\n"))
    items, names = movielens_1m_item_features([2, 1], tmp_path)
    assert items[0].indices.tolist() == [1] and names[:2] == ["Animation", "Comedy"]
    assert [names[c] for c in items[1].indices] == ["Animation", "Comedy", "year>=1995"]
    with pytest.raises(HogwildError, match=r"^cannot read .*u\.genre.*HOGWILD_DATA"):
        movielens_100k_item_features([1], tmp_path / "absent")


@pytest.mark.determinism
def test_a_seed_gives_the_same_model_bit_for_bit(planted_split):
    train, _, warm, _ = planted_split
    fitted = [HybridFactorization(random_state=5, scheduler="serial", epochs=3).fit(
        train, item_features=warm) for _ in range(2)]
    for name in ("user_factors_", "item_factors_", "item_bias_", "item_feature_factors_"):
        assert np.array_equal(getattr(fitted[0], name), getattr(fitted[1], name))


def test_bad_features_and_options_are_refused_by_name(planted_split):
    train, _, warm, _ = planted_split
    model = HybridFactorization(workers=1, epochs=1)
    cases = [
        (lambda: model.fit(train, item_features=warm[:5]),
         r"^item_features has 5 rows; the data has 320 items$"),
        (lambda: model.fit(train, user_features=-sp.identity(train.shape[0])),
         r"^user_features holds a weight that is negative, NaN or infinite; feature weights "
         r"must be finite and >= 0$"),
        (lambda: model.fit(train, item_features=np.full((320, 2), np.nan)),
         r"^item_features holds a weight that is negative"),
        (lambda: model.fit(train, item_features="genres"),
         r"^item_features must be a rows x features matrix"),
        (lambda: HybridFactorization(item_identity=False).fit(train),
         r"^item_identity=False needs item_features: without either, items have no "
         r"factors$"),
        (lambda: HybridFactorization(loss="hinge").fit(train), r"loss"),
        (lambda: HybridFactorization(normalize="yes").fit(train),
         r"^normalize must be True or False, got 'yes'$"),
        (lambda: model.fit(train.toarray()), r"^interactions must be a scipy.sparse"),
        (lambda: model.fit(sp.csr_matrix(train.shape, dtype=np.float32)),
         r"^empty data: interactions holds no entry > 0$"),
        (lambda: HybridFactorization(loss="squared").fit(
            sp.csr_matrix(([np.inf], ([0], [0])), shape=(2, 2))),
         r"^interactions holds a NaN or infinite rating$"),
        (lambda: model.add_items(warm), r"is not fitted yet"),
    ]
    for call, message in cases:
        with pytest.raises(HogwildError, match=message):
            call()
    model.fit(train, item_features=warm)
    with pytest.raises(HogwildError, match=r"^item_features has 3 features; the model was "
                                           r"fitted with 16$"):
        model.add_items(np.ones((2, 3)))
    with pytest.raises(HogwildError, match=r"^items must be a list of indices from 0 to 319$"):
        model.predict([0], [320])
    with pytest.raises(HogwildError, match=r"^users has 2 indices and items 1; predict takes "
                                           r"pairs$"):
        model.predict([0, 1], [0])
    with pytest.raises(HogwildError, match=r"^eval_set must be a scipy.sparse matrix of the "
                                           r"training data's shape"):
        HybridFactorization(epochs=1).fit(train, eval_set=train[:3])


def test_a_saved_model_serves_and_adds_items_as_the_fitted_one(planted_split, tmp_path):
    train, _, warm, cold = planted_split
    model = HybridFactorization(random_state=2, workers=1, epochs=2).fit(
        train, item_features=warm)
    model.save(tmp_path / "hybrid.npz")
    loaded = HybridFactorization.load(tmp_path / "hybrid.npz")
    assert np.array_equal(loaded.add_items(cold[:4]), model.add_items(cold[:4]))
    for user in (0, 7):
        assert np.array_equal(loaded.recommend(user)[0], model.recommend(user)[0])
    arrays = dict(np.load(tmp_path / "hybrid.npz"))
    arrays["item_feature_bias"] = arrays["item_feature_bias"][:3]
    np.savez(tmp_path / "edited.npz", **arrays)
    with pytest.raises(HogwildError, match=r"item_feature_bias is float32\[3\], expected "
                                           r"shape \[336\]"):
        HybridFactorization.load(tmp_path / "edited.npz")


def test_the_benchmark_quick_run_reports_every_model(quick_benchmark):
    _, report, table = quick_benchmark("bench_hybrid")
    run = report["ml_100k"]
    expected = {"hogwild-features", "hogwild-identity", "feature-popularity", "test-popularity"}
    assert expected <= set(run["results"]) and run["cold_items"] == 80
    for label, found in run["results"].items():
        assert 0 <= found["precision@10"] <= 1 and 0 <= found["auc"] <= 1, label
    assert run["results"]["hogwild-features"]["precision@10"] > \
        2 * run["results"]["feature-popularity"]["precision@10"]
    assert "| hogwild-features | " in table and "planted 600 x 400" in table
