"""The Objectives of the binary and one-vs-rest models, their regulariser and step,
and the held-out error metric."""
import functools

import numpy as np
from numba import njit

from hogwild.pooling import LOCAL
from hogwild.disk_arrays import extremes, occurrences, pieces
from hogwild.errors import HogwildError
from hogwild.objective import Metric, Objective
from hogwild.problems.multiclass import ovr_objective
from hogwild.problems.sparse_svm.inputs import (as_csr, binary_labels, check_loss,
                                               check_reg)
from hogwild.problems.sparse_svm.crossed import KERNELS as CROSSED_KERNELS
from hogwild.problems.sparse_svm.crossed import (add_crossed_counts, crossed_l1,
                                                 crossed_wrong_side, crossing_arrays,
                                                 scoring_data)
from hogwild.problems.sparse_svm.kernels import INTERCEPT_PAD, KERNELS, l2_penalty, wrong_side
from hogwild.structure import IdArray, Supports

# The intercept's step relative to a feature's: every sample moves it, so a
# feature's step makes it oscillate. 0.01 is scikit-learn's damping of the
# intercept on sparse data (SPARSE_INTERCEPT_DECAY). Of 1, 0.1, 0.05, 0.03 and
# 0.01 on a9a, news20-bydate, imdb-aclimdb and a rare-class set, 1 oscillates,
# and from 0.1 to 0.05 the final objective varies by 1-2% between seeds (news20,
# imdb) and imdb's test error is 0.1-0.15 points worse than with 0.01.
INTERCEPT_RATE = 0.01
# On X given dense, the intercept takes a feature's step, as scikit-learn's SGD
# does there: dense features are few and often unscaled, and 0.01 leaves the
# intercept far short (noisy blobs of scale 20 with class_weight {0: 1000, 1: 1e-4}:
# intercept -0.2 after 20 epochs, 56% predicted class 0, against -14 and 98%).
# Standardised or not, breast cancer and a 20-feature synthetic set score as well
# or better with it (0.9766 both; 0.8829-0.8856 against 0.8807).
DENSE_INTERCEPT_RATE = 1.0
# With adaptive steps the intercept's AdaGrad step falls as 1 / sqrt(the samples
# seen), so it needs less damping than INTERCEPT_RATE. Of 1, 0.1 and 0.01 at one
# worker on a9a, news20, imdb, a 200,000-row click log and two sets with a 3% class
# and 8.7% empty rows (120 epochs), 1 lets the objective rise in 18 epochs, 0.1 in
# 9 and 0.01 in 6, but 0.01 leaves the intercept short where it matters (the
# rare-class sets' final objective 4.7% and 1.5% above 0.1's, test error 1.66%
# against 1.56%); 0.1 has the lowest final objective there, and test errors within
# 0.1 points of the others' everywhere.
ADAPTIVE_INTERCEPT_RATE = 0.1
# step='auto' with adaptive steps: the margin's move when a row's features are all
# fresh (see auto_adaptive_step). Of 1, 1.5, 2 and 4 on a 10^6-row click log, a9a,
# news20 and imdb, 1.5-2 reach the lowest test error after 1-2 epochs on each.
ADAPTIVE_STEP_MARGIN = 2.0
# reg=None: the largest default penalty (scikit-learn's alpha), see default_reg
DEFAULT_REG_CAP = 1e-4


@njit(nogil=True, cache=True)
def _inverse(counts, scale):
    """scale / d_u for each feature u (0 where d_u = 0)."""
    out = np.zeros(counts.size, np.float32)
    for u in range(counts.size):
        if counts[u] > 0:
            out[u] = scale / counts[u]
    return out


@njit(nogil=True, cache=True)
def _sum_of_absolutes(values):
    total = 0.0
    for k in range(values.size):
        total += abs(np.float64(values[k]))
    return total


@njit(nogil=True, cache=True)
def _sum_of_squares(values):
    total = 0.0
    for k in range(values.size):
        total += np.float64(values[k]) * values[k]
    return total


def svm_objective(X, labels, loss="hinge", reg=1e-4, seed=None, fit_intercept=True,
                  intercept_rate=INTERCEPT_RATE, adaptive=False, counts=None,
                  penalty_from=0, crossings=None, reg_samples=None):
    """The Objective for a prepared X (see as_csr) and labels in {-1, +1}; the
    seed (an int or a numpy SeedSequence) salts the lazy-regularisation draws.
    The intercept, when fitted, is params[1][INTERCEPT_SLOT] (see intercept_of),
    moved by intercept_rate times a feature's step;
    every sample then touches it, so the objective has no conflict-free supports
    (schedulers colored and cyclades refuse it). ``adaptive``: AdaGrad steps per
    feature, their sums params[2] (see the kernels), the penalty stepping from the
    epoch ``penalty_from`` on. ``counts``: feature_counts(X), where the caller has
    them already (the crossed features' included). ``crossings``: quadratic
    features (hogwild.datasets.vw.Crossings), crossed by the kernels
    (hogwild.problems.sparse_svm.crossed); every sample is then checked by the
    engine's checked pass, which reads the crossings' offsets too. ``reg_samples``:
    the samples the penalty is spread over (default X's; a rank's own share of an
    MPI job: the job's, with the job's counts)."""
    kernels = KERNELS if crossings is None else CROSSED_KERNELS
    update, sample_loss = kernels[check_loss(loss), bool(adaptive)]
    n, d = X.shape
    if crossings is not None and counts is None:
        counts = feature_counts(X, crossings)
    reg_scale, salt = _regulariser(X, reg, seed, counts, reg_samples)
    rate = np.array([intercept_rate if fit_intercept else 0.0], np.float32)
    data = (X.indptr, X.indices, X.data, labels, reg_scale, salt, rate,
            np.array([penalty_from], np.int64), np.array([reg * n], np.float64))
    if crossings is not None:
        data += crossing_arrays(crossings)
    params = (np.zeros(d, dtype=np.float32), np.zeros(INTERCEPT_PAD, dtype=np.float32))
    if adaptive:  # the features' squared gradients, indexed as w is
        params += (np.zeros(d, dtype=np.float32),)
    return Objective(update, sample_loss, params=params, data=data, penalty=l2_penalty,
                     n_samples=n, name=f"sparse-svm-{loss}",
                     supports=None if fit_intercept else functools.partial(Supports.from_csr, X),
                     id_arrays=(IdArray(ids=1, params=(0, 2) if adaptive else (0,),
                                        data=(4,)),),
                     indices_checked=crossings is None, sample_offsets=0)


def multiclass_objective(X, codes, weights, n_classes, loss="hinge", reg=1e-4, seed=None,
                         fit_intercept=True, intercept_rate=INTERCEPT_RATE, counts=None,
                         reg_samples=None):
    """The one-vs-rest Objective of ``n_classes`` classes (hogwild.problems.multiclass;
    loss 'multinomial': the softmax model's)
    for a prepared X, class indices ``codes`` and per-sample ``weights``; the
    regulariser, seed, intercept, counts and reg_samples as svm_objective's."""
    reg_scale, salt = _regulariser(X, reg, seed, counts, reg_samples)
    loss = loss if loss == "multinomial" else check_loss(loss)
    return ovr_objective(X, codes, weights, n_classes, loss, reg_scale, salt,
                         intercept_rate if fit_intercept else 0.0)


def feature_counts(X, crossings=None):
    """d_u for each feature u of a prepared X: the number of rows with a nonzero in
    it (checking X's row offsets first, as the engine's checked pass would), with
    the crossed features of ``crossings``."""
    low, high = extremes(X.indptr)
    if low < 0 or high > X.indices.size:
        raise HogwildError(f"X's row offsets (indptr) run from {low} to {high}, outside "
                           f"its {X.indices.size:,} nonzeros")
    counts = occurrences(X.indices, X.shape[1])
    if crossings is not None:
        add_crossed_counts(crossings, counts)
    return counts


def default_reg(n_samples, counts):
    """reg=None: max(n, p) / n^2 for n samples and p features that occur (counts from
    feature_counts), at most DEFAULT_REG_CAP.

    With at least as many samples as features this is LIBLINEAR's default C = 1
    (reg = 1 / (C n)): the penalty's weight falls as 1/n, as the estimate's
    variance does, so a million click rows get 1e-6, where scikit-learn's fixed
    1e-4 leaves a 1M x 1M click log at 31% test error against 22% (docs/defaults.md).
    With more features than samples it is raised by p / n, as ridge regression's
    best penalty grows with the features per sample: a text set of 25,000 reviews
    and 90,000 words keeps scikit-learn's 1e-4."""
    n = max(int(n_samples), 1)
    seen = int(np.count_nonzero(counts))
    return min(DEFAULT_REG_CAP, max(n, seen) / float(n) ** 2)


def _regulariser(X, reg, seed, counts=None, samples=None):
    """(reg_scale = reg * n / d_u per feature, n ``samples`` (default X's rows), the
    lazy draws' salt from the seed)."""
    counts = feature_counts(X) if counts is None else counts
    reg_scale = _inverse(counts, check_reg(reg) * (X.shape[0] if samples is None else samples))
    seed_seq = seed if isinstance(seed, np.random.SeedSequence) \
        else np.random.SeedSequence(seed)
    return reg_scale, seed_seq.generate_state(1, dtype=np.uint64)



def error_rate_metric(X, labels, name="test_error", crossings=None):
    """The error rate on (X, labels) as a hogwild.Metric, computed where the
    weights are (on the GPU without a copy); X as prepared by as_csr, and its
    quadratic features' ``crossings``."""
    if crossings is not None:
        return Metric(name, crossed_wrong_side, scoring_data(X, crossings, labels), X.shape[0])
    return Metric(name, wrong_side, (X.indptr, X.indices, X.data, labels), X.shape[0])


def svm_file_objective(data, loss="hinge", reg=1e-4, seed=None, fit_intercept=True):
    """The Objective of a training set, a dataset name or an svmlight file
    (hogwild.datasets.registry.load_svm_data), rows shuffled by the seed as
    SparseSVM does. Built where it is called: give
    ``functools.partial(svm_file_objective, path)`` to the ray backend and every
    node loads the file from its own disk; nothing goes through the driver."""
    from hogwild.datasets.registry import load_svm_data

    train, _ = load_svm_data(data)
    X = as_csr(train.X)
    labels, _ = binary_labels(train.y, X.shape[0], require_both=True)
    if not train.trained_in_place:
        rows = np.random.default_rng(seed).permutation(X.shape[0])
        X, labels = X[rows], labels[rows]
    return svm_objective(X, labels, loss, reg, seed, fit_intercept)



def auto_step(X, pool=LOCAL):
    """0.2 / mean ||x_e||^2: a step that keeps each update's change of the margin
    about 0.2 whatever the feature scaling (the mean over the job's samples in
    ``pool``, a hogwild.pooling)."""
    # a piece at a time (X may lie on disk); X.multiply(X) would copy X
    mean_sq_norm = pool.sum(sum(_sum_of_squares(piece) for piece in pieces(X.data))) \
        / pool.sum(X.shape[0])
    return 0.2 / mean_sq_norm if mean_sq_norm > 0 else 0.2


def auto_adaptive_step(X, crossings=None, pool=LOCAL):
    """ADAPTIVE_STEP_MARGIN / mean ||x_e||_1: the adaptive steps' base step. A
    feature's first AdaGrad step moves it by the base step whatever its value, so
    a row of fresh features moves its margin by the step times its L1 norm; this
    keeps that move about ADAPTIVE_STEP_MARGIN, for rows of 14 binary features
    (a9a) as for TF-IDF rows of hundreds of small ones (imdb). The crossed
    features of ``crossings`` count in the norm; the mean is over the job's samples
    in ``pool``."""
    total = sum(_sum_of_absolutes(piece) for piece in pieces(X.data))
    if crossings is not None:
        total += crossed_l1(crossings)
    mean_l1 = pool.sum(float(total)) / pool.sum(X.shape[0])
    return ADAPTIVE_STEP_MARGIN / mean_l1 if mean_l1 > 0 else ADAPTIVE_STEP_MARGIN

