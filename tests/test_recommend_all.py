"""Top-k for many users at once: recommend_all gives, row for row, what recommend
gives one user (the same items, seen ones left out, cold users the cold start's),
on any worker count; its edge cases are named; similar_users is the brute-force
cosine ranking."""
import numpy as np
import pytest
import scipy.sparse as sp

from hogwild.errors import HogwildError
from hogwild.problems.matrix_completion import ImplicitFactorization, MatrixFactorization

from test_implicit import planted


@pytest.fixture(scope="module")
def implicit_model():
    train, _ = planted(seed=7)
    return ImplicitFactorization(random_state=0, workers=1, epochs=3).fit(train)


@pytest.mark.parametrize("exclude_seen", [True, False])
def test_implicit_recommend_all_is_recommend_for_every_user(implicit_model, exclude_seen):
    model = implicit_model
    items, scores = model.recommend_all(n=15, exclude_seen=exclude_seen)
    assert items.shape == scores.shape == (model.user_factors_.shape[0], 15)
    for user in range(0, items.shape[0], 7):
        expected_items, expected_scores = model.recommend(user, n=15, exclude_seen=exclude_seen)
        assert np.array_equal(items[user], expected_items)
        assert np.allclose(scores[user], expected_scores, rtol=1e-5, atol=1e-5)
    for workers in (2, 3):
        model.set_params(workers=workers)
        assert np.array_equal(model.recommend_all(n=15, exclude_seen=exclude_seen)[0], items)
    model.set_params(workers=1)


def test_implicit_recommend_all_pads_short_rows_and_gives_cold_users_the_popular_items():
    interactions = sp.csr_matrix(np.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]))
    model = ImplicitFactorization(random_state=0, workers=1, epochs=2, rank=2).fit(interactions)
    with pytest.warns(UserWarning, match="^2 of 4 users have no training interactions; "
                                         "recommending them the most popular items$"):
        items, scores = model.recommend_all(users=[0, 1, 2, 9], n=3)
    assert items[0].tolist()[1:] == [-1, -1] and items[0, 0] == 3
    assert scores[0, 1] == -np.inf
    assert items[2].tolist() == items[3].tolist() == [0, 1, 2]  # counts 2, 1, 1
    assert scores[2].tolist() == [2.0, 1.0, 1.0]
    with pytest.raises(HogwildError, match="^users must be user indices >= 0, got -1$"):
        model.recommend_all(users=[0, -1])


def test_similar_users_are_the_nearest_by_cosine(implicit_model):
    U = implicit_model.user_factors_.astype(np.float64)
    users, cosines = implicit_model.similar_users(4, n=5)
    expected = U @ U[4] / (np.linalg.norm(U, axis=1) * np.linalg.norm(U[4]))
    expected[4] = -np.inf
    assert np.array_equal(users, np.argsort(-expected, kind="stable")[:5])
    assert np.allclose(cosines, np.sort(expected)[::-1][:5])
    with pytest.raises(HogwildError, match="^user must be a user index from 0 to 399, "
                                           "got 400$"):
        implicit_model.similar_users(400)


@pytest.fixture(scope="module")
def explicit_model():
    rng = np.random.default_rng(1)
    users = rng.choice(np.array(["ann", "bob", "cy", "di", "ed", "flo"]), 300)
    items, values = rng.integers(100, 160, 300), rng.integers(1, 6, 300).astype(np.float32)
    return MatrixFactorization(rank=4, random_state=0, workers=1, epochs=3).fit(
        (users, items, values))


def test_explicit_recommend_all_is_recommend_for_every_user(explicit_model):
    model = explicit_model
    items, scores = model.recommend_all(n=8)
    assert items.shape == (6, 8) and items.dtype == model.item_ids_.dtype
    for row, user in enumerate(model.user_ids_):
        expected_items, expected_scores = model.recommend(user, n=8)
        assert np.array_equal(items[row], expected_items)
        assert np.allclose(scores[row], expected_scores, rtol=1e-5)
    with pytest.warns(UserWarning, match="^1 of 2 users were never seen in training"):
        items, scores = model.recommend_all(["cy", "zed"], n=8)
    with pytest.warns(UserWarning):
        expected_items, expected_scores = model.recommend("zed", n=8)
    assert np.array_equal(items[1], expected_items)
    assert np.allclose(scores[1], expected_scores)


@pytest.mark.parametrize("call,message", [
    (lambda m: m.recommend_all(["zed"], unknown="error"),
     r"^user id 'zed' was never seen in training$"),
    (lambda m: m.recommend_all(n=60), r"^user id '[a-z]+' has fewer than n=60 items to rank; "
                                      r"pass a smaller n or exclude_seen=False$"),
    (lambda m: m.recommend_all(n=61, exclude_seen=False),
     r"^user id '[a-z]+' has fewer than n=61 items to rank; pass a smaller n$"),
])
def test_explicit_recommend_all_names_what_it_cannot_give(explicit_model, call, message):
    with pytest.raises(HogwildError, match=message):
        call(explicit_model)


@pytest.mark.parametrize("exclude_seen", [True, False])
def test_approximate_top_k_finds_the_exact_items_and_never_a_seen_one(implicit_model,
                                                                      exclude_seen):
    """faiss's HNSW index on a 300-item catalogue: at least 95% of the exact top 10,
    no seen item, scores the exact scores of the items it returns."""
    pytest.importorskip("faiss", reason="faiss-cpu (hogwild[ann]) is not installed")
    model = implicit_model
    exact, _ = model.recommend_all(n=10, exclude_seen=exclude_seen)
    items, scores = model.recommend_all(n=10, exclude_seen=exclude_seen, approximate=True)
    found = np.mean([np.intersect1d(a, b).size / 10 for a, b in zip(items, exact)])
    assert found >= 0.95, found
    indptr, seen = model._seen
    U, V, b = model.user_factors_, model.item_factors_, model.item_bias_
    for user in range(0, items.shape[0], 11):
        if exclude_seen:
            assert not set(items[user]) & set(seen[indptr[user]:indptr[user + 1]].tolist())
        assert np.allclose(scores[user], V[items[user]] @ U[user] + b[items[user]], atol=1e-4)


def test_approximate_top_k_of_ratings_is_the_exact_one_on_a_small_catalogue(explicit_model):
    pytest.importorskip("faiss", reason="faiss-cpu (hogwild[ann]) is not installed")
    exact, scores = explicit_model.recommend_all(n=5)
    approximate, approximate_scores = explicit_model.recommend_all(n=5, approximate=True)
    assert np.array_equal(exact, approximate)
    assert np.allclose(scores, approximate_scores, atol=1e-4)
