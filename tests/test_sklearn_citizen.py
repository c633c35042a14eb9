"""SparseSVM as scikit-learn's users meet it (issue 31): every check of
scikit-learn's check_estimator, labels of any type through classes_, array-likes
and pandas frames through scikit-learn's validation, predict_proba for the
logistic loss only, NotFittedError; and the same estimator without scikit-learn."""
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import HogwildError
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.problems.sparse_svm import SparseSVM, as_csr, auto_step
from hogwild.steps import StepSchedule

sklearn = pytest.importorskip("sklearn")
from sklearn.exceptions import DataConversionWarning, NotFittedError  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


# At their defaults: scikit-learn seeds the estimator through random_state where a
# check fits twice and compares (check_fit_idempotent, check_supervised_y_2d), and
# its data are a few KiB, on which the default worker count is one (two racing
# workers are reproducible only in distribution, which the estimator's
# non_deterministic tag says, and for which scikit-learn skips only
# check_pipeline_consistency).
SGD_WEIGHTS = ("SGD: a sample of weight 2 makes one step twice as long where its "
               "repeat makes two steps at two times of the epoch, and a sample of weight "
               "0 still applies the regulariser's shrink; equal in expectation, not per "
               "run (scikit-learn expects this failure of its SGDClassifier too)")
EXPECTED_FAILURES = {"check_sample_weight_equivalence_on_dense_data": SGD_WEIGHTS,
                     "check_sample_weight_equivalence_on_sparse_data": SGD_WEIGHTS}


@parametrize_with_checks([SparseSVM(), SparseSVM(loss="logistic")],
                         expected_failed_checks=lambda estimator: EXPECTED_FAILURES)
def test_scikit_learn_check(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def dense():
    X, y = make_sparse_classification(n_samples=600, n_features=30, nnz_per_row=8, seed=5)
    return X.toarray(), y


def serial(**params):
    return SparseSVM(epochs=5, workers=1, random_state=0, **params)


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
    # log(exp(x)) for x near 0 is exact to an ulp of 1 (about 1.1e-16), not relatively
    np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba), rtol=1e-12,
                               atol=2.3e-16)
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
    with pytest.raises(HogwildError):  # and ours: one except clause catches every bad call
        SparseSVM().predict(X)


def test_values_that_are_not_numbers_are_one_line_and_the_type_error_scikit_learn_raises():
    with pytest.raises(TypeError) as error:
        SparseSVM(epochs=1).fit(np.array([[object()]] * 2), [0, 1])
    assert isinstance(error.value, HogwildError)
    assert str(error.value) == ("X holds values that are not numbers: float() argument must "
                                "be a string or a real number, not 'object'")


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


# --- sample_weight and class_weight ----------------------------------------------------

@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_weighted_kernel_matches_the_numpy_reference(loss):
    """The kernels keep a sample's weight in its label (sign: the class, size: the
    weight); the reference keeps weights apart."""
    from hogwild import fit
    from hogwild.problems.sparse_svm import (INTERCEPT_RATE, as_csr, binary_labels,
                                             intercept_of, svm_objective)
    from hogwild.schedulers import shuffled_runs
    from reference.naive import svm_sgd_epoch
    X, y = make_sparse_classification(n_samples=2000, n_features=300, nnz_per_row=10, seed=4)
    X = as_csr(X)
    labels, _ = binary_labels(y, X.shape[0])
    weights = np.random.default_rng(1).choice([0.0, 0.5, 1.0, 3.0], X.shape[0])
    objective = svm_objective(X, (labels * weights).astype(np.float32), loss, 1e-3, seed=7)
    result = fit(objective, epochs=3, step=0.3, decay=1.0, scheduler="serial", seed=7)
    w, b = np.zeros(X.shape[1]), np.zeros(1)
    rng, salt = np.random.default_rng(7), int(objective.data[5][0])
    for epoch in range(3):
        w = svm_sgd_epoch(X, labels, w, 1e-3, 0.3, shuffled_runs(X.shape[0], 1, rng), loss,
                          epoch, salt, b, INTERCEPT_RATE, weights)
    np.testing.assert_allclose(result.params[0], w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(intercept_of(result.params), b, rtol=1e-4, atol=1e-5)


def test_unit_weights_are_bitwise_no_weights_and_weight_2_is_half_the_reg_at_twice_the_step(
        dense):
    X, y = dense
    plain = serial(step=0.05).fit(X, y)
    np.testing.assert_array_equal(serial(step=0.05).fit(X, y, sample_weight=np.ones(600)).coef_,
                                  plain.coef_)
    np.testing.assert_array_equal(serial(step=0.05, class_weight={-1: 1, 1: 1.0}).fit(X, y).coef_,
                                  plain.coef_)
    # (1/n) sum 2 l_e + reg/2 |w|^2 = 2 ((1/n) sum l_e + (reg/2)/2 |w|^2): plain SGD
    # takes the same steps at half the step size
    doubled = serial(step=0.05, reg=2e-4, adaptive=False).fit(X, y, sample_weight=2.0)
    halved = serial(step=0.1, reg=1e-4, adaptive=False).fit(X, y)
    np.testing.assert_array_equal(doubled.coef_, halved.coef_)
    # AdaGrad counts a sample of weight k as k samples in its sums: weight 4 makes
    # them 4x, each step 1/2 as large per unit of gradient and 4x the gradient, so
    # weight 4 at 4x the reg and half the step takes the same steps (every factor a
    # power of 2, so bit for bit); two classes, and unit weights are no weights
    first = y == y[0]
    adaptive = serial(step=0.05, reg=1e-4, adaptive=True).fit(X, first)
    np.testing.assert_array_equal(serial(step=0.05, reg=1e-4, adaptive=True).fit(
        X, first, sample_weight=np.ones(600)).coef_, adaptive.coef_)
    quadrupled = serial(step=0.025, reg=4e-4, adaptive=True).fit(X, first, sample_weight=4.0)
    np.testing.assert_array_equal(quadrupled.coef_, adaptive.coef_)
    np.testing.assert_array_equal(quadrupled.intercept_, adaptive.intercept_)


def test_balanced_class_weight_finds_the_rare_class_as_liblinear_does():
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.svm import LinearSVC
    X, y = make_sparse_classification(n_samples=16000, n_features=500, nnz_per_row=15, seed=2)
    kept = (y < 0) | (np.arange(y.size) % 12 == 0)  # every negative, 1 positive in 12
    X, rare = X[kept], np.where(y[kept] > 0, 1, 0)  # about 4% positive
    train, test = slice(0, 6000), slice(6000, None)

    def balanced(model):
        model.fit(X[train], rare[train])
        return balanced_accuracy_score(rare[test], model.predict(X[test]))
    plain = balanced(SparseSVM(random_state=0, workers=1))  # one worker: the same figures each run
    ours = balanced(SparseSVM(random_state=0, workers=1, class_weight="balanced"))
    peer = balanced(LinearSVC(C=1 / (6000 * 1e-4), class_weight="balanced"))
    assert ours > plain + 0.05 and ours > peer - 0.02, (plain, ours, peer)


@pytest.mark.parametrize("options,message", [
    (dict(sample_weight=np.ones(5)), r"^sample_weight must have one weight per sample \(600\), "
                                     r"got shape \(5,\)$"),
    (dict(sample_weight=-np.ones(600)), "^sample_weight must hold finite numbers >= 0$"),
    (dict(sample_weight=np.zeros(600)), "^every sample has weight zero: there is nothing to "
                                        "learn$"),
])
def test_bad_sample_weights_are_named(dense, options, message):
    with pytest.raises(HogwildError, match=message):
        serial().fit(*dense, **options)


@pytest.mark.parametrize("class_weight,message", [
    ({7: 2.0}, r"^class_weight names 7, not a class of y \(-1.0, 1.0\)$"),
    ("heavy", r"^class_weight must be None, 'balanced' or a dict \{label: weight\}, got "
              r"'heavy'$"),
    ({1: np.nan}, "^class_weight's weights must be finite numbers >= 0$"),
])
def test_bad_class_weights_are_named(dense, class_weight, message):
    with pytest.raises(HogwildError, match=message):
        serial(class_weight=class_weight).fit(*dense)


# --- partial_fit -------------------------------------------------------------------------

def test_partial_fit_over_batches_reaches_fits_accuracy_and_is_reproducible(dense):
    X, y = dense[0], (dense[1] > 0).astype(int)
    batches = np.array_split(np.arange(600), 4)

    def streamed():
        model = SparseSVM(random_state=3, workers=1)
        for _ in range(10):
            for rows in batches:
                model.partial_fit(X[rows], y[rows], classes=[0, 1])
        return model
    model = streamed()
    assert model.n_iter_ == 40
    # 600 rows: seeds 0-3 give fit 0.835-0.845 and these 40 batches 0.828-0.835
    assert model.score(X, y) >= SparseSVM(random_state=3, workers=1).fit(X, y).score(X, y) - 0.02
    np.testing.assert_array_equal(streamed().coef_, model.coef_)


def test_partial_fit_continues_fits_schedule_and_checks_its_batches(dense):
    X, y = dense[0], (dense[1] > 0).astype(int)
    model = serial().fit(X, y)
    assert model.n_iter_ == 5
    model.partial_fit(X[:100], np.ones(100, int))  # one class in a batch: fine
    assert model.n_iter_ == 6
    schedule = StepSchedule(model.step_schedule_, model.step_, model.decay_)
    assert model.history_[-1].step == pytest.approx(schedule.epoch_steps(5).mean, rel=1e-6)
    with pytest.raises(HogwildError, match=r"^X has 29 features, but SparseSVM is expecting 30 "
                                           r"features as input$"):
        model.partial_fit(X[:, :29], y)
    with pytest.raises(HogwildError, match=r"^classes=\[0, 2\] differs from the classes the "
                                           r"model was fitted with, \[0, 1\]$"):
        model.partial_fit(X, y, classes=[0, 2])
    with pytest.raises(HogwildError, match=r"^labels must be the classes the model was fitted "
                                           r"with \(0, 1\); got 5$"):
        model.partial_fit(X[:3], [0, 1, 5])
    with pytest.raises(HogwildError, match=r"^the first call to partial_fit needs classes= "
                                           r"\(every label the model will see\)$"):
        SparseSVM().partial_fit(X, y)


# --- more than two classes: one-vs-rest in one pass ------------------------------------

def three_classes(n=1500, seed=6):
    """Sparse rows of three classes, each with its own informative features."""
    X, y = make_sparse_classification(n_samples=n, n_features=200, nnz_per_row=10, seed=seed)
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 3, n)
    X = X.tolil()
    for e in range(n):  # a marker feature per class, present in most of its rows
        if rng.random() < 0.8:
            X[e, 190 + label[e]] = 1.0
    return X.tocsr(), label


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_one_pass_over_k_classes_is_bitwise_k_binary_runs(loss):
    """Class k's column of the one-vs-rest model is the binary model of class k
    against the rest: same order, same lazy turns, same float operations."""
    from hogwild import fit
    from hogwild.problems.sparse_svm import (as_csr, intercept_of, multiclass_objective,
                                             svm_objective)
    X, label = three_classes()
    X = as_csr(X)
    joint = fit(multiclass_objective(X, label.astype(np.int32), np.ones(X.shape[0], np.float32),
                                     3, loss, 1e-3, seed=5),
                epochs=3, step=0.2, scheduler="serial", seed=5)
    for k in range(3):
        alone = fit(svm_objective(X, np.where(label == k, 1, -1).astype(np.float32), loss,
                                  1e-3, seed=5), epochs=3, step=0.2, scheduler="serial", seed=5)
        np.testing.assert_array_equal(joint.params[0][:, k], alone.params[0])
        assert joint.params[1][16 + k] == intercept_of(alone.params)[0]


def test_three_classes_train_predict_and_keep_scikit_learns_shapes(tmp_path):
    X, label = three_classes()
    names = np.array(["red", "green", "blue"])[label]
    train, test = slice(0, 1200), slice(1200, None)
    model = SparseSVM(random_state=0, workers=1, loss="logistic").fit(
        X[train], names[train], eval_set=(X[test], names[test]))
    assert model.classes_.tolist() == ["blue", "green", "red"]
    assert model.coef_.shape == (3, 200) and model.intercept_.shape == (3,)
    scores = model.decision_function(X[test])
    assert scores.shape == (300, 3)
    predicted = model.predict(X[test])
    np.testing.assert_array_equal(predicted, model.classes_[scores.argmax(axis=1)])
    accuracy = model.score(X[test], names[test])
    assert accuracy > 0.75
    assert model.history_[-1].metrics["test_error"] == pytest.approx(1 - accuracy)
    proba = model.predict_proba(X[test])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], predicted)
    model.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(SparseSVM.load(tmp_path / "m.npz").predict(X[test]),
                                  predicted)
    streamed = SparseSVM(random_state=0, workers=1)
    for _ in range(5):
        for rows in np.array_split(np.arange(1200), 3):
            streamed.partial_fit(X[rows], names[rows], classes=["red", "green", "blue"])
    assert streamed.coef_.shape == (3, 200) and streamed.score(X[test], names[test]) > 0.7


def test_the_step_schedule_follows_the_classes_unless_given():
    """step_schedule=None: inverse_updates (step 8 x auto, decay 4) with more than two
    classes; with two, geometric (decay 0.9) from 2 / mean L1 norm for the adaptive
    steps, from auto without them; given values are kept, and partial_fit continues
    the schedule used."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X = as_csr(X / 16)
    auto = auto_step(X)
    many = SparseSVM(epochs=2, workers=1, random_state=0).fit(X, y)
    assert (many.step_schedule_, many.decay_, many.step_) == ("inverse_updates", 4.0, 8 * auto)
    assert many.history_[0].step < 8 * auto and many.score(X, y) > 0.9
    two = SparseSVM(epochs=2, workers=1, random_state=0).fit(X, y > 4)
    adaptive = 2 / (abs(X).sum() / X.shape[0])
    assert (two.step_schedule_, two.decay_, two.adaptive_) == ("geometric", 0.9, True)
    assert two.step_ == pytest.approx(adaptive, rel=1e-6)  # summed in float32 values
    assert [r.step for r in two.history_] == [two.step_, two.step_ * 0.9]
    two = SparseSVM(epochs=2, workers=1, random_state=0, adaptive=False).fit(X, y > 4)
    assert (two.step_schedule_, two.decay_, two.step_) == ("geometric", 0.9, auto)
    assert [r.step for r in two.history_] == [auto, auto * 0.9]
    given = SparseSVM(epochs=2, workers=1, random_state=0, step_schedule="geometric").fit(X, y)
    assert (given.step_schedule_, given.decay_, given.step_) == ("geometric", 0.9, auto)
    many.partial_fit(X[:100], y[:100])
    schedule = StepSchedule("inverse_updates", 8 * auto, 4.0)
    assert many.history_[-1].step == pytest.approx(schedule.epoch_steps(2).mean, rel=1e-9)
    with pytest.raises(HogwildError, match=r"^decay must be in \(0, 1\] for the geometric "
                                           r"schedule, got 4$"):
        SparseSVM(decay=4, workers=1).fit(X, y > 4)


def test_fit_measures_the_last_objective_unless_asked_for_every_epoch():
    """The exact objective is a pass over the samples; fit takes it after the last
    epoch only (NaN before), objective_every=1 after each, the model the same bits."""
    X, y = make_sparse_classification(n_samples=600, n_features=50, nnz_per_row=8, seed=2)
    quick = SparseSVM(epochs=3, workers=1, random_state=0).fit(X, y)
    every = SparseSVM(epochs=3, workers=1, random_state=0).fit(X, y, objective_every=1)
    assert np.isnan([r.objective for r in quick.history_[:2]]).all()
    assert quick.history_[-1].objective == every.history_[-1].objective > 0
    assert np.isfinite([r.objective for r in every.history_]).all()
    np.testing.assert_array_equal(quick.coef_, every.coef_)


def test_news20_twenty_classes_with_defaults_as_linear_svc_does():
    """Issue 31's acceptance: the 20 newsgroups, defaults, test accuracy >= 0.846
    (the data's README: LinearSVC one-vs-rest 0.8563, SGDClassifier 0.8485-0.8540)."""
    from hogwild.datasets.svmlight import load_svmlight
    from hogwild.paths import shared_data_dir
    folder = shared_data_dir() / "news20-bydate-multiclass"
    if not (folder / "train.svm.gz").is_file():
        pytest.skip(f"news20-bydate-multiclass is not in {folder.parent} (HOGWILD_DATA)")
    train = load_svmlight(folder / "train.svm.gz", n_features=53644, cache=False)
    test = load_svmlight(folder / "test.svm.gz", n_features=53644, cache=False)
    X, y, X_test, y_test = train.X, train.y, test.X, test.y
    accuracy = SparseSVM(random_state=0).fit(X, y).score(X_test, y_test)
    assert accuracy >= 0.846, accuracy
    # the softmax model at the same reg: scikit-learn's exact LogisticRegression
    # (C = 1 / (n reg)) scores 0.8408
    softmax = SparseSVM(loss="logistic", multi_class="multinomial", random_state=0).fit(X, y)
    assert softmax.score(X_test, y_test) >= 0.836


def test_multinomial_step_matches_the_numpy_softmax_gradient():
    """One sample, one serial step of the multinomial kernel against NumPy: every
    class column moves by step * (y_k - p_k) * x, after its shrink."""
    from hogwild import TrainingConfig, fit
    from hogwild.problems.multiclass import CLASS_SLOT
    from hogwild.problems.sparse_svm import multiclass_objective
    X = as_csr(sp.csr_matrix(np.array([[0.5, 0.0, -1.0, 2.0]], np.float32)))
    objective = multiclass_objective(X, np.array([2], np.int32), np.ones(1, np.float32), 4,
                                     loss="multinomial", reg=0.0, seed=0, fit_intercept=False)
    W0 = np.random.default_rng(0).normal(0, 0.3, (4, 4)).astype(np.float32)
    objective.params[0][:] = W0
    result = fit(objective, TrainingConfig(epochs=1, step=0.1, step_schedule="constant",
                                           workers=1, scheduler="serial"))
    x = X.toarray()[0].astype(np.float64)
    z = x @ W0
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    expected = W0 + 0.1 * np.outer(x, np.eye(4)[2] - p)
    np.testing.assert_allclose(result.params[0], expected, rtol=1e-5, atol=1e-6)
    assert not result.params[1][CLASS_SLOT:CLASS_SLOT + 4].any()  # no intercept


def test_multinomial_objective_is_the_mean_softmax_loss_plus_the_penalty():
    rng = np.random.default_rng(1)
    X = sp.random(600, 40, density=0.1, format="csr", random_state=2, dtype=np.float32)
    y = rng.integers(0, 40, 600)  # more classes than a chunk of 32
    model = SparseSVM(loss="logistic", multi_class="multinomial", epochs=3, workers=1,
                      random_state=0).fit(X, y)
    scores = X @ model.coef_.T.astype(np.float64) + model.intercept_
    top = scores.max(axis=1, keepdims=True)
    log_p = scores - top - np.log(np.exp(scores - top).sum(axis=1, keepdims=True))
    codes = np.searchsorted(model.classes_, y)
    expected = -log_p[np.arange(600), codes].mean() + \
        0.5 * 1e-4 * (model.coef_.astype(np.float64) ** 2).sum()
    assert model.history_[-1].objective == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(model.predict_proba(X), np.exp(log_p), rtol=1e-4, atol=1e-7)


def test_multinomial_agrees_with_scikit_learns_logistic_regression():
    """A 4-class problem: SGD on the softmax loss against scikit-learn's exact
    multinomial LogisticRegression at the same regularisation (C = 1 / (n reg))."""
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1.0, (4, 20))
    y = rng.integers(0, 4, 3000)
    X = (centres[y] + rng.normal(0, 1.2, (3000, 20))).astype(np.float32)
    reg = 1e-3
    ours = SparseSVM(loss="logistic", multi_class="multinomial", reg=reg, epochs=30,
                     workers=1, random_state=0).fit(X[:2000], y[:2000])
    exact = LogisticRegression(C=1 / (2000 * reg), max_iter=2000).fit(X[:2000], y[:2000])
    agree = (ours.predict(X[2000:]) == exact.predict(X[2000:])).mean()
    assert agree >= 0.97, agree
    assert abs(ours.score(X[2000:], y[2000:]) - exact.score(X[2000:], y[2000:])) <= 0.01
    assert np.abs(ours.predict_proba(X[2000:]) - exact.predict_proba(X[2000:])).mean() < 0.03


def test_multinomial_needs_the_logistic_loss_and_a_known_name():
    X, y = np.eye(6, dtype=np.float32), np.arange(6) % 3
    with pytest.raises(HogwildError, match="multi_class='multinomial' is the logistic "
                                           "loss's softmax model; this SparseSVM has "
                                           "loss='hinge'"):
        SparseSVM(multi_class="multinomial").fit(X, y)
    with pytest.raises(HogwildError, match="unknown multi_class 'crammer'; choose one of: "
                                           "ovr, multinomial"):
        SparseSVM(multi_class="crammer").fit(X, y)
