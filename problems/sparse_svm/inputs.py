"""The checks and conversions of what a user gives: X, labels, sample and class
weights, the loss and the regularisation strength."""
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.backends.host import all_finite
from hogwild.disk_arrays import (in_memory, in_threads, mapped_file, occurrences, part_bounds,
                                  pieces)
from hogwild.errors import HogwildError, check_nonnegative, choose
from hogwild.estimator import as_matrix
from hogwild.limits import MODEL_BYTES_PER_FEATURE, available_memory

LOSSES = ("hinge", "logistic")


def check_loss(loss):
    return choose(LOSSES, loss, "loss")


def check_reg(reg):
    return check_nonnegative("reg", reg)


def as_csr(X, n_features=None, estimator=None, own_indices=False):
    """X as CSR with float32 values, no duplicates, column indices in 0..n_features
    - 1, and int32 indices and indptr where they hold (int64 beyond 2^31 - 1
    nonzeros: scipy's choice).

    Any scipy.sparse format or dense array is accepted and converted once, and other
    array-likes (lists, pandas frames) through hogwild.estimator.as_matrix. The
    caller's matrix is never modified. ``n_features``: the count a fitted
    ``estimator`` expects. ``own_indices``: indices and indptr memory-mapped from a
    file are read into memory before they are checked, so that compiled code that
    trusts them (scoring) cannot read out of bounds after an edit of the file.
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
    source = mapped_file(csr.indices)  # named in errors, whether or not it is copied
    if own_indices and (source or mapped_file(csr.indptr)):
        csr = sp.csr_matrix((csr.data, in_memory(csr.indices), in_memory(csr.indptr)),
                            shape=csr.shape)
    # a piece at a time: X may be memory-mapped from files larger than memory
    bounds = part_bounds(csr.data.size)
    if not all(in_threads(lambda part: all(all_finite([piece]) for piece in pieces(
            csr.data[bounds[part]:bounds[part + 1]])), len(bounds) - 1)):
        raise HogwildError("X contains NaN, Inf or values beyond float32's range "
                           "(|x| > 3.4e38)")
    if not _canonical(csr):
        try:  # an index out of range is an error (in a cache entry: an edit under a run)
            occurrences(csr.indices, csr.shape[1])
        except HogwildError as error:
            if source is None or mapped_file(csr.indices):  # it names the file itself
                raise
            raise HogwildError(f"{source}: {error}") from None
        csr = csr.copy()
        csr.sum_duplicates()
    if csr.indices.dtype == np.int32:
        return csr
    # rebuilt from its arrays, scipy keeps int32 indices (and indptr) where they hold
    return sp.csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape)


def _canonical(csr):
    """scipy's has_canonical_format (indices increasing within each row), and
    every index below the column count, checked a piece of the indices at a time
    (see hogwild.disk_arrays.pieces), each thread over a part of the rows."""
    indptr = np.asarray(csr.indptr)
    rows = part_bounds(csr.shape[0], (1 << 20) * csr.shape[0] // max(csr.indices.size, 1))

    def check_part(part):
        row, previous, start = int(rows[part]), -1, int(indptr[rows[part]])
        for piece in pieces(csr.indices[start:indptr[rows[part + 1]]]):
            ok, row, previous = _increasing_within_rows(indptr, piece, start, row, previous,
                                                        csr.shape[1])
            if not ok:
                return False
            start += piece.size
        return True

    return all(in_threads(check_part, len(rows) - 1))


@njit(nogil=True, cache=True)
def _increasing_within_rows(indptr, piece, start, row, previous, n_cols):
    """Whether the nonzeros start.. (``piece``) keep each row's indices increasing
    and in 0..n_cols - 1, carrying the row and the last index seen from one piece
    to the next."""
    for j in range(piece.size):
        k = start + j
        while indptr[row + 1] <= k:
            row += 1
        if k > indptr[row] and piece[j] <= previous or piece[j] < 0 or piece[j] >= n_cols:
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
    try:
        found = np.unique(y)
    except TypeError:  # labels that do not compare: 1 and 'b', None among strings
        kinds = sorted({"string" if isinstance(label, str) else "number"
                        if isinstance(label, numbers.Number) else type(label).__name__
                        for label in y.tolist()})
        raise HogwildError(f"Mix of label input types ({' and '.join(kinds)}): y's labels "
                           "must be all strings or all numbers") from None
    return np.array(found.tolist()) if found.dtype == object else found


MANY_CLASSES = 1000  # above this, fewer than 2 samples a class reads as ids, not labels
CLASS_UPDATES_PER_EPOCH = 10 ** 12  # classes x nonzeros: ~6 minutes an epoch on 2 cores


def check_class_count(n_classes, n_samples, nonzeros):
    """Refuse, before any work, a class count the model cannot learn or train in
    reasonable time: every epoch updates every class's weights on each nonzero."""
    if n_classes > MANY_CLASSES and 2 * n_classes > n_samples:
        raise HogwildError(f"y has {n_classes:,} classes for {n_samples:,} samples, fewer "
                           "than 2 samples a class: no class can be learned from that (is y "
                           "a column of ids?)")
    work = n_classes * max(nonzeros, n_samples)
    if work > CLASS_UPDATES_PER_EPOCH:
        raise HogwildError(f"{n_classes:,} classes over {nonzeros:,} nonzeros take "
                           f"{work:.1e} class updates an epoch (more than "
                           f"{CLASS_UPDATES_PER_EPOCH:.0e}: hours of training); group the "
                           "labels into fewer classes, or sample the data")


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


def class_weights(class_weight, classes, codes, pool=None):
    """Each sample's class weight (``codes``: its index in ``classes``): from a dict
    {label: weight}, or "balanced" (n / (K x the class's count), as scikit-learn's,
    counted over the job's samples where ``pool`` has them, a
    hogwild.pooling), or None (all 1: returns None)."""
    if class_weight is None:
        return None
    if isinstance(class_weight, str) and class_weight == "balanced":
        counts = np.bincount(codes, minlength=classes.size).astype(np.float64)
        samples = codes.size
        if pool is not None:
            counts, samples = pool.sum(counts), pool.sum(samples)
        weight = np.divide(samples, classes.size * counts, out=np.zeros(classes.size),
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

