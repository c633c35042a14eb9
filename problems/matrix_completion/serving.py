"""Serving a ranking model's factors: top-k for one user or many (exact, or from an
approximate index), similar users and items, and held-out ranking measures. A
model keeps user_factors_, item_factors_, item_bias_, item_counts_ (popularity,
for users it cannot score) and _seen (each user's training items, left out of
their rankings); ImplicitFactorization and HybridFactorization serve alike."""
import warnings

import numpy as np

from hogwild.errors import HogwildError, check_int
from hogwild.problems.matrix_completion.ranking import (approximate_top_n_rows,
                                                        ranking_metrics, top_n, top_n_rows)


class Recommender:
    """recommend, recommend_all, similar_items, similar_users, score and evaluate
    over a fitted model's factors (see the module docstring)."""

    def _check_fitted(self):
        raise NotImplementedError

    def _cold(self, users):
        """Which of ``users`` (indices >= 0) the model cannot score: past its user
        rows, or (ImplicitFactorization) with no training interactions."""
        indptr = self._seen[0]
        cold = users >= self.user_factors_.shape[0]
        known = ~cold
        cold[known] = indptr[users[known] + 1] == indptr[users[known]]
        return cold

    def _index(self, index, side):
        count = getattr(self, f"{side}_factors_").shape[0]
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or \
                not 0 <= index < count:
            article = "an" if side == "item" else "a"
            raise HogwildError(f"{side} must be {article} {side} index from 0 to {count - 1}, "
                               f"got {index!r}")
        return int(index)

    def recommend(self, user, n=10, exclude_seen=True):
        """(items, scores): the n highest-scoring items for ``user`` (a row index),
        best first, the items they interacted with in training left out unless
        exclude_seen=False. A user the model cannot score (no training
        interactions, or an index past its users: cold start) is given the most
        popular items, with a warning."""
        self._check_fitted()
        n = check_int("n", n, 1)
        if isinstance(user, bool) or not isinstance(user, (int, np.integer)) or user < 0:
            raise HogwildError(f"user must be a user index >= 0, got {user!r}")
        indptr, seen_items = self._seen
        if user >= self.user_factors_.shape[0] or self._cold(np.array([user]))[0]:
            warnings.warn(f"user {user} has no training interactions; recommending the most "
                          "popular items", stacklevel=2)
            scores = self.item_counts_.astype(np.float64)
        else:
            scores = (self.item_factors_ @ self.user_factors_[user]
                      + self.item_bias_).astype(np.float64)
            if exclude_seen:
                scores[seen_items[indptr[user]:indptr[user + 1]]] = -np.inf
        return top_n(scores, n)

    def recommend_all(self, users=None, n=10, exclude_seen=True, approximate=False):
        """(items int64[len(users), n], scores float32[len(users), n]): recommend()
        for many users at once, best first, compiled and on ``workers`` threads
        (None: every core), one score per item per thread in memory. ``users``:
        row indices (None: every user). A row with fewer than n items left ends
        in -1 and -inf. Users the model cannot score get the most popular items,
        with one warning. approximate: from faiss's HNSW index of the items (pip
        install 'hogwild[ann]'), for large catalogues
        (ranking.approximate_top_n_rows)."""
        self._check_fitted()
        n = check_int("n", n, 1)
        n_users = self.user_factors_.shape[0]
        users = np.arange(n_users) if users is None else np.atleast_1d(np.asarray(users))
        if users.dtype.kind not in "iu" or users.ndim != 1:
            raise HogwildError(f"users must be a list of user indices, got {users.dtype} of "
                               f"shape {users.shape}")
        if (users < 0).any():
            raise HogwildError(f"users must be user indices >= 0, got {users[users < 0][0]}")
        cold = self._cold(users)
        if not cold.any():
            top = approximate_top_n_rows if approximate else top_n_rows
            return top(self.user_factors_, self.item_factors_, self.item_bias_, users, n,
                       self._seen if exclude_seen else None, self.workers)
        warnings.warn(f"{int(cold.sum())} of {users.size} users have no training "
                      "interactions; recommending them the most popular items", stacklevel=2)
        items = np.full((users.size, n), -1, np.int64)
        scores = np.full((users.size, n), -np.inf, np.float32)
        if not cold.all():
            items[~cold], scores[~cold] = self.recommend_all(users[~cold], n, exclude_seen,
                                                             approximate)
        popular, counts = top_n(self.item_counts_.astype(np.float64), n)
        items[cold, :popular.size], scores[cold, :popular.size] = popular, counts
        return items, scores

    def similar_items(self, item, n=10):
        """(items, cosine similarities): the n items whose factors are closest in
        angle to ``item``'s (an item index), the item itself left out."""
        self._check_fitted()
        return _nearest(self.item_factors_, self._index(item, "item"), check_int("n", n, 1))

    def similar_users(self, user, n=10):
        """(users, cosine similarities): the n users whose factors are closest in
        angle to ``user``'s (a user index), the user left out."""
        self._check_fitted()
        return _nearest(self.user_factors_, self._index(user, "user"), check_int("n", n, 1))

    def score(self, test, k=10):
        """precision@k of held-out interactions (users x items), the training
        interactions left out of each ranking; see ranking_metrics for the rest."""
        return self.evaluate(test, k)[f"precision@{k}"]

    def evaluate(self, test, k=10):
        """ranking_metrics of held-out interactions, the training ones left out."""
        self._check_fitted()
        return ranking_metrics(self.user_factors_, self.item_factors_, self.item_bias_, test,
                               self._seen, k)


def _nearest(factors, row, n):
    """(rows, cosine similarities): the n rows of ``factors`` closest in angle to
    row ``row``, itself left out."""
    F = factors.astype(np.float64)
    norms = np.linalg.norm(F, axis=1)
    scores = F @ F[row] / np.maximum(norms * norms[row], np.finfo(np.float64).tiny)
    scores[row] = -np.inf
    return top_n(scores, n)
