"""Sparse linear classification (SVM hinge loss, logistic loss) with the Hogwild!
paper's degree-scaled L2 regulariser.

Objective, with n samples, labels y_e in {-1, +1} and d_u = number of samples
whose row has a nonzero in feature u:

    F(w, b) = (1/n) sum_e [ l(y_e (<w, x_e> + b)) + (reg / 2) sum_{u in e} (n / d_u) w_u^2 ]
            = (1/n) sum_e l(y_e (<w, x_e> + b)) + (reg / 2) ||w||^2

(the second line counts only features that occur), so ``reg`` is scikit-learn's
``alpha`` and LIBLINEAR's ``C = 1 / (n * reg)``. The intercept b is not
regularised (scikit-learn's fit_intercept) and is 0 without one. Splitting the
regulariser over the samples keeps every update sparse: sample e touches only its
own features (and the intercept).
"""
import functools
import math
import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.backends.host import all_finite
from hogwild.disk_arrays import extremes, occurrences, pieces
from hogwild.backends import get_backend
from hogwild.engine import fit as engine_fit
from hogwild.errors import HogwildError, check_int, check_nonnegative, choose
from hogwild.config import RunControls
from hogwild.estimator import (Params, as_matrix, drawn_seed, not_fitted, run_controls,
                               training_parameters)
from hogwild.limits import MODEL_BYTES_PER_FEATURE, available_memory
from hogwild.model_file import read_model, write_model
from hogwild.objective import Metric, Objective
from hogwild.phases import phase
from hogwild.problems.linear_kernels import LAZY_EPOCHS_LOG2, lazy_turn
from hogwild.problems.multiclass import (CLASS_SLOT, ovr_error_metric, ovr_objective,
                                        ovr_scores)
from hogwild.schedulers import get_scheduler
from hogwild.steps import StepSchedule
from hogwild.structure import IdArray, Supports

LOSSES = ("hinge", "logistic")
MULTI_CLASS = ("ovr", "multinomial")  # more than two classes: how they train
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
# step='auto' times this for a schedule: inverse_updates starts 8x higher and falls
# (decay 4) to 1.6x by the first epoch's end. Chosen on news20 20 classes and a9a;
# judged on imdb, news20 binary, digits, breast cancer, wine and a 5-class synthetic
# set (docs/engine.md): final objective lower on 5 of 6 (news20 binary 1.3% higher),
# accuracy after 1-2 epochs higher on the larger sets, within 1-2 test rows at 20.
AUTO_STEP_FACTOR = {"inverse_updates": 8.0}
DEFAULT_DECAY = {"geometric": 0.9, "inverse_updates": 4.0}  # decay=None; else 1
# step_schedule=None. Two classes keep the geometric schedule: at 2 workers auto
# replication runs them on merged replicas ("worker", merged "mixed" once an epoch),
# and each replica's half epoch of large early steps, summed, leaves the objective
# 3-4% higher after 20 epochs (news20 binary: 0.1128 against 0.1085 geometric, and
# 0.1094 shared or serial). More classes run shared (replication's rule for rows of
# several values), where inverse_updates reaches the test accuracy of 3 geometric
# epochs in 2 (news20 20 classes; digits 0.946 against 0.921 after 2).
SCHEDULE_BY_CLASSES = {2: "geometric"}  # more classes: "inverse_updates"
SCHEDULERS = ("hogwild", "locked", "serial", "colored", "cyclades")
MODEL_FILE_KIND = "hogwild.SparseSVM"
MODEL_FILE_VERSION = 1


# --- per-sample kernels (plain Python, compiled by the engine) -------------------
#
# data = (indptr int64[n+1], indices int32[nnz], values float32[nnz],
#         labels float32[n] in {-1, +1}, reg_scale float32[d] = reg * n / d_u,
#         salt uint64[1] seeding the lazy-regularisation draws,
#         intercept_rate float32[1]: the intercept's step per unit step, 0 = none)
# params = (w float32[d], intercept float32[INTERCEPT_PAD]), shared by all workers
# and written without locks. The intercept is intercept[INTERCEPT_SLOT]: the
# padding keeps it on a cache line of its own, since every sample reads it and
# the samples that move w also write it.
# Helpers called from kernels must themselves be numba functions (@njit); they are
# inlined (numba's inline="always") so that LLVM optimises each update as one body.
# Inactive hinge samples regularise lazily (hogwild.problems.linear_kernels). More
# than two classes train one-vs-rest in one pass (hogwild.problems.multiclass).

INTERCEPT_PAD = 32  # float32s: 128 bytes, whatever the array's alignment, hold
INTERCEPT_SLOT = 16  # one whole 64-byte cache line around element 16


@njit(nogil=True, inline="always")
def _score(e, params, data):
    """x_e . w + intercept: the decision value of row e."""
    w, indptr, indices, values = params[0], data[0], data[1], data[2]
    total = params[1][INTERCEPT_SLOT]
    for k in range(indptr[e], indptr[e + 1]):
        total += w[indices[k]] * values[k]
    return total


@njit(nogil=True, inline="always")
def predicts_positive(score):
    """The one definition of a prediction, used by the training metric, predict()
    and every backend: a score > 0 is the positive class, and a tie (an empty row
    without an intercept) is the negative class."""
    return score > 0


@njit(nogil=True, inline="always")
def _margin(e, params, data):
    """y_e (x_e . w + b): the label's sign times the score. data[3][e] is the label
    times the sample's weight (1 unless sample_weight or class_weight say
    otherwise), so the weight scales the loss gradient and nothing else; with
    unit weights this is label * score, bit for bit. A weight of 0 keeps its sign
    (+0.0 or -0.0), so the class is read from the sign bit."""
    score = _score(e, params, data)
    return score if math.copysign(1.0, data[3][e]) > 0 else -score


@njit(nogil=True, inline="always")
def _sgd_step(e, w, data, step, g):
    """w_j <- w_j * (1 - step * reg_scale_j) + g * v_j over sample e's features: the
    degree-scaled L2 shrink and the loss gradient, touching only x_e. The shrink
    factor is floored at 0 so that a large step never flips a sign."""
    indptr, indices, values, reg_scale = data[0], data[1], data[2], data[4]
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        w[j] = w[j] * shrink + g * values[k]


@njit(nogil=True, inline="always")
def _lazy_shrink(e, w, data, step):
    """w_j <- w_j * (1 - step * reg_scale_j)^(2**LAZY_EPOCHS_LOG2) over e's features."""
    indptr, indices, reg_scale = data[0], data[1], data[4]
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        for _ in range(LAZY_EPOCHS_LOG2):
            shrink *= shrink
        w[j] *= shrink


@njit(nogil=True, inline="always")
def _intercept_step(e, epoch, params, data, g):
    """The intercept's SGD step g * intercept_rate (unregularised, as scikit-learn's),
    thinned: applied 2**LAZY_EPOCHS_LOG2 times larger on the same one draw in 2**
    LAZY_EPOCHS_LOG2 as the lazy shrink. Every sample's gradient reaches the
    intercept, so unthinned it is the one cache line that both workers write all
    the time (+8% update time for the hinge and +22% for the logistic loss on a9a
    with 2 workers); thinned, it is the same step in expectation, with 1/8 of the
    writes. No write at all without an intercept."""
    rate = data[6][0]
    if rate != 0 and lazy_turn(e, epoch, data[5][0]):
        params[1][INTERCEPT_SLOT] += g * (rate * (1 << LAZY_EPOCHS_LOG2))


def hinge_update(e, params, data, step, epoch):
    w = params[0]
    s = np.float32(step)
    if _margin(e, params, data) < 1:
        g = s * data[3][e]
        _sgd_step(e, w, data, s, g)
        _intercept_step(e, epoch, params, data, g)
    elif lazy_turn(e, epoch, data[5][0]):
        _lazy_shrink(e, w, data, s)


def logistic_update(e, params, data, step, epoch):
    w = params[0]
    s = np.float32(step)
    g = s * data[3][e] / (np.float32(1.0) + math.exp(_margin(e, params, data)))
    _sgd_step(e, w, data, s, g)
    _intercept_step(e, epoch, params, data, g)


@njit(nogil=True, inline="always")
def _penalty(e, w, data):
    indptr, indices, reg_scale = data[0], data[1], data[4]
    total = 0.0
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        total += reg_scale[j] * w[j] * w[j]
    return 0.5 * total


def hinge_loss(e, params, data):
    return max(0.0, 1.0 - _margin(e, params, data)) * abs(data[3][e]) \
        + _penalty(e, params[0], data)


def logistic_loss(e, params, data):
    w = params[0]
    ym = _margin(e, params, data)
    # log(1 + exp(-ym)) without overflow for large |ym|
    data_term = math.log1p(math.exp(-ym)) if ym > 0 else -ym + math.log1p(math.exp(ym))
    return data_term * abs(data[3][e]) + _penalty(e, w, data)


_KERNELS = {"hinge": (hinge_update, hinge_loss), "logistic": (logistic_update, logistic_loss)}


# --- input validation -------------------------------------------------------------

def check_loss(loss):
    return choose(LOSSES, loss, "loss")


def check_reg(reg):
    return check_nonnegative("reg", reg)


def as_csr(X, n_features=None, estimator=None):
    """X as CSR with float32 values, no duplicates, and int32 indices and indptr where
    they hold (int64 beyond 2^31 - 1 nonzeros: scipy's choice).

    Any scipy.sparse format or dense array is accepted and converted once, and other
    array-likes (lists, pandas frames) through hogwild.estimator.as_matrix. The
    caller's matrix is never modified. ``n_features``: the count a fitted
    ``estimator`` expects.
    """
    X = as_matrix(X, estimator)
    if not (sp.issparse(X) or isinstance(X, np.ndarray)):
        raise HogwildError(f"X must be a scipy.sparse matrix or numpy array, "
                           f"got {type(X).__name__}")
    if X.ndim != 2:
        raise HogwildError(f"X must be 2-dimensional, got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise HogwildError(f"empty data: X has shape {X.shape}")
    if X.shape[1] >= 2**31:
        raise HogwildError(f"X has {X.shape[1]} features; at most 2**31 - 1 are supported")
    needed, memory = X.shape[1] * MODEL_BYTES_PER_FEATURE, available_memory()
    if n_features is None and memory is not None and needed > memory:
        raise HogwildError(f"X has {X.shape[1]:,} features, whose model needs "
                           f"{needed / 2**30:.1f} GiB, more than the {memory / 2**30:.1f} GiB "
                           "of memory available")
    if n_features is not None and X.shape[1] != n_features:
        owner = type(estimator).__name__ if estimator is not None else "the model"
        raise HogwildError(f"X has {X.shape[1]} features, but {owner} is expecting "
                           f"{n_features} features as input")
    if X.dtype.kind not in "biuf":
        raise HogwildError(f"X must hold numbers, got dtype {X.dtype}")
    with np.errstate(over="ignore"):  # beyond float32's range becomes inf: refused below
        csr = sp.csr_matrix(X, dtype=np.float32)
    # a piece at a time: X may be memory-mapped from files larger than memory
    if not all(all_finite([piece]) for piece in pieces(csr.data)):
        raise HogwildError("X contains NaN, Inf or values beyond float32's range "
                           "(|x| > 3.4e38)")
    if not _canonical(csr):
        csr = csr.copy()
        csr.sum_duplicates()
    if csr.indices.dtype == np.int32:
        return csr
    # rebuilt from its arrays, scipy keeps int32 indices (and indptr) where they hold
    return sp.csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape)


def _canonical(csr):
    """scipy's has_canonical_format (indices increasing within each row), checked a
    piece of the indices at a time (see hogwild.disk_arrays.pieces)."""
    indptr = np.asarray(csr.indptr)
    row, previous, start = 0, -1, 0
    for piece in pieces(csr.indices):
        ok, row, previous = _increasing_within_rows(indptr, piece, start, row, previous)
        if not ok:
            return False
        start += piece.size
    return True


@njit(nogil=True, cache=True)
def _increasing_within_rows(indptr, piece, start, row, previous):
    """Whether the nonzeros start.. (``piece``) keep each row's indices increasing,
    carrying the row and the last index seen from one piece to the next."""
    for j in range(piece.size):
        k = start + j
        while indptr[row + 1] <= k:
            row += 1
        if k > indptr[row] and piece[j] <= previous:
            return False, row, previous
        previous = piece[j]
    return True, row, previous


def binary_labels(y, n_samples, require_both=False, classes=None):
    """Labels as float32 in {-1, +1} and the two classes (negative, positive).

    ``classes``: a fitted model's (a test set's labels must be among them);
    otherwise the sorted distinct labels of y, of any type (numbers, strings), the
    second one positive. A y with a single label -1, 0 or +1 takes the classes of
    that convention ({-1, +1} or {0, 1}) unless ``require_both``.
    """
    y = label_array(y, n_samples)
    if classes is None:
        classes = distinct_labels(y)
        if classes.size > 2:
            shown = ", ".join(map(repr, classes[:5].tolist())) + \
                (", ..." if classes.size > 5 else "")
            raise HogwildError(f"Only binary classification is supported here. The type of "
                               f"the target is multiclass: y has {classes.size} classes "
                               f"({shown})")
        if classes.size == 1:
            if require_both or classes[0] not in (-1, 0, 1):
                raise HogwildError(f"y has 1 class ({classes[:1].tolist()[0]!r}); a classifier "
                                   "needs samples of 2 classes")
            classes = np.array([0, 1]) if classes[0] == 0 else np.array([-1, 1])
    codes, classes = class_indices(y, classes)
    return signs(codes), classes


def signs(codes):
    """+1 (float32) for class index 1, -1 for class 0: a binary problem's labels."""
    return np.where(codes == 1, np.float32(1.0), np.float32(-1.0))


def label_array(y, n_samples):
    """y as a checked 1-D array of n_samples labels (a column vector is read as one,
    with scikit-learn's warning)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is "
                      f"read as shape ({y.shape[0]},)", _column_warning(), stacklevel=4)
        y = y.ravel()
    if y.ndim != 1:
        raise HogwildError(f"y must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise HogwildError(f"X and y have different lengths: {n_samples} rows in X, "
                           f"{y.shape[0]} labels in y")
    if y.dtype.kind in "fc":
        if not np.isfinite(y).all():
            raise HogwildError("y contains NaN or Inf values")
        if y.dtype.kind == "c" or not np.array_equal(y, np.round(y)):
            raise HogwildError("Unknown label type: continuous (y holds numbers that are "
                               "not whole); a classifier needs class labels")
    return y


def distinct_labels(y):
    """The sorted distinct labels of y (labels in a pandas object column become a
    str or int array: a model file holds no Python objects)."""
    found = np.unique(y)
    return np.array(found.tolist()) if found.dtype == object else found


def class_indices(y, classes):
    """(the index in ``classes`` of each label of y, int32; classes); a label not
    among them is a HogwildError naming it."""
    codes = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
    known = classes[codes] == y
    if not known.all():
        shown = ", ".join(map(repr, classes.tolist()))
        stray = np.array([y[~known][0]]).tolist()[0]
        raise HogwildError(f"labels must be the classes the model was fitted with ({shown}); "
                           f"got {stray!r}")
    return codes.astype(np.int32), classes


def _column_warning():
    """scikit-learn's DataConversionWarning where it is installed (what its users
    filter), else a UserWarning."""
    try:
        from sklearn.exceptions import DataConversionWarning
    except ImportError:
        return UserWarning
    return DataConversionWarning


def _reg_scale(indices, n_features, scale):
    """scale / d_u for each feature u, d_u the number of rows with a nonzero in it
    (0 where d_u = 0)."""
    return _inverse(occurrences(indices, n_features), scale)


@njit(nogil=True, cache=True)
def _inverse(counts, scale):
    out = np.zeros(counts.size, np.float32)
    for u in range(counts.size):
        if counts[u] > 0:
            out[u] = scale / counts[u]
    return out


@njit(nogil=True, cache=True)
def _sum_of_squares(values):
    total = 0.0
    for k in range(values.size):
        total += np.float64(values[k]) * values[k]
    return total


def svm_objective(X, labels, loss="hinge", reg=1e-4, seed=None, fit_intercept=True,
                  intercept_rate=INTERCEPT_RATE):
    """The Objective for a prepared X (see as_csr) and labels in {-1, +1}; the
    seed (an int or a numpy SeedSequence) salts the lazy-regularisation draws.
    The intercept, when fitted, is params[1][INTERCEPT_SLOT] (see intercept_of),
    moved by intercept_rate times a feature's step;
    every sample then touches it, so the objective has no conflict-free supports
    (schedulers colored and cyclades refuse it)."""
    update, sample_loss = _KERNELS[check_loss(loss)]
    n, d = X.shape
    reg_scale, salt = _regulariser(X, reg, seed)
    rate = np.array([intercept_rate if fit_intercept else 0.0], np.float32)
    data = (X.indptr, X.indices, X.data, labels, reg_scale, salt, rate)
    params = (np.zeros(d, dtype=np.float32), np.zeros(INTERCEPT_PAD, dtype=np.float32))
    return Objective(update, sample_loss, params=params, data=data,
                     n_samples=n, name=f"sparse-svm-{loss}",
                     supports=None if fit_intercept else functools.partial(Supports.from_csr, X),
                     id_arrays=(IdArray(ids=1, params=(0,), data=(4,)),),
                     indices_checked=True, sample_offsets=0)


def multiclass_objective(X, codes, weights, n_classes, loss="hinge", reg=1e-4, seed=None,
                         fit_intercept=True, intercept_rate=INTERCEPT_RATE):
    """The one-vs-rest Objective of ``n_classes`` classes (hogwild.problems.multiclass;
    loss 'multinomial': the softmax model's)
    for a prepared X, class indices ``codes`` and per-sample ``weights``; the
    regulariser, seed and intercept as svm_objective's."""
    reg_scale, salt = _regulariser(X, reg, seed)
    loss = loss if loss == "multinomial" else check_loss(loss)
    return ovr_objective(X, codes, weights, n_classes, loss, reg_scale, salt,
                         intercept_rate if fit_intercept else 0.0)


def _regulariser(X, reg, seed):
    """(reg_scale = reg * n / d_u per feature, the lazy draws' salt from the seed)."""
    low, high = extremes(X.indptr)
    if low < 0 or high > X.indices.size:  # what the engine's checked pass would catch
        raise HogwildError(f"X's row offsets (indptr) run from {low} to {high}, outside "
                           f"its {X.indices.size:,} nonzeros")
    reg_scale = _reg_scale(X.indices, X.shape[1], check_reg(reg) * X.shape[0])
    seed_seq = seed if isinstance(seed, np.random.SeedSequence) \
        else np.random.SeedSequence(seed)
    return reg_scale, seed_seq.generate_state(1, dtype=np.uint64)


@njit(nogil=True, cache=True)
def _decision_values(params, data, out):
    """out[e] = _score(e, params, data) for every row: decision_function's loop."""
    for e in range(out.size):
        out[e] = _score(e, params, data)


@njit(nogil=True, cache=True)
def _positive_rows(params, data, out):
    """out[e] = predicts_positive(_score(e, params, data)): predict's loop, compiled
    once and cached (predicts_positive called on an array from Python would compile
    at every run, and hold the compiler's memory at the end of a large one)."""
    for e in range(out.size):
        out[e] = predicts_positive(_score(e, params, data))


def intercept_of(params):
    """The fitted intercept in a params tuple of svm_objective, as an array of
    shape (1,) (scikit-learn's intercept_)."""
    return params[1][INTERCEPT_SLOT:INTERCEPT_SLOT + 1].copy()


def wrong_side(e, params, data):
    """1.0 when row e is misclassified (predicts_positive disagrees with its
    label), else 0.0."""
    return 1.0 if predicts_positive(_score(e, params, data)) != (data[3][e] > 0) else 0.0


def error_rate_metric(X, labels):
    """The error rate on (X, labels) as a hogwild.Metric, computed where the
    weights are (on the GPU without a copy); X as prepared by as_csr."""
    return Metric("test_error", wrong_side, (X.indptr, X.indices, X.data, labels), X.shape[0])


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
    if not train.random_order:
        rows = np.random.default_rng(seed).permutation(X.shape[0])
        X, labels = X[rows], labels[rows]
    return svm_objective(X, labels, loss, reg, seed, fit_intercept)


def _epoch_seed(seed, epoch):
    """The seed of one partial_fit epoch, derived from the estimator's."""
    if isinstance(seed, np.random.Generator):
        seed = seed.bit_generator.seed_seq
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed)
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, epoch))


def sample_weights(sample_weight, n_samples):
    """sample_weight as float64[n] (None: every sample weighs 1), or a HogwildError."""
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.ndim == 0:  # one weight for every sample
        weights = np.full(n_samples, float(weights))
    if weights.shape != (n_samples,):
        raise HogwildError(f"sample_weight must have one weight per sample ({n_samples}), "
                           f"got shape {weights.shape}")
    if not (np.isfinite(weights).all() and (weights >= 0).all()):
        raise HogwildError("sample_weight must hold finite numbers >= 0")
    return weights


def class_weights(class_weight, classes, codes):
    """Each sample's class weight (``codes``: its index in ``classes``): from a dict
    {label: weight}, or "balanced" (n / (K x the class's count), as scikit-learn's),
    or None (all 1: returns None)."""
    if class_weight is None:
        return None
    if isinstance(class_weight, str) and class_weight == "balanced":
        counts = np.bincount(codes, minlength=classes.size).astype(np.float64)
        weight = np.divide(codes.size, classes.size * counts, out=np.zeros(classes.size),
                           where=counts > 0)
    elif isinstance(class_weight, dict):
        unknown = [label for label in class_weight if label not in classes.tolist()]
        if unknown:
            raise HogwildError(f"class_weight names {unknown[0]!r}, not a class of y "
                               f"({', '.join(map(repr, classes.tolist()))})")
        weight = np.array([class_weight.get(label, 1.0) for label in classes.tolist()],
                          np.float64)
        if not (np.isfinite(weight).all() and (weight >= 0).all()):
            raise HogwildError("class_weight's weights must be finite numbers >= 0")
    else:
        raise HogwildError(f"class_weight must be None, 'balanced' or a dict {{label: "
                           f"weight}}, got {class_weight!r}")
    return weight[codes]


# --- estimator --------------------------------------------------------------------

@training_parameters(
    own={"loss": "hinge", "reg": 1e-4, "fit_intercept": True, "class_weight": None,
         "shuffle_rows": True, "multi_class": "ovr"},
    epochs=20, step="auto", decay=None, step_schedule=None, shuffle_block=16,
    replication=None,
    notes={"replication": "None: 'auto' on the backends that run it (threads, processes, "
                          "mpi), else 'shared'; what auto chose, and why, is in replicated_ "
                          "(on imdb at 2 workers: 'worker' merged 'mixed', 1.6-1.8x the "
                          "shared rate at the same test error).",
           "step": "'auto' is 0.2 / (mean squared row norm), which suits unit-norm "
                   "TF-IDF rows and binary features alike; 8 times that for the "
                   "inverse_updates schedule (with decay 4 the step is 1.6 times 0.2 / "
                   "norm by the first epoch's end, the larger ones averaged out); the "
                   "value used is step_.",
           "decay": "None: 0.9 for the geometric schedule, 4 for inverse_updates, 1 for "
                    "the others; the value used is decay_.",
           "step_schedule": "None: 'inverse_updates' with more than two classes, else "
                            "'geometric' (SCHEDULE_BY_CLASSES); the value used is "
                            "step_schedule_.",
           "scheduler": "SparseSVM runs 'hogwild', 'locked', 'serial', 'colored' and "
                        "'cyclades'; the last two run together only samples that share no "
                        "feature, and need fit_intercept=False.",
           "shuffle_block": "The rows are shuffled once (by the seed) unless "
                            "shuffle_rows=False."})
class SparseSVM(Params):
    """Linear classifier on sparse data trained with Hogwild! SGD.

    scikit-learn compatible (fit / predict / decision_function / score,
    get_params / set_params), so it works in pipelines and cross-validation;
    scikit-learn itself is not required. With the hinge loss,
    samples outside the margin regularise lazily (see the kernels' comment): the same
    objective in expectation, with far fewer writes to shared memory.

    Parameters
    ----------
    loss : {'hinge', 'logistic'}, default 'hinge'
        The linear SVM's hinge loss or the logistic loss.
    reg : float, default 1e-4
        L2 strength: the objective is mean loss + reg/2 ||w||^2 (scikit-learn's
        alpha; LIBLINEAR's C = 1 / (n * reg)).
    fit_intercept : bool, default True
        Learn an unregularised intercept b, the score being x . w + b (as
        scikit-learn's SGDClassifier; LIBLINEAR's -B 1 is the regularised
        variant). Without one, an all-zero row has score 0 and is predicted
        negative, and a rare class pulls the boundary through the origin.
    class_weight : dict, 'balanced' or None, default None
        Weights of the classes' samples, multiplying sample_weight: {label:
        weight} (a class not named weighs 1), or 'balanced', n / (2 x the class's
        count), as scikit-learn's.
    multi_class : {'ovr', 'multinomial'}, default 'ovr'
        With more than two classes: one-vs-rest (K binary problems in one pass,
        as SGDClassifier), or, for loss='logistic', the multinomial (softmax)
        model, whose predict_proba is the softmax of the scores (as scikit-learn's
        LogisticRegression).
    shuffle_rows : bool, default True
        Shuffle the rows once before training (a copy of X). False for rows
        stored in random order already (a generated click log, a shuffled file):
        no copy, and X may stay memory-mapped or stream from disk.
    {training parameters}

    Attributes
    ----------
    coef_ : numpy.ndarray of float32, shape (n_features,)
    intercept_ : numpy.ndarray, shape (1,)
        [0.] without an intercept.
    classes_ : numpy.ndarray, shape (2,)
        A score > 0 predicts classes_[1], else classes_[0] (see
        predicts_positive); the recorded test error counts exactly the mistakes
        of predict().
    n_features_in_ : int
    step_ : float
        The step used (step='auto' resolved).
    step_schedule_, decay_ : str, float
        The step schedule and decay used (None resolved).
    n_iter_ : int
        Epochs trained: fit's epochs, plus one per partial_fit.
    seed_ : int
        The seed used: seed, or the one drawn for seed=None (pass it to reproduce
        the run; with one worker, bit for bit).
    dense_input_ : bool
        X was given dense (not scipy.sparse): the intercept then takes a feature's
        step, as in scikit-learn's SGD, else a hundredth of it.
    {run attributes}
    """

    def __sklearn_tags__(self):
        """What scikit-learn (>= 1.6) asks of an estimator it meets in a pipeline."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags
        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(multi_class=True),
                    input_tags=InputTags(sparse=True), non_deterministic=True)

    def fit(self, X, y, eval_set=None, sample_weight=None, **controls):
        """Train on X (n x d, sparse or dense) and binary labels y.

        eval_set=(X_test, y_test) records the test error after every epoch in
        ``history_``. sample_weight: one weight >= 0 per sample, scaling its loss (and
        so its gradient; the regulariser is not weighted), times class_weight's.
        ``controls`` are hogwild.RunControls fields: callback(record) once per
        epoch, progress, checkpoint, checkpoint_every, resume (with the same X, y and
        seed), objective_every (default None here: the exact objective after the
        last epoch alone, NaN in the others' records; 1 measures every epoch, a pass
        over the samples that is a third of a short one-vs-rest epoch, as
        SGDClassifier, which measures none, does not pay).
        """
        automatic_step = self._check_params()
        with phase("check data"):
            self.dense_input_ = not sp.issparse(X)
            X, targets, classes = self._samples(X, y, sample_weight)
        evaluate = None
        if eval_set is not None:
            X_test = as_csr(eval_set[0], n_features=X.shape[1], estimator=self)
            codes, _ = class_indices(label_array(eval_set[1], X_test.shape[0]), classes)
            evaluate = error_rate_metric(X_test, signs(codes)) if classes.size == 2 \
                else ovr_error_metric(X_test, codes, classes.size)
        if not isinstance(self.shuffle_rows, (bool, np.bool_)):
            raise HogwildError(f"shuffle_rows must be True or False, got {self.shuffle_rows!r}")
        seed = self.seed_ = drawn_seed(self.seed, self.backend)
        if self.shuffle_block != 1 and self.shuffle_rows:
            with phase("shuffle"):
                rows = np.random.default_rng(seed).permutation(X.shape[0])
                X = X[rows]
                targets = targets[rows] if classes.size == 2 else tuple(t[rows] for t in targets)
        with phase("objective"):
            self._resolve_schedule(X if automatic_step else None, classes.size)
            objective = self._objective(X, targets, classes.size, seed)
        result = engine_fit(objective, self.training_config(
            step=self.step_, step_schedule=self.step_schedule_, decay=self.decay_, seed=seed),
            run_controls(evaluate, {"objective_every": None, **controls}))
        self.classes_, self.n_features_in_, self.n_iter_ = classes, X.shape[1], self.epochs
        self._keep_model(result)
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch over the batch (X, y), from the current model: for data that
        arrives in pieces (a stream, or more than memory holds). The first call
        needs ``classes`` (both labels the model will see); later batches must
        have the same features and labels among them. The step is the schedule's
        at epoch ``n_iter_`` (step='auto' is taken from the first batch), so the
        schedule continues across calls, and after fit too."""
        automatic_step = self._check_params()
        first = not hasattr(self, "coef_")
        if first and classes is None:
            raise HogwildError("the first call to partial_fit needs classes= (every label "
                               "the model will see)")
        if classes is not None:
            given = distinct_labels(label_array(classes, len(classes)))
            if given.size < 2:
                raise HogwildError(f"classes={given.tolist()}: a classifier needs 2 classes "
                                   "or more")
            if not first and not np.array_equal(given, self.classes_):
                raise HogwildError(f"classes={given.tolist()} differs from the classes the "
                                   f"model was fitted with, {self.classes_.tolist()}")
        dense = not sp.issparse(X)
        with phase("check data"):
            X, targets, _ = self._samples(X, y, sample_weight,
                                          given if first else self.classes_,
                                          None if first else self.n_features_in_)
        if first:
            self._resolve_schedule(X if automatic_step else None, given.size)
            self.dense_input_ = dense
            self.classes_, self.n_features_in_, self.n_iter_ = given, X.shape[1], 0
        if not hasattr(self, "seed_"):  # a first call, or a model read from a file
            self.seed_ = drawn_seed(self.seed, self.backend)
        # each call draws its own order and lazy turns: the same batch given again is
        # another epoch, not the same one
        seed = _epoch_seed(self.seed_, self.n_iter_)
        objective = self._objective(X, targets, self.classes_.size, seed)
        if not first:  # from the current model
            if self.classes_.size == 2:
                objective.params[0][:] = self.coef_
                objective.params[1][INTERCEPT_SLOT] = self.intercept_[0]
            else:
                objective.params[0][:] = self.coef_.T
                objective.params[1][CLASS_SLOT:CLASS_SLOT + self.classes_.size] = self.intercept_
        if not hasattr(self, "step_schedule_"):  # a model read from a file
            self._resolve_schedule(None, self.classes_.size, self.step_)
        batch = StepSchedule(self.step_schedule_, self.step_, self.decay_).from_epoch(
            self.n_iter_)
        # replication=None is 'shared' here: auto's probe would cost more than a batch
        config = self.training_config(step=batch.step, epochs=1, decay=batch.decay,
                                      step_schedule=batch.kind,
                                      replication=self.replication or "shared", seed=seed)
        self._keep_model(engine_fit(objective, config, RunControls()))
        self.n_iter_ += 1
        return self

    def _schedule(self, n_classes):
        """(step_schedule, decay) with None resolved (see their parameters)."""
        kind = self.step_schedule or SCHEDULE_BY_CLASSES.get(n_classes, "inverse_updates")
        return kind, DEFAULT_DECAY.get(kind, 1.0) if self.decay is None else self.decay

    def _resolve_schedule(self, X, n_classes, step=None):
        """Set step_schedule_, decay_ and step_ (step='auto' from X when X is given,
        else the step parameter, or ``step``)."""
        self.step_schedule_, self.decay_ = self._schedule(n_classes)
        self.step_ = auto_step(X) * AUTO_STEP_FACTOR.get(self.step_schedule_, 1.0) \
            if X is not None else step if step is not None else self.step

    def training_config(self, **resolved):
        """Params.training_config, replication=None resolved (see _replication) and
        the step schedule's None (that of the fitted classes, two before a fit)."""
        kind, decay = self._schedule(len(getattr(self, "classes_", ())) or 2)
        return super().training_config(**{"replication": self._replication(),
                                          "step_schedule": kind, "decay": decay,
                                          **resolved})

    def _replication(self):
        """The replication given, or for None 'auto' where the backend runs it."""
        if self.replication is not None:
            return self.replication
        return "auto" if "auto" in get_backend(self.backend).replication_modes else "shared"

    def _check_params(self):
        """The parameters checked before any work; whether the step is automatic."""
        check_loss(self.loss)
        choose(MULTI_CLASS, self.multi_class, "multi_class")
        if self.multi_class == "multinomial" and self.loss != "logistic":
            raise HogwildError(f"multi_class='multinomial' is the logistic loss's softmax "
                               f"model; this SparseSVM has loss={self.loss!r}")
        check_reg(self.reg)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise HogwildError(f"fit_intercept must be True or False, got {self.fit_intercept!r}")
        choose(SCHEDULERS, self.scheduler, "scheduler")
        automatic_step = isinstance(self.step, str) and self.step == "auto"
        # step_schedule=None: checked as inverse_updates, which takes any decay >= 0; a
        # decay the schedule of the data's classes refuses is named by fit
        kind, decay = self._schedule(3)
        self.training_config(step=1.0 if automatic_step else self.step, step_schedule=kind,
                             decay=decay)
        if self.fit_intercept and "supports" in get_scheduler(self.scheduler).needs:
            raise HogwildError(
                f"scheduler={self.scheduler!r} runs together only samples that share no "
                "coordinate, and an intercept is a coordinate of every sample; pass "
                "fit_intercept=False (--no-intercept) or another scheduler")
        return automatic_step

    def _samples(self, X, y, sample_weight, classes=None, n_features=None):
        """(X as CSR, the targets, the classes): with two classes the targets are the
        labels +-1 times each sample's weight, with more (class indices, weights)."""
        if y is None:
            raise HogwildError("SparseSVM requires y to be passed, but the target y is None")
        X = as_csr(X, n_features=n_features, estimator=self)
        y = label_array(y, X.shape[0])
        if classes is None:
            classes = distinct_labels(y)
            if classes.size < 2:
                raise HogwildError(f"y has 1 class ({classes.tolist()[0]!r}); a classifier "
                                   "needs samples of 2 classes or more")
        codes, classes = class_indices(y, classes)
        weights = sample_weights(sample_weight, X.shape[0])
        per_class = class_weights(self.class_weight, classes, codes)
        weight = None if weights is None and per_class is None else \
            (1.0 if weights is None else weights) * (1.0 if per_class is None else per_class)
        if weight is not None and not (weight != 0).any():
            raise HogwildError("every sample has weight zero: there is nothing to learn")
        if classes.size > 2:
            return X, (codes, np.ones(X.shape[0], np.float32) if weight is None
                       else weight.astype(np.float32)), classes
        labels = signs(codes)
        if weight is not None:
            labels = (labels * weight).astype(np.float32)
        return X, labels, classes

    def _objective(self, X, targets, n_classes, seed):
        """The binary Objective, or the one-vs-rest one of more classes."""
        if n_classes == 2:
            return svm_objective(X, targets, self.loss, self.reg, seed,
                                 bool(self.fit_intercept), self._intercept_rate())
        loss = "multinomial" if self.multi_class == "multinomial" else self.loss
        return multiclass_objective(X, *targets, n_classes, loss, self.reg, seed,
                                    bool(self.fit_intercept), self._intercept_rate())

    def _intercept_rate(self):
        """The intercept's step per unit step: scikit-learn's rule, by X's form."""
        return DENSE_INTERCEPT_RATE if self.dense_input_ else INTERCEPT_RATE

    def _keep_model(self, result):
        if self.classes_.size == 2:
            self.coef_ = result.params[0]
            self.intercept_ = intercept_of(result.params)
        else:  # scikit-learn's shapes: (K, d) and (K,)
            self.coef_ = np.ascontiguousarray(result.params[0].T)
            self.intercept_ = result.params[1][CLASS_SLOT:CLASS_SLOT + self.classes_.size].copy()
        self.keep_run(result)

    def _check_fitted(self):
        """The number of classes of a fitted model (else scikit-learn's error)."""
        if not hasattr(self, "coef_"):
            raise not_fitted(self, "fit(X, y)")
        return self.classes_.size

    def decision_function(self, X):
        """x . coef_ + intercept_ for each row of X, computed by the training
        metric's own float32 code (_score), so predict() and the recorded test
        error never disagree on a row near the boundary; with more than two
        classes, one column per class."""
        if self._check_fitted() > 2:
            return self._class_scores(X)
        return self._per_row(_decision_values, X, np.float32)

    def _class_scores(self, X):
        """The (n, K) scores of the one-vs-rest model."""
        X = as_csr(X, n_features=self.n_features_in_, estimator=self)
        k = self.classes_.size
        intercepts = np.zeros(CLASS_SLOT + k + 16, np.float32)
        intercepts[CLASS_SLOT:CLASS_SLOT + k] = self.intercept_
        out = np.empty((X.shape[0], k), np.float32)
        ovr_scores(np.ascontiguousarray(self.coef_.T, np.float32), intercepts, X.indptr,
                   X.indices, X.data, out)
        return out

    def _positive(self, X):
        """predicts_positive for each row of X, one byte a row."""
        return self._per_row(_positive_rows, X, np.bool_)

    def _per_row(self, kernel, X, dtype):
        self._check_fitted()
        X = as_csr(X, n_features=self.n_features_in_, estimator=self)
        padded = np.zeros(INTERCEPT_PAD, np.float32)
        padded[INTERCEPT_SLOT] = self.intercept_[0]
        out = np.empty(X.shape[0], dtype)
        kernel((np.ascontiguousarray(self.coef_, np.float32), padded),
               (X.indptr, X.indices, X.data), out)
        return out

    def predict(self, X):
        if self._check_fitted() > 2:  # the highest score; ties: the first class
            return self.classes_[self._class_scores(X).argmax(axis=1)]
        return np.where(self._positive(X), self.classes_[1], self.classes_[0])

    @property
    def predict_proba(self):
        """P(classes_[0]), P(classes_[1]) for each row of X: the logistic loss's model,
        sigmoid(decision_function(X)); with more classes, each class's sigmoid
        normalised over the classes (multi_class='multinomial': their softmax). The
        hinge loss models no probability: there the attribute is missing (an
        AttributeError), as SGDClassifier's."""
        self._probabilistic("predict_proba")
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """The logarithms of predict_proba's columns (loss='logistic' only)."""
        self._probabilistic("predict_log_proba")
        return self._predict_log_proba

    def _probabilistic(self, method):
        if self.loss != "logistic":
            raise AttributeError(f"{method} is for loss='logistic' (a probability model); "
                                 f"this SparseSVM has loss={self.loss!r}")

    def _predict_proba(self, X):
        return np.exp(self._predict_log_proba(X))

    def _predict_log_proba(self, X):
        score = self.decision_function(X).astype(np.float64)
        # log sigmoid(s) = -log(1 + e^-s), without overflow for either sign
        if score.ndim == 1:
            return np.column_stack([-np.logaddexp(0.0, score), -np.logaddexp(0.0, -score)])
        if self.multi_class == "multinomial":  # the softmax of the scores
            top = score.max(axis=1, keepdims=True)
            return score - top - np.log(np.exp(score - top).sum(axis=1, keepdims=True))
        # one-vs-rest: each class's sigmoid, normalised over the classes (as
        # scikit-learn's SGDClassifier)
        each = -np.logaddexp(0.0, -score)
        top = each.max(axis=1, keepdims=True)
        return each - top - np.log(np.exp(each - top).sum(axis=1, keepdims=True))

    def score(self, X, y):
        """Mean accuracy, with three boolean temporaries (it is run on training sets
        of 10^7 rows and more, whose rows are all in memory by then)."""
        if self._check_fitted() > 2:
            return float(np.mean(self.predict(X) == np.asarray(y)))
        right = self._positive(X)
        y = np.asarray(y)
        is_high = y == self.classes_[1]
        np.equal(right, is_high, out=right)
        known = np.equal(y, self.classes_[0])
        known |= is_high
        right &= known  # a label of neither class is a mistake
        return float(np.mean(right))

    def save(self, path):
        """Write the fitted model (coef_, intercept_, classes_ and the parameters)
        to an .npz file; see hogwild.model_file."""
        self._check_fitted()
        write_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                    {"params": self.get_params(), "workers": self.workers_, "step": self.step_,
                     "n_iter": self.n_iter_, "dense_input": self.dense_input_},
                    {"coef": self.coef_, "intercept": self.intercept_, "classes": self.classes_})

    @classmethod
    def load(cls, path):
        """A model written by save(); a file of another kind or version is refused."""
        def build(meta, arrays):
            model = cls(**meta["params"])
            model.classes_ = arrays["classes"]
            k = model.classes_.shape[0] if model.classes_.ndim == 1 else 0
            if k < 2:
                raise ValueError(f"classes has shape {model.classes_.shape}, not (K,) with "
                                 "K >= 2")
            model.coef_ = _float_vector(arrays["coef"], "coef") if k == 2 \
                else _float_matrix(arrays["coef"], "coef", k)
            model.intercept_ = _float_vector(arrays["intercept"], "intercept",
                                             size=1 if k == 2 else k)
            model.n_features_in_ = model.coef_.shape[-1]
            model.workers_, model.step_ = meta["workers"], meta["step"]
            # files written before partial_fit: a fit of the model's epochs, sparse X
            model.n_iter_ = check_int("n_iter", meta.get("n_iter", model.epochs), 0)
            model.dense_input_ = bool(meta.get("dense_input", False))
            model.history_ = []
            return model
        return read_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION, "sparse linear classifier",
                          build)


def _float_matrix(array, name, rows):
    """A saved model's float matrix of ``rows`` rows, or a ValueError."""
    if array.ndim != 2 or array.dtype.kind != "f" or array.shape[0] != rows \
            or not np.isfinite(array).all():
        raise ValueError(f"{name} is {array.dtype}{list(array.shape)}, not a finite float "
                         f"matrix of {rows} rows (one per class)")
    return array


def _float_vector(array, name, size=None):
    """A saved model's float vector, or a ValueError naming what is wrong with it."""
    if array.ndim != 1 or array.dtype.kind != "f" or (size is not None and array.size != size) \
            or not np.isfinite(array).all():
        raise ValueError(f"{name} is {array.dtype}{list(array.shape)}, not a finite float "
                         f"vector{f' of {size}' if size else ''}")
    return array


def auto_step(X):
    """0.2 / mean ||x_e||^2: a step that keeps each update's change of the margin
    about 0.2 whatever the feature scaling."""
    # a piece at a time (X may lie on disk); X.multiply(X) would copy X
    mean_sq_norm = sum(_sum_of_squares(piece) for piece in pieces(X.data)) / X.shape[0]
    return 0.2 / mean_sq_norm if mean_sq_norm > 0 else 0.2
