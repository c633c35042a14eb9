"""Synthetic sparse classification data that looks like TF-IDF text.

Feature frequencies follow a power law (Zipf with exponent ``zipf``): a few
features occur in most rows, most features are rare, as in bag-of-words data.
The default exponent 0.65 with 90 nonzeros per row and 50,000 features puts the
most frequent feature in about half the rows (Delta ~ 0.5), like TF-IDF text
without stop words (news20-bydate 0.51, imdb-aclimdb 0.61).
Each row holds about ``nnz_per_row`` distinct features with positive weights
normalised to unit L2 norm; labels are the sign of a planted sparse linear model
plus Gaussian noise, so a linear classifier can reach a known error rate.
"""
import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.errors import HogwildError, check_int


@njit(nogil=True, cache=True)
def _fill_rows(seed, cdf, nnz_per_row, indptr, indices, values):
    """Draw each row's features from cdf (with rejection of repeats within a row)."""
    np.random.seed(seed)
    n_features = cdf.size
    for r in range(indptr.size - 1):
        lo, hi = indptr[r], indptr[r + 1]
        k = lo
        while k < hi:
            j = np.searchsorted(cdf, np.random.random(), side="right")
            if j >= n_features:
                j = n_features - 1
            duplicate = False
            for m in range(lo, k):
                if indices[m] == j:
                    duplicate = True
                    break
            if not duplicate:
                indices[k] = j
                values[k] = np.float32(1.0 + np.random.exponential(1.0))
                k += 1
        norm = np.float32(0.0)
        for m in range(lo, hi):
            norm += values[m] * values[m]
        norm = np.sqrt(norm)
        for m in range(lo, hi):
            values[m] /= norm


def make_sparse_classification(n_samples=100_000, n_features=50_000, nnz_per_row=90,
                               zipf=0.65, noise=0.1, seed=0, positive_fraction=0.5,
                               empty_fraction=0.0):
    """(X, y): X a float32 CSR matrix, y in {-1, +1}; deterministic for a seed.

    positive_fraction: about this share of the labels is +1 (the planted margin is
    thresholded at its quantile), e.g. 0.03 for a rare class. empty_fraction: this
    share of the rows has no features at all (an empty document), labelled like a
    row whose planted margin is 0: only an intercept can classify them.
    """
    for name, value in (("n_samples", n_samples), ("n_features", n_features),
                        ("nnz_per_row", nnz_per_row)):
        check_int(name, value, 1)
    if nnz_per_row > n_features // 2:
        raise HogwildError(f"nnz_per_row={nnz_per_row} must be <= n_features / 2 "
                           f"= {n_features // 2}")
    if not zipf >= 0 or not noise >= 0:
        raise HogwildError(f"zipf and noise must be >= 0, got zipf={zipf!r}, noise={noise!r}")
    if not 0 < positive_fraction < 1 or not 0 <= empty_fraction < 1:
        raise HogwildError(f"positive_fraction must be in (0, 1) and empty_fraction in [0, 1), "
                           f"got {positive_fraction!r} and {empty_fraction!r}")
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_features + 1, dtype=np.float64) ** zipf
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    lengths = rng.poisson(nnz_per_row - 1, size=n_samples) + 1
    lengths = np.minimum(lengths, n_features // 2)
    if empty_fraction:
        lengths[rng.random(n_samples) < empty_fraction] = 0
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = np.empty(indptr[-1], dtype=np.int32)
    values = np.empty(indptr[-1], dtype=np.float32)
    _fill_rows(int(rng.integers(2**31)), cdf, nnz_per_row, indptr, indices, values)
    # Shuffle feature ids so that frequent features are not adjacent in memory,
    # as in real vocabularies (sorted alphabetically, not by frequency).
    relabel = rng.permutation(n_features).astype(np.int32)
    X = sp.csr_matrix((values, relabel[indices], indptr), shape=(n_samples, n_features))
    X.sort_indices()
    w_true = rng.standard_normal(n_features) * (rng.random(n_features) < 0.2)
    margin = X @ w_true
    margin = (margin - np.median(margin[lengths > 0])) / (margin.std() or 1.0)
    noisy = margin + noise * rng.standard_normal(n_samples)
    threshold = 0.0 if positive_fraction == 0.5 else np.quantile(noisy, 1 - positive_fraction)
    y = np.where(noisy >= threshold, 1.0, -1.0)
    return X, y.astype(np.float32)
