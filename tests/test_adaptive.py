"""Adaptive steps (hogwild.adaptive): AdaGrad in users' objectives and in SparseSVM,
the sums carried wherever parameters go; the data-shaped reg; replication "auto"'s
guard."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import Objective, fit
from hogwild.adaptive import adagrad_step
from hogwild.cli import main
from hogwild.datasets.clicks import make_clicks
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.errors import HogwildError
from hogwild.problems.sparse_svm import SparseSVM
from hogwild.problems.sparse_svm.objectives import default_reg, feature_counts
from hogwild.structure import IdArray
from test_engine import ls_loss


def adagrad_ls_update(e, params, data, step):
    """Least squares 0.5 (x_e . w - y_e)^2 by AdaGrad: the docstring's example."""
    w, sums = params
    indptr, indices, values, y = data
    residual = -y[e]
    for k in range(indptr[e], indptr[e + 1]):
        residual += w[indices[k]] * values[k]
    for k in range(indptr[e], indptr[e + 1]):
        adagrad_step(w, sums, indices[k], residual * values[k], step)


def adagrad_least_squares(n=3000, d=60, seed=0):
    """The objective and its exact solution; every feature's values scaled by its own
    power of 10 (0.1, 1 or 10), which a single step size serves badly."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.1, format="csr", random_state=seed, dtype=np.float32)
    X = sp.csr_matrix(X @ sp.diags(10.0 ** rng.integers(-1, 2, d)), dtype=np.float32)
    w_true = rng.standard_normal(d).astype(np.float32)
    y = (X @ w_true).astype(np.float32)
    params = (np.zeros(d, np.float32), np.zeros(d, np.float32))
    return Objective(adagrad_ls_update, ls_loss, params=params,
                     data=(X.indptr, X.indices, X.data, y), n_samples=n,
                     id_arrays=(IdArray(ids=1, params=(0, 1)),)), w_true


@pytest.mark.parametrize("options", [dict(workers=1), dict(workers=2),
                                     dict(workers=2, replication="worker"),
                                     dict(workers=2, replication="hot", hot_fraction=0.05),
                                     dict(workers=2, backend="processes")],
                         ids=["serial", "shared", "worker", "hot", "processes"])
def test_a_users_adagrad_objective_reaches_the_exact_solution_over_feature_scales(options):
    """Features scaled 0.1 .. 10: AdaGrad's per-coordinate steps reach the exact
    solution from one base step, on shared parameters, on copies (the sums copied
    and merged with them) and across processes."""
    objective, w_true = adagrad_least_squares()
    result = fit(objective, epochs=40, step=1.0, step_schedule="constant", decay=1.0,
                 seed=0, **options)
    np.testing.assert_allclose(result.params[0], w_true, atol=1e-3)
    assert result.objective < 1e-9
    assert (result.params[1] > 0).all()  # every feature's squared gradients summed


def test_adagrad_sums_are_checkpointed_and_resumed_bit_for_bit(tmp_path):
    objective, _ = adagrad_least_squares()
    options = dict(step=0.5, step_schedule="constant", decay=1.0, seed=3,
                   scheduler="serial", workers=1)
    straight = fit(objective, epochs=4, **options)
    fit(objective, epochs=2, checkpoint=tmp_path / "run.ckpt", **options)
    resumed = fit(objective, epochs=4, resume=tmp_path / "run.ckpt", **options)
    for a, b in zip(straight.params, resumed.params):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def clicks(tmp_path_factory):
    """A small click log: 100,000 rows of 20 hashed power-law fields over 20,000
    features, and 20,000 test rows, so that two models' errors differ by less than a
    point by chance (1,000 rows: +-1.3 points) (its own folder: nothing under the
    user's cache)."""
    train, test, _ = make_clicks(100_000, 20_000, 2_000_000, test_rows=20_000,
                                 folder=tmp_path_factory.mktemp("clicks") / "log")
    return train, test


def test_the_defaults_learn_a_click_log_that_sgd_at_scikit_learns_reg_does_not(clicks):
    """Power-law fields: the adaptive default with the data's reg against the old
    defaults (one step for every feature, reg 1e-4) and a one-worker run."""
    train, test = clicks
    default = SparseSVM(random_state=0, epochs=5, shuffle_rows=False).fit(
        train.X, train.y, eval_set=(test.X, test.y), objective_every=1)
    one = SparseSVM(random_state=0, epochs=5, workers=1, shuffle_rows=False).fit(
        train.X, train.y, eval_set=(test.X, test.y))
    old = SparseSVM(random_state=0, epochs=5, workers=1, shuffle_rows=False, adaptive=False,
                    reg=1e-4).fit(train.X, train.y, eval_set=(test.X, test.y))
    errors = [m.history_[-1].metrics["test_error"] for m in (default, one, old)]
    assert default.reg_ == pytest.approx(1 / 100_000) and default.adaptive_
    assert errors[0] < errors[2] - 0.05 and errors[1] < errors[2] - 0.05, errors
    assert abs(errors[0] - errors[1]) < 0.01, errors  # two workers as good as one
    objectives = [r.objective for r in default.history_]
    assert all(b <= a for a, b in zip(objectives, objectives[1:])), objectives


@pytest.mark.parametrize("n,features,expected", [
    (1_000_000, 1_000, 1e-6),        # more rows than features: 1 / n (C = 1)
    (25_000, 44_489, 44_489 / 25_000 ** 2),  # imdb's shape: p / n^2
    (11_314, 53_644, 1e-4),          # news20's: capped at scikit-learn's 1e-4
    (500, 10, 1e-4)])                # few rows: capped
def test_reg_none_follows_the_datas_shape(n, features, expected):
    counts = np.zeros(2 * features, np.int64)
    counts[::2] = 1  # every other feature occurs: only those count
    assert default_reg(n, counts) == pytest.approx(expected)


def test_fit_records_the_reg_and_steps_it_used():
    X, y = make_sparse_classification(20_000, 300, nnz_per_row=10, seed=0)
    X[:, 250:] = 0  # 50 features that never occur
    X.eliminate_zeros()
    model = SparseSVM(random_state=0, epochs=2, workers=1).fit(X, y)
    assert (feature_counts(X.tocsr().astype(np.float32)) > 0).sum() == 250
    assert model.reg_ == pytest.approx(1 / 20_000) and model.adaptive_
    assert model.squared_gradients_.shape == (301,) and (model.squared_gradients_ >= 0).all()
    assert model.squared_gradients_[250:300].sum() == 0
    given = SparseSVM(random_state=0, epochs=2, workers=1, reg=1e-3, adaptive=False).fit(X, y)
    assert (given.reg_, given.adaptive_) == (1e-3, False)
    assert not hasattr(given, "squared_gradients_")


def test_the_default_penalty_starts_at_the_second_epoch_and_a_given_one_at_once():
    """reg=None with adaptive steps: epoch 1 is the unpenalised run's bit for bit,
    epoch 2 shrinks; an explicit reg shrinks from the first update."""
    X, y = make_sparse_classification(5_000, 200, nnz_per_row=10, seed=1)
    runs = {}
    for name, epochs, reg in (("default-1", 1, None), ("zero-1", 1, 0.0),
                              ("default-2", 2, None), ("zero-2", 2, 0.0)):
        model = SparseSVM(random_state=0, epochs=epochs, workers=1, reg=reg).fit(X, y)
        runs[name] = model.coef_
    given = SparseSVM(random_state=0, epochs=1, workers=1, reg=1e-3).fit(X, y).coef_
    assert np.array_equal(runs["default-1"], runs["zero-1"])
    assert np.abs(runs["default-2"]).sum() < np.abs(runs["zero-2"]).sum()
    assert np.abs(given).sum() < np.abs(runs["zero-1"]).sum()


@pytest.mark.parametrize("step, margin", [(0.1, 0.14), (100.0, 1.0)])
def test_an_adaptive_hinge_step_stops_at_the_hinge(step, margin):
    """One adaptive hinge step moves an unseen row's margin by step * sum_j |x_j|
    (0.14 here), but never past 1, however long the step: the importance-invariant
    update (140 without it)."""
    X = sp.csr_matrix(np.array([[0.6, 0.8, 0, 0], [0, 0, 0.6, 0.8]], np.float32))
    y = np.array([1, -1])
    model = SparseSVM(epochs=1, workers=1, random_state=0, step=step, reg=0.0,
                      fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X) * [1, -1], [margin, margin],
                               rtol=1e-5)


def test_partial_fit_and_model_files_continue_the_adaptive_steps(tmp_path):
    """partial_fit after fit, and after save/load, starts from the sums where fit left
    them: one epoch more on one worker is bitwise the same either way."""
    X, y = make_sparse_classification(3000, 200, nnz_per_row=8, seed=1)
    model = SparseSVM(random_state=0, epochs=3, workers=1).fit(X, y)
    sums = model.squared_gradients_.copy()
    model.save(tmp_path / "model.npz")
    loaded = SparseSVM.load(tmp_path / "model.npz")
    np.testing.assert_array_equal(loaded.squared_gradients_, sums)
    assert (loaded.reg_, loaded.adaptive_) == (model.reg_, True)
    model.partial_fit(X, y)
    loaded.partial_fit(X, y)
    np.testing.assert_array_equal(model.coef_, loaded.coef_)
    assert (model.squared_gradients_ >= sums).all() and (model.squared_gradients_ > sums).any()


def test_an_edited_model_file_with_negative_sums_is_refused(tmp_path):
    X, y = make_sparse_classification(500, 50, nnz_per_row=5, seed=2)
    SparseSVM(random_state=0, epochs=1, workers=1).fit(X, y).save(tmp_path / "model.npz")
    with np.load(tmp_path / "model.npz") as archive:
        arrays = dict(archive)
    arrays["squared_gradients"][3] = -1.0
    np.savez(tmp_path / "edited.npz", **arrays)
    with pytest.raises(HogwildError, match=r"edited.npz is a damaged or edited sparse linear "
                                           r"classifier file \(squared_gradients is "
                                           r"float32\[51\], not a finite nonnegative float "
                                           r"vector of 51\)$"):
        SparseSVM.load(tmp_path / "edited.npz")


def test_adaptive_true_with_more_than_two_classes_is_one_clear_error():
    X, y = make_sparse_classification(300, 40, nnz_per_row=5, seed=0)
    y = np.arange(300) % 3
    with pytest.raises(HogwildError, match=r"^adaptive=True: adaptive steps are for two "
                                           r"classes, and y has 3; pass adaptive=None \(the "
                                           r"default\) or False$"):
        SparseSVM(adaptive=True, workers=1).fit(X, y)
    with pytest.raises(HogwildError, match=r"^adaptive must be True, False or None, got 'yes'$"):
        SparseSVM(adaptive="yes").fit(X, y)


def test_the_auto_guard_runs_shared_once_copies_raise_the_objective(capsys, monkeypatch):
    """A step far too large for merged copies (two workers' summed pushes overshoot):
    auto's copies (here as if its probe had chosen them: these runs are too short
    for one) raise the objective in the first epoch, which then runs again shared,
    and the rest of the run stays shared; the JSON and the summary say so. A step
    that suits the copies keeps them."""
    from hogwild import replication
    monkeypatch.setattr(replication, "choose", lambda *args: (
        "worker", "mixed", {"chose": "worker", "merge": "mixed",
                            "why": "copies, as if a probe chose them"}))
    X, y = make_sparse_classification(6000, 60, nnz_per_row=12, seed=3)
    wild = SparseSVM(random_state=0, epochs=3, workers=2, adaptive=False, step=20.0).fit(X, y)
    auto = wild.replicated_["auto"]
    assert (wild.replication_, auto["chose"], auto["fell_back"]["epoch"]) == ("shared", "worker",
                                                                              1)
    assert "rose from" in auto["fell_back"]["why"]
    assert wild.history_[0].updates == 2 * 6000  # the epoch ran twice
    calm = SparseSVM(random_state=0, epochs=3, workers=2, adaptive=False).fit(X, y)
    assert calm.replication_ == "worker" and "fell_back" not in calm.replicated_["auto"]
    assert main(["run", "svm", "--data", "a9a", "--epochs", "2", "--workers", "2",
                 "--no-adaptive", "--step", "20", "--seed", "0", "--checkpoint-every",
                 "1000000"]) == 0
    assert "replication worker merged mixed (auto: copies, as if a probe chose them), " \
           "shared from epoch 1 on (the objective on 32,561 samples rose from" \
        in capsys.readouterr().out


def test_the_command_line_takes_adaptive_and_reports_what_it_used(capsys):
    assert main(["run", "svm", "--epochs", "1", "--workers", "1", "--no-adaptive", "--json",
                 "--checkpoint-every", "1000000"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["adaptive"], result["reg"]) == (False, pytest.approx(1 / 32561))
    assert main(["run", "svm", "--epochs", "1", "--workers", "1", "--reg", "1e-3", "--json",
                 "--checkpoint-every", "1000000"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["adaptive"], result["reg"]) == (True, 1e-3)


def test_the_engine_docs_adaptive_example_runs_as_written(capsys):
    """docs/engine.md's AdaGrad objective, run as printed there."""
    from pathlib import Path
    text = (Path(__file__).parent.parent / "docs" / "engine.md").read_text()
    section = text[text.index("### Adaptive steps (AdaGrad) in your objective"):]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/engine.md", "exec"), {"__name__": "docs_example"})
    assert float(capsys.readouterr().out) < 1e-3


def test_a_guard_too_large_to_keep_a_copy_goes_on_shared_from_the_epochs_result():
    from hogwild.replication import Guard
    params = (np.arange(4, dtype=np.float32),)
    kept, unkept = Guard(10, 1.0, params), Guard(10, 1.0, params, keeps=False)
    for guard in (kept, unkept):
        guard.keep(params)
        assert not guard.rose(0.9, 1)  # fell: the reference follows
        assert guard.rose(0.95, 2)
    params[0][:] = -1
    assert kept.restore(params) and (params[0] == np.arange(4)).all()
    params[0][:] = -1
    assert not unkept.restore(params) and (params[0] == -1).all()
    assert kept.fell_back == {"epoch": 2, "why": "the objective on 10 samples rose from 0.9 "
                                                 "to 0.95 on copies: the epoch ran again shared"}
    assert unkept.fell_back["why"].endswith("shared from the next epoch (the model is too "
                                            "large to keep a copy)")


# --- matrix factorisation: LIBMF's per-row adaptive rates ------------------------

def planted(rows=2000, cols=1500, n=100_000, seed=0):
    from hogwild.datasets.jumbo import make_jumbo
    train, test, _ = make_jumbo(rows, cols, n, rank=4, noise=0.5, seed=seed, folder=None)
    return train, test


def test_adaptive_rates_train_the_same_model_on_any_rating_scale():
    """The defaults are measured in the ratings' own deviation: ratings times 100
    train a model whose predictions are 100 times the first's (the factors start
    at sqrt(100) times, reg 100 times: every step is the same in scaled units)."""
    from hogwild.datasets.ratings import Ratings
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, test = planted()
    big = Ratings(train.users, train.items, train.values * np.float32(100))
    fits = [MatrixFactorization(epochs=3, workers=1, scheduler="serial", random_state=0,
                                adaptive=True).fit(r) for r in (train, big)]
    assert fits[1].rating_scale_ == pytest.approx(100 * fits[0].rating_scale_, rel=1e-5)
    assert fits[1].reg_ == pytest.approx(100 * fits[0].reg_, rel=1e-5)
    small, large = (m.predict(test.users, test.items) for m in fits)
    np.testing.assert_allclose(large / 100, small, rtol=0, atol=2e-3)
    assert fits[0].adaptive_ and fits[0].init_scale_ == pytest.approx(
        0.02 * fits[0].rating_scale_ ** 0.5)


def test_adaptive_rates_leave_the_saddle_that_a_fixed_step_sits_on():
    """A planted rank-4 matrix (noise 0.5: the best RMSE is 0.5; the mean alone
    gives about 1.1): 6 epochs of the defaults come within 0.1 of the noise, where
    the old fixed step (0.03, 0.9 decay, start 0.03) is still near the mean."""
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, test = planted()
    rmse = {}
    for adaptive in (True, False):
        model = MatrixFactorization(epochs=6, workers=1, random_state=0, adaptive=adaptive)
        rmse[adaptive] = model.fit(train, eval_set=test).history_[-1].metrics["test_rmse"]
    assert rmse[True] < 0.6 and rmse[False] > 0.9, rmse


def test_adaptive_sums_are_checkpointed_and_resumed_bit_for_bit(tmp_path):
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, _ = planted(600, 500, 20_000)
    options = dict(workers=2, scheduler="blocked", random_state=3, adaptive=True)
    whole = MatrixFactorization(epochs=4, **options).fit(train)
    path = tmp_path / "mf.npz"
    MatrixFactorization(epochs=2, **options).fit(train, checkpoint=str(path),
                                                 checkpoint_every=2)
    resumed = MatrixFactorization(epochs=4, **options).fit(train, resume=str(path))
    assert np.array_equal(whole.user_factors_, resumed.user_factors_)
    assert np.array_equal(whole.item_bias_, resumed.item_bias_)
    # the epochs that held the decay (leaving the zero saddle) are checkpointed too
    assert [r.decay_held for r in whole.history_] == [True, True, False, False]
    assert [r.step for r in resumed.history_] == [r.step for r in whole.history_]


def test_the_step_decays_once_the_factors_have_left_the_zero_saddle():
    """Adaptive rates' first epoch ends above the start (every row's first large
    moves), then the descent speeds up: those epochs keep the step; the geometric
    decay counts from the first epoch that fell less than the one before."""
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, test = planted()
    history = MatrixFactorization(epochs=6, workers=1, random_state=3, adaptive=True).fit(
        train, eval_set=test).history_
    objectives = [r.objective for r in history]
    falls = -np.diff(objectives)  # in epochs 2 to 6
    assert np.all(falls > 0) and falls[1] < falls[0], objectives  # slower from epoch 3
    assert [r.decay_held for r in history] == [True, True, False, False, False, False]
    assert [r.step for r in history] == pytest.approx([0.2, 0.2, 0.2, 0.18, 0.162, 0.1458])


def test_the_papers_model_has_no_adaptive_rates():
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, _ = planted(60, 50, 500)
    assert not MatrixFactorization(model="paper", epochs=1).fit(train).adaptive_
    with pytest.raises(HogwildError) as error:
        MatrixFactorization(model="paper", adaptive=True).fit(train)
    assert str(error.value) == ("model 'paper' has no adaptive rates; use model='biased' "
                                "or adaptive=False")
    with pytest.raises(HogwildError) as error:
        MatrixFactorization(adaptive="yes").fit(train)
    assert str(error.value) == "adaptive must be True, False or None, got 'yes'"


def test_ratings_on_disk_get_the_blocked_layout_while_a_copy_fits(tmp_path, monkeypatch):
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.problems.matrix_completion import MatrixFactorization
    from hogwild.problems.matrix_completion import estimator

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))  # the layout's
    train, _, _ = make_jumbo(300, 200, 5_000, seed=0, folder=tmp_path / "jumbo")
    options = dict(epochs=1, workers=2, random_state=0, shuffle_ratings=False)
    assert MatrixFactorization(**options).fit(train).scheduler_ == "blocked"
    monkeypatch.setattr(estimator, "BLOCKED_COPY_SHARE", 1e-12)
    assert MatrixFactorization(**options).fit(train).scheduler_ == "hogwild"


def test_ratings_on_disk_beyond_the_runs_memory_train_hogwild_streamed(tmp_path, monkeypatch):
    """The copy of the blocked layout must fit the run's memory too: under a memory
    below the ratings, 'blocked' (the default) built that copy anyway, and its
    default grid's rounds were larger than a slot: `hogwild run mc --data
    jumbo:20000x20000x2000000 --memory 8MB` ended "use a larger --grid"."""
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.problems.matrix_completion import MatrixFactorization

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))
    train, test, _ = make_jumbo(2000, 2000, 200_000, seed=0, folder=tmp_path / "jumbo")
    with pytest.warns(UserWarning, match="chunk by chunk"):
        model = MatrixFactorization(epochs=4, workers=1, random_state=0, shuffle_ratings=False,
                                    memory="1.5MB").fit(train, eval_set=test)
    assert model.scheduler_ == "hogwild" and model.streaming_["chunks_per_epoch"] > 1
    rmse = [record.metrics["test_rmse"] for record in model.history_]
    assert rmse[-1] < 0.7 < rmse[0]  # it learns (the noise's floor is 0.5)


@pytest.mark.parametrize("per_row,adaptive", [(100, True), (80, True), (79, False),
                                               (17, False)])
def test_adaptive_none_turns_them_on_where_users_and_items_average_80_ratings(per_row,
                                                                              adaptive):
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, _ = planted(300, 200, 300 * per_row)  # the sparser side: 300 users
    model = MatrixFactorization(epochs=1, workers=1, random_state=0).fit(train)
    assert model.adaptive_ is adaptive
    assert model.step_ == (0.2 if adaptive else 0.03)


def test_the_command_line_takes_adaptive_for_ratings(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    assert main(["run", "mc", "--data", "jumbo:300x200x5000", "--epochs", "1",
                 "--json"]) == 0  # 17 ratings a user: the fixed step
    result = json.loads(capsys.readouterr().out)
    assert result["adaptive"] is False and result["step"] == 0.03 and result["reg"] == 0.06
    assert main(["run", "mc", "--data", "jumbo:300x200x5000", "--epochs", "1",
                 "--adaptive", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["adaptive"] is True and result["step"] == 0.2
    assert result["reg"] == pytest.approx(0.05 * result["rating_scale"])


def test_the_default_grid_keeps_a_blocks_rows_near_a_megabyte():
    """8 (or 2 x workers) on MovieLens-sized ratings; on large matrices enough
    blocks that a block's factor rows on a side take about 1 MiB, never blocks of
    under 1,000 ratings on average; ids that are not integers count as many rows
    as ratings."""
    from hogwild.problems.matrix_completion.estimator import default_grid

    square = (np.arange(100_000), np.arange(100_000))
    assert default_grid(square, 10_000_000, 32, 2) == 13  # 10^5 rows x 136 bytes / 1 MiB
    assert default_grid(square, 10_000_000, 32, 8) == 16
    assert default_grid((np.arange(1, 6041), np.arange(1, 3953)), 800_000, 32, 2) == 8
    assert default_grid(square, 100_000, 32, 2) == 10  # isqrt(100): blocks of >= 1,000
    assert default_grid((np.array(["a", "b"] * 5),) * 2, 10, 32, 2) == 8
