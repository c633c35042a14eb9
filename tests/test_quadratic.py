"""Quadratic features crossed by the SVM's kernels (Vowpal Wabbit's -q): the same
scores as the crossed features written out, Vowpal Wabbit's indices, and a lower
error where the planted model has interactions."""
import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import HogwildError
from hogwild.datasets.hashing import FNV_PRIME, hash_text
from hogwild.datasets.vw import load_vw
from hogwild.problems.sparse_svm import SparseSVM


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))


def planted(path, rows, seed, users=40, ads=40):
    """Rows of two users and two ads whose labels hang mostly on (user, ad) pairs."""
    rng = np.random.default_rng(seed)
    model = np.random.default_rng(7)
    wu, wa = model.normal(size=users), model.normal(size=ads)
    pair = model.normal(size=(users, ads)) * 1.5
    lines = []
    for _ in range(rows):
        u, a = rng.integers(0, users, 2), rng.integers(0, ads, 2)
        logit = 0.3 * (wu[u].sum() + wa[a].sum()) + 0.5 * pair[np.ix_(u, a)].sum()
        label = 1 if rng.random() < 1 / (1 + np.exp(-logit)) else -1
        lines.append(f"{label} |user {' '.join(f'u{i}' for i in u)} "
                     f"|ad {' '.join(f'a{j}' for j in a)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def written_out(data):
    """X with each row's crossed features appended as columns of the same hash
    space: what the kernels must score without storing it."""
    c = data.crossings
    sides = len(c.letters)
    rows, cols, vals = [], [], []
    for e in range(data.X.shape[0]):
        for a, b in c.pairs:
            first = range(c.offsets[e * sides + a], c.offsets[e * sides + a + 1])
            for i in first:
                second = range(i if a == b else c.offsets[e * sides + b],
                               c.offsets[e * sides + b + 1])
                for k in second:
                    rows.append(e)
                    cols.append(((FNV_PRIME * int(c.indices[i])) ^ int(c.indices[k])) & c.mask)
                    vals.append(c.values[i] * c.values[k])
    crossed = sp.csr_matrix((vals, (rows, cols)), shape=data.X.shape, dtype=np.float64)
    return data.X.astype(np.float64) + crossed


def test_crossed_scores_are_those_of_the_features_written_out(tmp_path):
    path = tmp_path / "t.vw"
    path.write_text("1 |user a b:2 |ad x |user c\n-1 |ad y z:0.5 |user d\n1 |ad x\n"
                    "-1 |user a\n")
    data = load_vw(path, hash_bits=12, quadratic=["ua", "aa"])
    model = SparseSVM(epochs=3, random_state=0, workers=1).fit(data.X, data.y,
                                                              crossings=data.crossings)
    explicit = written_out(data) @ model.coef_.astype(np.float64) + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(data.X, data.crossings), explicit,
                               rtol=1e-5, atol=1e-6)
    # the first row's user-ad index is Vowpal Wabbit's
    mask = (1 << 12) - 1
    a = hash_text("a", hash_text("user")) & mask
    x = hash_text("x", hash_text("ad")) & mask
    assert written_out(data)[0, ((FNV_PRIME * a) ^ x) & mask] != 0


def test_quadratic_pairs_lower_the_error_of_a_model_with_interactions(tmp_path):
    train = load_vw(planted(tmp_path / "train.vw", 20000, 1), hash_bits=16, quadratic=["ua"])
    test = load_vw(planted(tmp_path / "test.vw", 5000, 2), hash_bits=16, quadratic=["ua"])
    errors = {}
    for crossed in (False, True):
        model = SparseSVM(epochs=5, random_state=0).fit(
            train.X, train.y, crossings=train.crossings if crossed else None,
            eval_set=(test.X, test.y, test.crossings) if crossed else (test.X, test.y))
        errors[crossed] = 1 - model.score(test.X, test.y, test.crossings if crossed else None)
        assert errors[crossed] == pytest.approx(model.history_[-1].metrics["test_error"])
    assert errors[True] < errors[False] - 0.08, errors


def test_a_crossed_model_saves_and_asks_for_crossings(tmp_path):
    data = load_vw(planted(tmp_path / "t.vw", 2000, 3), hash_bits=12, quadratic=["ua"])
    model = SparseSVM(epochs=2, random_state=0).fit(data.X, data.y, crossings=data.crossings)
    model.save(tmp_path / "m.npz")
    loaded = SparseSVM.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict(data.X, data.crossings),
                                  model.predict(data.X, data.crossings))
    with pytest.raises(HogwildError, match=r"fitted with quadratic features \(ua\): give the "
                                           r"rows' crossings"):
        loaded.predict(data.X)
    plain = load_vw(tmp_path / "t.vw", hash_bits=12, quadratic=["au", "uu"])
    with pytest.raises(HogwildError, match="the crossings cross au, uu; the model was fitted "
                                           "with ua"):
        model.predict(plain.X, plain.crossings)
    with pytest.raises(HogwildError, match="partial_fit trains rows without quadratic"):
        model.partial_fit(data.X, data.y)
