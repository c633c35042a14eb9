"""Early stopping on held-out samples (TrainingConfig.early_stopping): the engine
stops once the validation Metric has not improved for that many epochs and returns
the best epoch's parameters; every problem holds out its own samples."""
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from hogwild import Metric, Objective, fit
from hogwild.errors import HogwildError
from hogwild.problems.graph_cuts import multiway_cut
from hogwild.problems.matrix_completion import ImplicitFactorization, MatrixFactorization
from hogwild.problems.matrix_completion.ranking import ranking_metrics
from hogwild.problems.sparse_svm import SparseSVM


@njit
def _pull(e, params, data, step):
    """Move w towards the sample's target (every target is 5)."""
    params[0][0] += step * (data[0][e] - params[0][0])


@njit
def _squared(e, params, data):
    d = params[0][0] - data[0][e]
    return d * d


def _pulled_to_five(validation=True, held_target=3.0):
    """w starts at 0 and is pulled to 5; the held-out target is 3, so the
    validation score falls while w < 3 and rises after: a known best epoch."""
    held = Metric("validation_squared", _squared, (np.array([held_target], np.float32),), 1)
    return Objective(_pull, _squared, (np.zeros(1, np.float32),),
                     (np.full(100, 5.0, np.float32),), 100,
                     validation=held if validation else None)


def test_the_engine_stops_after_patience_epochs_and_returns_the_best_epochs_parameters():
    options = dict(step=0.002, scheduler="serial", seed=0, workers=1)
    result = fit(_pulled_to_five(), epochs=30, early_stopping=2, objective_every=None,
                 **options)
    scores = [record.metrics["validation_squared"] for record in result.history]
    best = int(np.argmin(scores)) + 1
    assert result.best_epoch == best and 1 < best < 30
    assert len(result.history) == best + 2  # two epochs without improvement, then stop
    # the parameters are those after the best epoch, bitwise (serial is deterministic)
    again = fit(_pulled_to_five(), epochs=best, **options)
    assert result.params[0].tobytes() == again.params[0].tobytes()
    assert abs(result.params[0][0] - 3.0) < abs(result.history[-1].objective)  # not w at 5
    # every epoch's objective is measured: any may be the one kept
    assert all(np.isfinite(record.objective) for record in result.history)
    assert result.objective == result.history[best - 1].objective


def test_a_run_that_never_improves_on_its_start_returns_the_start():
    """The held-out target is below the start and training pulls away from it:
    epoch 0 (the parameters before training) is the best, and is what returns."""
    result = fit(_pulled_to_five(held_target=-1.0), epochs=30, early_stopping=3,
                 step=0.002, scheduler="serial", seed=0, workers=1)
    assert result.best_epoch == 0 and len(result.history) == 4  # epoch 1, then 3 more
    assert result.params[0][0] == 0.0  # w as it started
    start = result.kept_record
    assert start is result.start and start.epoch == 0
    assert start.metrics["validation_squared"] == pytest.approx(1.0)  # (0 - (-1))^2
    assert all(r.metrics["validation_squared"] > 1.0 for r in result.history)


def test_without_early_stopping_a_validation_metric_is_recorded_and_every_epoch_runs():
    result = fit(_pulled_to_five(), epochs=12, step=0.002, scheduler="serial", seed=0,
                 workers=1)
    assert len(result.history) == 12 and result.best_epoch is None
    assert all("validation_squared" in record.metrics for record in result.history)


def test_early_stopping_needs_a_validation_metric():
    with pytest.raises(HogwildError) as error:
        fit(_pulled_to_five(validation=False), epochs=5, early_stopping=2)
    assert str(error.value) == (
        "early_stopping needs held-out samples to watch: objective 'objective' has no "
        "validation Metric (give the Objective validation=hogwild.Metric(...))")


@pytest.mark.parametrize("options, message", [
    ({"early_stopping": 0}, "early_stopping must be an integer"),
    ({"validation_fraction": 0.5}, "validation_fraction must be a finite number in (0, 0.5)"),
    ({"validation_fraction": float("nan")}, "validation_fraction must be a finite number"),
])
def test_absurd_early_stopping_options_are_refused(options, message):
    with pytest.raises(HogwildError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fit(_pulled_to_five(), epochs=5, **options)


def test_a_validation_that_is_not_a_metric_is_refused():
    with pytest.raises(HogwildError, match="^validation must be a hogwild.Metric, got dict$"):
        Objective(_pull, _squared, (np.zeros(1, np.float32),), (np.ones(3, np.float32),), 3,
                  validation={})


def test_too_few_samples_to_hold_out_is_one_clear_error():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(HogwildError) as error:
        SparseSVM(early_stopping=2, random_state=0).fit(X, [0, 1, 1])
    assert str(error.value) == (
        "validation_fraction=0.1 of 3 rows holds out 0: early_stopping needs at least one "
        "held-out and one training sample")


def _noisy_classes(seed=0, n=3000, d=40, classes=2):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (classes, d))
    y = rng.integers(0, classes, n)
    X = centres[y] + rng.normal(0, 3.0, (n, d))
    return X.astype(np.float32), y


@pytest.mark.parametrize("classes", [2, 3])
def test_svm_keeps_the_epoch_of_its_best_held_out_error(classes):
    X, y = _noisy_classes(classes=classes)
    model = SparseSVM(epochs=40, early_stopping=3, random_state=0, workers=1)
    model.fit(X[:2000], y[:2000], eval_set=(X[2000:], y[2000:]))
    errors = [record.metrics["validation_error"] for record in model.history_]
    best = model.best_epoch_
    assert errors[best - 1] == min(errors) and errors.index(min(errors)) == best - 1
    assert model.n_iter_ == len(model.history_) == best + 3 < 40
    # the model kept is that epoch's: its test error is the one recorded then
    assert 1.0 - model.score(X[2000:], y[2000:]) == pytest.approx(
        model.history_[best - 1].metrics["test_error"], abs=1e-9)


def _sparse_planted_ratings(seed=0, n=1500, per_row=12, rank=8):
    """Few ratings a row of a planted low-rank matrix: a rank-32 model overfits."""
    rng = np.random.default_rng(seed)
    U, V = rng.normal(0, 1, (n, rank)), rng.normal(0, 1, (n, rank))
    users = rng.integers(0, n, n * per_row)
    items = rng.integers(0, n, n * per_row)
    values = np.einsum("ij,ij->i", U[users], V[items]) / np.sqrt(rank) \
        + rng.normal(0, 0.5, users.size)
    return users, items, values.astype(np.float32)


def test_matrix_factorisation_stops_before_it_overfits_and_keeps_the_best_factors():
    users, items, values = _sparse_planted_ratings()
    n_test = users.size // 5
    train = (users[n_test:], items[n_test:], values[n_test:])
    test = (users[:n_test], items[:n_test], values[:n_test])
    options = dict(epochs=40, random_state=0, workers=1, step=0.05, reg=0.001, adaptive=False)
    with pytest.warns(UserWarning, match="never seen in training"):
        full = MatrixFactorization(**options).fit(train, eval_set=test)
        stopped = MatrixFactorization(early_stopping=3, **options).fit(train, eval_set=test)
    last = full.history_[-1].metrics["test_rmse"]
    scores = [record.metrics["validation_rmse"] for record in stopped.history_]
    trained_best = int(np.argmin(scores)) + 1  # the start does not count for patience
    assert len(stopped.history_) == trained_best + 3 < 40
    best = stopped.best_epoch_
    start = stopped.kept_record_.metrics["validation_rmse"] if best == 0 else None
    assert best in (0, trained_best) and (best == trained_best or start < min(scores))
    kept = stopped.kept_record_.metrics["test_rmse"]
    assert stopped.kept_record_.epoch == best
    assert kept < last - 0.05  # the full run overfits; the kept model does not
    with pytest.warns(UserWarning, match="never seen in training"):
        predicted = stopped.predict(test[0], test[1])
    assert np.sqrt(np.mean((predicted - test[2]) ** 2)) == pytest.approx(kept, abs=1e-4)


def test_on_ratings_too_few_to_learn_from_the_start_near_the_mean_is_kept():
    """Three ratings a row of a rank-8 matrix: every epoch overfits, so the
    model kept is the start (the mean and small factors), within 2% of the
    predict-the-mean RMSE where 20 epochs end far above it."""
    users, items, values = _sparse_planted_ratings(per_row=3)
    n_test = users.size // 5
    train = (users[n_test:], items[n_test:], values[n_test:])
    test = (users[:n_test], items[:n_test], values[:n_test])
    mean_rmse = float(np.sqrt(np.mean((test[2] - train[2].mean()) ** 2)))
    with pytest.warns(UserWarning, match="never seen in training"):
        full = MatrixFactorization(random_state=0, workers=1).fit(train, eval_set=test)
        stopped = MatrixFactorization(random_state=0, workers=1, early_stopping=3).fit(
            train, eval_set=test)
    assert full.history_[-1].metrics["test_rmse"] > 1.05 * mean_rmse
    assert stopped.best_epoch_ == 0 and stopped.kept_record_.epoch == 0
    assert stopped.kept_record_.metrics["test_rmse"] < 1.02 * mean_rmse


def test_implicit_feedback_keeps_the_best_epoch_of_its_held_out_rank_loss():
    rng = np.random.default_rng(0)
    group_of_user, group_of_item = rng.integers(0, 5, 400), rng.integers(0, 5, 300)
    likes = rng.random((400, 300)) < np.where(group_of_user[:, None] == group_of_item,
                                              0.2, 0.01)
    train = sp.csr_matrix(likes & (rng.random(likes.shape) < 0.8), dtype=np.float32)
    test = sp.csr_matrix(likes & (train.toarray() == 0), dtype=np.float32)
    model = ImplicitFactorization(epochs=40, early_stopping=5, random_state=0, workers=1, rank=8)
    model.fit(train, eval_set=test)
    losses = [record.metrics["validation_rank_loss"] for record in model.history_]
    best = model.best_epoch_
    assert best >= 1 and losses[best - 1] == min(losses) and len(losses) == best + 5
    assert losses[best - 1] < losses[0] - 0.02  # it learned before it stopped
    # the factors kept are that epoch's: the ranking measured then
    seen = model._seen  # the pairs trained on (the held-out ones left out)
    assert ranking_metrics(model.user_factors_, model.item_factors_, model.item_bias_, test,
                           seen)["precision@10"] == pytest.approx(
        model.history_[best - 1].metrics["precision@10"], abs=1e-12)


def test_graph_cuts_watch_their_rounded_cut_and_keep_its_best_relaxation():
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, 500, 3000), rng.integers(0, 500, 3000)
    u, v = u[u != v], v[u != v]
    w = rng.random(u.size).astype(np.float32)
    result = multiway_cut(500, u, v, w, {0: 0, 1: 1, 2: 2}, 3, early_stopping=3,
                          epochs=200, seed=0, workers=1, scheduler="serial")
    # epoch 0 is a candidate: the start (free vertices at the simplex's centre,
    # rounded to label 0) isolates the three terminals, a good cut on a random graph
    shares = [result.start.metrics["argmax_cut_per_edge"]] + [
        record.metrics["argmax_cut_per_edge"] for record in result.history]
    best = int(np.argmin(shares))
    assert result.best_epoch == best
    assert len(result.history) == int(np.argmin(shares[1:])) + 1 + 3 < 200
    labels = np.argmax(result.x, axis=1)
    kept_cut = float(np.sum(w[labels[u] != labels[v]], dtype=np.float64))
    assert kept_cut == pytest.approx(shares[best] * u.size, rel=1e-5)
    assert result.cut <= kept_cut  # the labels are the best rounding seen


def test_the_command_line_reports_the_kept_epoch(tmp_path, monkeypatch, capsys):
    from hogwild.cli import main

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))
    users, items, values = _sparse_planted_ratings(n=800, per_row=100, rank=4)
    ratings = tmp_path / "ratings.tsv"
    np.savetxt(ratings, np.column_stack([users, items, values]), fmt="%d\t%d\t%.4f")
    main(["run", "mc", "--data", str(ratings), "--epochs", "40", "--early-stopping", "2",
          "--seed", "0", "--workers", "1", "--step", "0.05", "--reg", "0.001",
          "--no-adaptive", "--json"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    best = report["best_epoch"]
    assert report["epochs_run"] == len(report["history"]) == best + 2 < 40 and best >= 1
    assert report["test_rmse"] == report["history"][best - 1]["test_rmse"]


def test_early_stopping_on_the_gpu_keeps_the_epoch_the_cpu_keeps():
    """Under the CUDA simulator: the held-out RMSE is scored on the device, and the
    serial run stops at the CPU's epoch with the CPU's factors."""
    from test_gpu import simulate

    out = simulate(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        from test_early_stopping import _sparse_planted_ratings
        users, items, values = _sparse_planted_ratings(n=60, per_row=6, rank=3)
        warnings.simplefilter("ignore")
        fits = [MatrixFactorization(rank=8, epochs=30, early_stopping=2, scheduler="serial",
                                    random_state=0, step=0.05, reg=0.001, adaptive=False,
                                    backend=backend).fit((users, items, values))
                for backend in ("threads", "gpu")]
        cpu, gpu = ([r.metrics["validation_rmse"] for r in f.history_] for f in fits)
        np.testing.assert_allclose(gpu, cpu, rtol=1e-5)
        assert fits[0].best_epoch_ == fits[1].best_epoch_ < len(cpu) < 30
        np.testing.assert_allclose(fits[1].user_factors_, fits[0].user_factors_, atol=1e-5)
        print(int(np.argmin(cpu)) + 1, len(cpu))
    """)
    trained_best, run = map(int, out.split())
    assert run == trained_best + 2


def test_the_run_that_stops_early_leaves_its_checkpoint(tmp_path):
    """A checkpoint is written at the stop whatever checkpoint_every says: the state
    after the last epoch run (not the best: resume continues training from it)."""
    from hogwild.checkpoint import load_checkpoint

    checkpoint = tmp_path / "run.npz"
    result = fit(_pulled_to_five(), epochs=30, early_stopping=2, step=0.002,
                 scheduler="serial", seed=0, workers=1, checkpoint=checkpoint,
                 checkpoint_every=None)
    saved = load_checkpoint(checkpoint)
    assert saved.epoch == len(result.history) < 30
    assert saved.params[0][0] > result.params[0][0]  # two epochs further towards 5


def test_partial_fit_trains_its_one_epoch_whatever_early_stopping_says():
    X, y = _noisy_classes(n=400)
    model = SparseSVM(early_stopping=3, random_state=0, workers=1)
    model.partial_fit(X, y, classes=[0, 1]).partial_fit(X, y)
    assert model.n_iter_ == 2 and model.best_epoch_ is None
