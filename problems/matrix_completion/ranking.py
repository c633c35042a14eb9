"""Held-out ranking measures of an implicit-feedback model, per user, as LightFM's
and implicit's evaluations define them: each user's items are ranked by score
with the items they interacted with in training left out; a user counts when they
have held-out items.

- precision@k: held-out items among the top k, over k;
- recall@k: held-out items among the top k, over the user's held-out items;
- ndcg@k: sum over hits at rank r (from 1) of 1 / log2(r + 1), over the same sum
  for a perfect ranking (min(k, held-out items) hits first);
- auc: the fraction of (held-out item, other item) pairs ranked right, ties half
  (other items: neither in training nor held out)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.errors import HogwildError, check_int
from hogwild.limits import usable_cores

MEASURES = ("precision", "recall", "ndcg", "auc")
# approximate top-k (faiss's HNSW): neighbours per item in the graph, and how many
# candidates a build and a search keep (faiss's defaults are 32, 40 and 16; a
# search keeps at least as many as it returns)
HNSW_NEIGHBOURS = 32
HNSW_BUILD_BREADTH = 80
HNSW_SEARCH_BREADTH = 64
SEARCH_BLOCK = 65536  # users per search: memory of k candidates each


@njit(nogil=True, inline="always")
def lower_bound(values, low, high, value):
    """The first index in [low, high) of the sorted ``values`` whose value is not
    below ``value`` (high where none is)."""
    while low < high:
        middle = (low + high) >> 1
        if values[middle] < value:
            low = middle + 1
        else:
            high = middle
    return low


@njit(nogil=True, inline="always")
def _offer(top_items, top_scores, filled, item, value):
    """Offer ``item`` of score ``value`` to the best ``filled`` so far, kept sorted
    (best first; ties: the earlier offer) in arrays of k = top_items.size; returns
    how many are filled now."""
    k = top_items.size
    if filled == k and value <= top_scores[k - 1]:
        return filled
    at = min(filled, k - 1)
    while at > 0 and top_scores[at - 1] < value:
        top_scores[at], top_items[at] = top_scores[at - 1], top_items[at - 1]
        at -= 1
    top_scores[at], top_items[at] = value, item
    return min(filled + 1, k)


@njit(nogil=True, cache=True, fastmath=True)
def _scores(U, V, bias, u, s):
    """s[i] = U[u] . V[i] + bias[i] (float32 products, as the kernels score)."""
    for i in range(V.shape[0]):
        total = np.float32(0.0)
        for f in range(V.shape[1]):
            total += U[u, f] * V[i, f]
        s[i] = total + bias[i]


@njit(nogil=True, cache=True)
def _rank_users(U, V, bias, users, train_indptr, train_items, test_indptr, test_items, k,
                held_out, sums):
    """Add the measures of each user in ``users`` (order of MEASURES) to sums[0:4]
    and count them in sums[4]; held_out is scratch of n_items booleans, False on
    entry and exit. Per user, one pass over the items for the top k (kept sorted by
    insertion, ties to the lower item index as a stable sort) and the AUC (each
    other item looked up among the user's sorted held-out scores)."""
    n_items = V.shape[0]
    top_items, top_scores, s = np.empty(k, np.int64), np.empty(k), np.empty(n_items)
    held = np.empty(max(1, int((test_indptr[1:] - test_indptr[:-1]).max())))
    for u in users:
        if test_indptr[u + 1] == test_indptr[u]:
            continue
        _scores(U, V, bias, u, s)
        for p in range(train_indptr[u], train_indptr[u + 1]):
            s[train_items[p]] = -np.inf
        n_test = 0
        for p in range(test_indptr[u], test_indptr[u + 1]):
            item = test_items[p]
            if s[item] > -np.inf:  # an item also in training is not held out
                held_out[item] = True
                value, at = s[item], n_test  # insertion sort: a user holds out few
                while at > 0 and held[at - 1] > value:
                    held[at] = held[at - 1]
                    at -= 1
                held[at] = value
                n_test += 1
        if n_test == 0:
            continue
        filled, hits, dcg, candidates, right = 0, 0, 0.0, 0, 0.0
        for i in range(n_items):
            value = s[i]
            if value == -np.inf:
                continue
            if not held_out[i]:
                candidates += 1
                low, ties = lower_bound(held, 0, n_test, value), 0
                while low + ties < n_test and held[low + ties] == value:
                    ties += 1
                right += (n_test - low - ties) + 0.5 * ties
            filled = _offer(top_items, top_scores, filled, i, value)
        for r in range(filled):
            if held_out[top_items[r]]:
                hits += 1
                dcg += 1.0 / np.log2(r + 2.0)
        ideal = 0.0
        for r in range(min(k, n_test)):
            ideal += 1.0 / np.log2(r + 2.0)
        sums[0] += hits / k
        sums[1] += hits / n_test
        sums[2] += dcg / ideal
        sums[3] += right / (n_test * candidates) if candidates > 0 else 0.5
        sums[4] += 1
        for p in range(test_indptr[u], test_indptr[u + 1]):
            held_out[test_items[p]] = False


@njit(nogil=True, cache=True)
def _top_rows(U, V, bias, users, rows, seen_indptr, seen_items, out_items, out_scores):
    """For each r in ``rows``: out_items[r] and out_scores[r], the highest-scoring
    items of user users[r], best first (ties: the lower item), the user's seen
    items (seen_indptr empty: none) left out; -1 and -inf past the candidates.
    One pass over the items per user, kept sorted by insertion."""
    n_items = V.shape[0]
    s = np.empty(n_items, np.float32)
    for r in rows:
        u = users[r]
        _scores(U, V, bias, u, s)
        if seen_indptr.size:
            for p in range(seen_indptr[u], seen_indptr[u + 1]):
                s[seen_items[p]] = -np.inf
        best_items, best = out_items[r], out_scores[r]
        filled = 0
        for i in range(n_items):
            value = s[i]
            if value > -np.inf:
                filled = _offer(best_items, best, filled, i, value)
        best_items[filled:] = -1
        best[filled:] = -np.inf


def top_n_rows(user_factors, item_factors, item_bias, users, n, seen=None, workers=None):
    """(items int64[len(users), n], scores float32[len(users), n]): each user's n
    highest scores U_u . V_i + bias_i, best first, the items of ``seen`` (indptr,
    items) left out; rows padded with -1 and -inf where fewer items remain. Compiled,
    the users in shares on ``workers`` threads (None: every usable core), memory
    one score per item per thread."""
    users = np.ascontiguousarray(users, np.int64)
    out_items = np.empty((users.size, n), np.int64)
    out_scores = np.empty((users.size, n), np.float32)
    indptr, seen_items = seen if seen is not None else (np.zeros(0, np.int64),
                                                        np.zeros(0, np.int32))
    U = np.ascontiguousarray(user_factors, np.float32)
    V = np.ascontiguousarray(item_factors, np.float32)
    bias = np.ascontiguousarray(item_bias, np.float32)
    workers = usable_cores() if workers is None else workers
    shares = np.array_split(np.arange(users.size), max(1, min(workers, users.size)))

    def top(rows):
        _top_rows(U, V, bias, users, rows, indptr, seen_items, out_items, out_scores)

    if len(shares) == 1:
        top(shares[0])
    else:
        with ThreadPoolExecutor(len(shares)) as pool:
            list(pool.map(top, shares))
    return out_items, out_scores


@njit(nogil=True, cache=True)
def _unseen_top(candidates, scores, users, seen_indptr, seen_items, out_items, out_scores):
    """out_items[r], out_scores[r]: the first of candidates[r] (best first, -1 for
    none) that user users[r] has not seen (sorted seen lists; empty indptr: none),
    padded with -1 and -inf."""
    n = out_items.shape[1]
    for r in range(candidates.shape[0]):
        u, filled = users[r], 0
        for c in range(candidates.shape[1]):
            item = candidates[r, c]
            if item < 0 or filled == n:
                break
            if seen_indptr.size:
                at = lower_bound(seen_items, seen_indptr[u], seen_indptr[u + 1], item)
                if at < seen_indptr[u + 1] and seen_items[at] == item:
                    continue
            out_items[r, filled], out_scores[r, filled] = item, scores[r, c]
            filled += 1
        out_items[r, filled:] = -1
        out_scores[r, filled:] = -np.inf


def approximate_top_n_rows(user_factors, item_factors, item_bias, users, n, seen=None,
                           workers=None):
    """top_n_rows from an approximate nearest-neighbour index (faiss's HNSW graph over
    the items, inner product: the items as (V_i, b_i), a user as (U_u, 1)), for
    catalogues where the exact pass over every item per user is too slow. Each
    user asks for n plus their seen items' count (users in groups by that count,
    rounded up to a power of two), so that n remain once those are dropped.
    Needs faiss-cpu (pip install 'hogwild[ann]')."""
    try:
        import faiss
    except ImportError:
        raise HogwildError("approximate top-k needs faiss-cpu: pip install 'hogwild[ann]'") \
            from None
    users = np.ascontiguousarray(users, np.int64)
    n_items = item_factors.shape[0]
    indptr, seen_items = seen if seen is not None else (np.zeros(0, np.int64),
                                                        np.zeros(0, np.int32))
    if indptr.size:  # binary searches need each user's items sorted
        seen_items = np.concatenate([np.sort(seen_items[a:b]) for a, b in
                                     zip(indptr[:-1], indptr[1:])] or [seen_items])
    faiss.omp_set_num_threads(usable_cores() if workers is None else workers)
    points = np.hstack([item_factors, item_bias[:, None]]).astype(np.float32)
    index = faiss.IndexHNSWFlat(points.shape[1], HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_BUILD_BREADTH
    index.add(points)
    counts = np.diff(indptr)[users] if indptr.size else np.zeros(users.size, np.int64)
    wanted = np.minimum(n + (1 << np.ceil(np.log2(counts + 1)).astype(np.int64)), n_items)
    out_items = np.empty((users.size, n), np.int64)
    out_scores = np.empty((users.size, n), np.float32)
    for k in np.unique(wanted):
        rows = np.flatnonzero(wanted == k)
        index.hnsw.efSearch = max(HNSW_SEARCH_BREADTH, int(k))
        for block in np.array_split(rows, max(1, rows.size // SEARCH_BLOCK)):
            queries = np.hstack([user_factors[users[block]],
                                 np.ones((block.size, 1))]).astype(np.float32)
            scores, candidates = index.search(queries, int(k))
            found_items = np.empty((block.size, n), np.int64)
            found_scores = np.empty((block.size, n), np.float32)
            _unseen_top(candidates, scores, users[block], indptr, seen_items, found_items,
                        found_scores)
            out_items[block], out_scores[block] = found_items, found_scores
    return out_items, out_scores


def sampled_negatives(train, test, count=100, seed=0):
    """He et al. 2017's candidates: (users, candidates int64[users, 1 + count]) for
    each user with a held-out item in ``test`` (one per user, leave_one_out), that
    item first, then ``count`` items the user has in neither set, drawn uniformly
    without replacement by ``seed``; every model ranks the same candidates."""
    train, test = sp.csr_matrix(train), sp.csr_matrix(test)
    rng = np.random.default_rng(seed)
    n_items = train.shape[1]
    users = np.flatnonzero(np.diff(test.indptr))
    candidates = np.empty((users.size, 1 + count), np.int64)
    for row, user in enumerate(users):
        known = np.union1d(train.indices[train.indptr[user]:train.indptr[user + 1]],
                           test.indices[test.indptr[user]:test.indptr[user + 1]])
        if n_items - known.size < count:
            raise HogwildError(f"user {user} has {n_items - known.size} items to draw "
                               f"{count} negatives from")
        drawn = np.empty(0, np.int64)
        while drawn.size < count:  # rejection: a user knows few of the items
            more = rng.integers(0, n_items, 2 * count)
            drawn = np.unique(np.concatenate([drawn, np.setdiff1d(more, known)]))
        candidates[row, 0] = test.indices[test.indptr[user]]
        candidates[row, 1:] = rng.permutation(drawn)[:count]
    return users, candidates


def hit_ratio_ndcg(scores, k=10):
    """{"hr@k", "ndcg@k"} of scores[users, candidates] whose first column is each
    user's held-out item: its rank among the candidates (ties ranked against it),
    a hit when below k, NDCG 1 / log2(rank + 2) for a hit (He et al. 2017)."""
    k = check_int("k", k, 1)
    rank = (scores[:, 1:] >= scores[:, :1]).sum(axis=1)
    hits = rank < k
    return {f"hr@{k}": float(hits.mean()),
            f"ndcg@{k}": float(np.where(hits, 1.0 / np.log2(rank + 2.0), 0.0).mean())}


def top_n(scores, n):
    """(indices, scores) of the n highest finite scores, best first (ties: the lower
    index)."""
    n = min(n, int(np.isfinite(scores).sum()))
    best = np.argpartition(-scores, n - 1)[:n] if n else np.zeros(0, np.int64)
    best = best[np.argsort(-scores[best], kind="stable")]
    return best, scores[best]


def interaction_lists(matrix, n_users, n_items, what):
    """(indptr int64[n_users + 1], items int32, sorted within users) of a user x item
    scipy.sparse matrix of interactions (stored entries > 0)."""
    if not sp.issparse(matrix):
        raise HogwildError(f"{what} must be a scipy.sparse user x item matrix, got "
                           f"{type(matrix).__name__}")
    if matrix.shape != (n_users, n_items):
        raise HogwildError(f"{what} is {matrix.shape[0]} x {matrix.shape[1]}; the model's "
                           f"users x items are {n_users} x {n_items}")
    csr = sp.csr_matrix(matrix, copy=True)
    csr.data = (csr.data > 0).astype(np.int8)
    csr.eliminate_zeros()
    csr.sum_duplicates()
    csr.sort_indices()
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int32)


def ranking_metrics(user_factors, item_factors, item_bias, test, train=None, k=10):
    """{"precision@k", "recall@k", "ndcg@k", "auc", "test_users"} of the scores
    user_factors @ item_factors.T + item_bias on the held-out interactions ``test``,
    the ``train`` interactions left out of each user's ranking (see the module
    docstring). Each is a users x items scipy.sparse matrix, or its
    interaction_lists (a model evaluated every epoch converts its sets once)."""
    k = check_int("k", k, 1)
    n_users, n_items = user_factors.shape[0], item_factors.shape[0]

    def lists(interactions, what):
        return interactions if isinstance(interactions, tuple) \
            else interaction_lists(interactions, n_users, n_items, what)

    test_indptr, test_items = lists(test, "the test set")
    train_indptr, train_items = (np.zeros(n_users + 1, np.int64), np.zeros(0, np.int32)) \
        if train is None else lists(train, "the training set")
    U = np.ascontiguousarray(user_factors, np.float32)
    V = np.ascontiguousarray(item_factors, np.float32)
    bias = np.zeros(n_items, np.float32) if item_bias is None \
        else np.ascontiguousarray(item_bias, np.float32)

    def rank_share(users):
        """The sums of a share of the users (compiled, without the GIL: the shares
        run on all cores; no BLAS, whose idle threads would spin into the next
        epoch's training)."""
        sums, held_out = np.zeros(5), np.zeros(n_items, np.bool_)
        _rank_users(U, V, bias, users, train_indptr, train_items, test_indptr, test_items,
                    k, held_out, sums)
        return sums

    shares = np.array_split(np.arange(n_users), min(usable_cores(), n_users))
    with ThreadPoolExecutor(len(shares)) as pool:
        sums = sum(pool.map(rank_share, shares))
    if sums[4] == 0:
        raise HogwildError("the test set holds no interactions")
    mean = sums[:4] / sums[4]
    return {f"precision@{k}": float(mean[0]), f"recall@{k}": float(mean[1]),
            f"ndcg@{k}": float(mean[2]), "auc": float(mean[3]), "test_users": int(sums[4])}
