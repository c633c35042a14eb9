"""SparseSVM as scikit-learn's users meet it (issue 31): every check of
scikit-learn's check_estimator, labels of any type through classes_, array-likes
and pandas frames through scikit-learn's validation, predict_proba for the
logistic loss only, NotFittedError; and the same estimator without scikit-learn."""
import sys
import warnings

import numpy as np
import pytest

from hogwild import HogwildError
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.problems.sparse_svm import SparseSVM

sklearn = pytest.importorskip("sklearn")
from sklearn.exceptions import DataConversionWarning, NotFittedError  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


# seed=0: a fit is then reproducible where scikit-learn fits twice and compares
# (check_fit_idempotent). check_pipeline_consistency is skipped by scikit-learn
# itself through the estimator's non_deterministic tag: with several workers,
# Hogwild! is reproducible only in distribution.
@parametrize_with_checks([SparseSVM(seed=0), SparseSVM(seed=0, loss="logistic")])
def test_scikit_learn_check(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def dense():
    X, y = make_sparse_classification(n_samples=600, n_features=30, nnz_per_row=8, seed=5)
    return X.toarray(), y


def serial(**params):
    return SparseSVM(epochs=5, workers=1, seed=0, **params)


@pytest.mark.parametrize("negative,positive", [("ham", "spam"), (1, 2), (False, True),
                                               (-3.0, 7.0)])
def test_any_two_labels_are_classes_and_predict_returns_them(dense, negative, positive):
    X, y = dense
    labels = np.where(y > 0, positive, negative)
    model = serial().fit(X, labels)
    reference = serial().fit(X, np.where(y > 0, 1, -1))
    assert model.classes_.tolist() == [negative, positive]
    np.testing.assert_array_equal(model.coef_, reference.coef_)  # the same problem
    predicted = model.predict(X)
    assert predicted.dtype == labels.dtype
    np.testing.assert_array_equal(predicted == positive, reference.predict(X) == 1)
    assert model.score(X, labels) == reference.score(X, np.where(y > 0, 1, -1))


def test_eval_set_labels_must_be_the_training_classes(dense):
    X, y = dense
    labels = np.where(y > 0, "spam", "ham")
    model = serial().fit(X, labels, eval_set=(X, labels))
    assert model.history_[-1].metrics["test_error"] == pytest.approx(1 - model.score(X, labels))
    with pytest.raises(HogwildError, match=r"^labels must be the classes the model was fitted "
                                           r"with \('ham', 'spam'\); got 'eggs'$"):
        serial().fit(X, labels, eval_set=(X, np.where(y > 0, "spam", "eggs")))


def test_lists_and_pandas_frames_train_the_same_model_as_arrays(dense):
    pandas = pytest.importorskip("pandas")
    X, y = dense
    reference = serial().fit(X, y)
    for given in (X.tolist(), pandas.DataFrame(X)):
        model = serial().fit(given, pandas.Series(y) if not isinstance(given, list) else
                             list(y))
        np.testing.assert_array_equal(model.coef_, reference.coef_)
        np.testing.assert_array_equal(model.predict(given), reference.predict(X))


def test_a_column_vector_y_warns_as_scikit_learn_does_and_trains_alike(dense):
    X, y = dense
    with pytest.warns(DataConversionWarning, match="^A column-vector y was passed when a 1d "
                                                   "array was expected"):
        model = serial().fit(X, y[:, None])
    np.testing.assert_array_equal(model.coef_, serial().fit(X, y).coef_)


def test_predict_proba_is_the_logistic_models_and_missing_for_the_hinge_loss(dense):
    X, y = dense
    model = serial(loss="logistic").fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    expected = 1 / (1 + np.exp(-model.decision_function(X).astype(np.float64)))
    np.testing.assert_allclose(proba[:, 1], expected, rtol=1e-12)
    np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba), rtol=1e-12)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    hinge = serial().fit(X, y)
    assert not hasattr(hinge, "predict_proba") and not hasattr(hinge, "predict_log_proba")
    with pytest.raises(AttributeError, match=r"^predict_proba is for loss='logistic' \(a "
                                             r"probability model\); this SparseSVM has "
                                             r"loss='hinge'$"):
        hinge.predict_proba(X)


def test_methods_before_fit_raise_scikit_learns_not_fitted_error(dense):
    X, _ = dense
    for method in ("predict", "decision_function", "score"):
        with pytest.raises(NotFittedError, match=r"^this SparseSVM is not fitted yet; call "
                                                 r"fit\(X, y\) first$"):
            getattr(SparseSVM(), method)(X) if method != "score" else SparseSVM().score(X, X[:, 0])
    with pytest.raises(NotFittedError):
        SparseSVM(loss="logistic").predict_proba(X)


def test_without_scikit_learn_the_estimator_still_works_with_its_own_errors(dense,
                                                                            monkeypatch):
    X, y = dense
    reference = serial().fit(X, y)
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn: ImportError
    model = serial().fit(X.tolist(), list(y))  # numpy.asarray reads a list
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    with pytest.raises(HogwildError, match=r"^this SparseSVM is not fitted yet") as error:
        SparseSVM().predict(X)
    assert isinstance(error.value, AttributeError)
    with pytest.raises(HogwildError, match=r"^X must be 2-dimensional, got shape \(600,\)$"):
        serial().fit(X[:, 0], y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="^A column-vector y"):
            serial().fit(X, y[:, None])


def test_a_model_of_string_labels_from_a_pandas_column_saves_and_loads(dense, tmp_path):
    pandas = pytest.importorskip("pandas")
    X, y = dense
    labels = pandas.Series(np.where(y > 0, "spam", "ham"), dtype=object)
    model = serial().fit(X, labels)
    assert model.classes_.dtype.kind == "U"  # not objects: a model file holds no pickles
    model.save(tmp_path / "m.npz")
    loaded = SparseSVM.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
