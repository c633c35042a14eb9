"""The sparse SVM problem: kernels vs a NumPy reference, accuracy vs LIBLINEAR,
hogwild vs serial, the estimator API and input errors."""
import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import HogwildError
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.problems.sparse_svm import (SparseSVM, as_csr, binary_labels, svm_objective)
from hogwild.schedulers import shuffled_runs
from hogwild import fit
from reference.naive import svm_objective_value, svm_sgd_epoch


@pytest.fixture(scope="module")
def small():
    X, y = make_sparse_classification(n_samples=3000, n_features=400, nnz_per_row=12, seed=3)
    return as_csr(X), y


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_serial_kernel_matches_numpy_reference(small, loss):
    X, y = small
    labels, _ = binary_labels(y, X.shape[0])
    reg, step, epochs, seed = 1e-3, 0.3, 3, 11
    objective = svm_objective(X, labels, loss, reg, seed=seed)
    result = fit(objective, epochs=epochs, step=step, decay=1.0, step_schedule="geometric",
                 scheduler="serial", seed=seed)
    w = np.zeros(X.shape[1])
    rng = np.random.default_rng(seed)
    salt = int(objective.data[5][0])
    for epoch in range(epochs):
        order = shuffled_runs(X.shape[0], 1, rng)
        w = svm_sgd_epoch(X, labels, w, reg, step, order, loss, epoch, salt)
    np.testing.assert_allclose(result.params[0], w, rtol=1e-4, atol=1e-5)
    assert result.objective == pytest.approx(
        svm_objective_value(X, labels, result.params[0], reg, loss), rel=1e-5)


def liblinear_error(train, test, C):
    from liblinear.liblinearutil import predict, train as ll_train
    model = ll_train(train.y, train.X.astype(np.float64), f"-s 2 -c {C} -q")
    _, (accuracy, _, _), _ = predict(test.y, test.X.astype(np.float64), model, "-q")
    return 1.0 - accuracy / 100.0


@pytest.mark.parametrize("dataset,reg", [("a9a", 1e-4), ("news20", 5e-5)])
def test_serial_svm_matches_liblinear_test_error(dataset, reg, request):
    """Within 0.5 percentage points of LIBLINEAR's L2-loss SVM (default C=1)."""
    pytest.importorskip("liblinear")
    train, test = request.getfixturevalue(dataset)
    model = SparseSVM(reg=reg, epochs=20, scheduler="serial", seed=0)
    model.fit(train.X, train.y, eval_set=(test.X, test.y))
    ours = model.history_[-1].metrics["test_error"]
    reference = liblinear_error(train, test, C=1.0)
    assert abs(ours - reference) <= 0.005, (ours, reference)
    assert 1 - model.score(test.X, test.y) == pytest.approx(ours)


@pytest.mark.parametrize("loss,solver", [("hinge", 3), ("logistic", 7)])
def test_converges_to_liblinear_optimum(a9a, loss, solver):
    """Our objective after SGD is within 0.5% of the exact optimum LIBLINEAR finds
    for the same objective (dual solvers, tight tolerance, no bias term)."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    train, _ = a9a
    X = as_csr(train.X)
    labels, _ = binary_labels(train.y, X.shape[0])
    reg = 1e-3
    C = 1.0 / (X.shape[0] * reg)
    model = liblinear.train(labels.astype(np.float64), X.astype(np.float64),
                            f"-s {solver} -c {C} -e 0.0001 -q")
    w_opt = np.array([model.w[i] for i in range(X.shape[1])]) * model.get_labels()[0]
    optimum = svm_objective_value(X, labels, w_opt, reg, loss)
    ours = SparseSVM(loss=loss, reg=reg, epochs=30, decay=0.85, scheduler="serial",
                     seed=0).fit(X, train.y)
    value = svm_objective_value(X, labels, ours.coef_, reg, loss)
    assert optimum <= value <= optimum * 1.005, (value, optimum)
    assert ours.history_[-1].objective == pytest.approx(value, rel=1e-4)


@pytest.mark.parametrize("dataset", ["news20", "imdb"])
def test_two_hogwild_workers_reach_the_serial_objective(dataset, request):
    train, _ = request.getfixturevalue(dataset)
    objectives = {}
    for scheduler, workers in (("serial", 1), ("hogwild", 2)):
        model = SparseSVM(reg=1e-4, epochs=20, scheduler=scheduler, workers=workers, seed=0)
        objectives[scheduler] = model.fit(train.X, train.y).history_[-1].objective
    assert objectives["hogwild"] == pytest.approx(objectives["serial"], rel=0.01)


def test_serial_estimator_is_reproducible(small):
    X, y = small
    a = SparseSVM(scheduler="serial", seed=5, epochs=3).fit(X, y).coef_
    b = SparseSVM(scheduler="serial", seed=5, epochs=3).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)


def test_labels_zero_one_and_dense_input(small):
    X, y = small
    y01 = (y > 0).astype(int)
    model = SparseSVM(epochs=5, seed=0).fit(X.toarray(), y01)
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert set(np.unique(model.predict(X))) <= {0, 1}
    assert model.score(X, y01) > 0.8
    assert model.decision_function(X).shape == (X.shape[0],)


def test_estimator_params_roundtrip():
    model = SparseSVM(reg=0.5, workers=2)
    assert model.get_params()["reg"] == 0.5
    assert model.set_params(loss="logistic") is model and model.loss == "logistic"
    assert repr(model) == "SparseSVM(loss='logistic', reg=0.5, workers=2)"
    with pytest.raises(HogwildError, match="unknown parameter 'alpha' for SparseSVM"):
        model.set_params(alpha=1)


def test_works_in_scikit_learn_pipelines_and_cross_validation(small):
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler
    X, y = small
    pipeline = make_pipeline(MaxAbsScaler(), SparseSVM(epochs=5, seed=0))
    scores = cross_val_score(pipeline, X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.75
    assert clone(SparseSVM(reg=0.1)).get_params()["reg"] == 0.1


@pytest.mark.parametrize("make_input,message", [
    (lambda X, y: (X, np.r_[y, 1.0]),
     "X and y have different lengths: 3000 rows in X, 3001 labels in y"),
    (lambda X, y: (X, np.where(y > 0, 2.0, 0.5)),
     r"labels must be binary, \{-1, \+1\} or \{0, 1\}; found 2 distinct values: 0.5, 2.0"),
    (lambda X, y: (X, np.arange(3000)),
     r"labels must be binary, .* found 3000 distinct values: 0, 1, 2, 3, 4, \.\.\."),
    (lambda X, y: (X, np.ones(3000)), "labels must contain both classes; all 3000 are 1.0"),
    (lambda X, y: (sp.csr_matrix((0, 5)), y[:0]), r"empty data: X has shape \(0, 5\)"),
    (lambda X, y: (sp.csr_matrix((3000, 0)), y), r"empty data: X has shape \(3000, 0\)"),
    (lambda X, y: ([[1, 2]], y), "X must be a scipy.sparse matrix or numpy array, got list"),
    (lambda X, y: (_with_value(X, np.nan), y), "X contains NaN or Inf values"),
    (lambda X, y: (_with_value(X, np.inf), y), "X contains NaN or Inf values"),
    (lambda X, y: (X, np.where(y > 0, 1.0, np.nan)), "y contains NaN or Inf values"),
])
def test_bad_input_messages(small, make_input, message):
    X, y = make_input(*small)
    with pytest.raises(HogwildError, match=message):
        SparseSVM(epochs=1).fit(X, y)


@pytest.mark.parametrize("params,message", [
    ({"loss": "squared"}, "unknown loss 'squared'; choose one of: hinge, logistic"),
    ({"reg": -1.0}, "reg must be a finite number >= 0, got -1.0"),
    ({"step": -0.5}, "step must be a finite number > 0, got -0.5"),
    ({"workers": 0}, "workers must be an integer >= 1, got 0"),
    ({"scheduler": "fast"}, "unknown scheduler 'fast'; choose one of: hogwild, locked, serial, "
                            "colored, cyclades"),
])
def test_bad_parameter_messages(small, params, message):
    with pytest.raises(HogwildError, match=message):
        SparseSVM(epochs=1, **params).fit(*small)


def test_predict_checks_fit_and_feature_count(small):
    X, y = small
    with pytest.raises(HogwildError, match=r"not fitted yet; call fit\(X, y\) first"):
        SparseSVM().predict(X)
    model = SparseSVM(epochs=1).fit(X, y)
    with pytest.raises(HogwildError, match="X has 399 features, but the model was fitted "
                                           "with 400"):
        model.predict(X[:, :399])


def _with_value(X, value):
    X = X.copy()
    X.data[5] = value
    return X


@pytest.mark.parametrize("scheduler", ["colored", "cyclades"])
def test_conflict_free_schedulers_are_bitwise_reproducible_across_workers(scheduler):
    from hogwild.datasets.synthetic import make_sparse_classification
    X, y = make_sparse_classification(n_samples=3000, n_features=20_000, nnz_per_row=6,
                                      zipf=0.3, seed=3)  # no feature in > 1/16 of the rows
    fits = [SparseSVM(scheduler=scheduler, workers=w, epochs=3, seed=s).fit(X, y).coef_
            for w, s in ((1, 0), (2, 0), (2, 1))]
    np.testing.assert_array_equal(fits[0], fits[1])
    assert not np.array_equal(fits[0], fits[2])
