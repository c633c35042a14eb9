"""Rating data (user, item, rating triples): file readers and train/test splits.

Files: MovieLens 100K ``u.data`` (tab-separated), 1M/10M ``ratings.dat``
('::'), 20M/25M/latest ``ratings.csv`` (with a header), and any "user item
rating" text or CSV, plain, gzip or bzip2 (see ratings_parser for the rules).
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from hogwild.datasets import ratings_parser as P
from hogwild.datasets.files import read_bytes
from hogwild.errors import DataFormatError, HogwildError, choose

SPLITS = ("rating", "user")


@dataclass
class Ratings:
    """Observed ratings: users[k] rated items[k] with values[k]. Ids are the
    dataset's own (external) ids; models map them to dense indices."""

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    source: Optional[str] = None

    def __post_init__(self):
        if not len(self.users) == len(self.items) == len(self.values):
            raise HogwildError(f"users, items and values must have the same length, got "
                               f"{len(self.users)}, {len(self.items)} and {len(self.values)}")

    def __len__(self):
        return len(self.values)

    def subset(self, rows):
        return Ratings(self.users[rows], self.items[rows], self.values[rows], self.source)

    def describe(self):
        return (f"{len(self):,} ratings, {np.unique(self.users).size:,} users, "
                f"{np.unique(self.items).size:,} items")


def read_ratings(path) -> Ratings:
    """Read a "user item rating [...]" file; ids become int64, ratings float32."""
    path = Path(path)
    raw = read_bytes(path)
    buf = np.frombuffer(raw, dtype=np.uint8)
    lines = P.count_lines(buf)
    users = np.empty(lines, np.int64)
    items = np.empty(lines, np.int64)
    values = np.empty(lines, np.float32)
    n, status, line = P.parse(buf, users, items, values)
    if status != P.OK:
        text = raw.split(b"\n", line)[line - 1].decode("utf-8", "replace").rstrip()
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise DataFormatError(f"{path}, line {line}: malformed rating line "
                              f"({P.REASONS[status]}): {shown!r}")
    if n == 0:
        raise HogwildError(f"empty data: {path} holds no ratings")
    return Ratings(users[:n].copy(), items[:n].copy(), values[:n].copy(), str(path))


def check_split(test_fraction, by):
    """A split's settings, or a HogwildError naming the bad one."""
    choose(SPLITS, by, "split")
    if not 0 < test_fraction < 1:  # NaN fails too
        raise HogwildError(f"test_fraction must be in (0, 1), got {test_fraction!r}")


def split_ratings(ratings, test_fraction=0.2, seed=0, by="rating"):
    """Deterministic (train, test) split for a seed.

    by="rating": each rating goes to test with probability test_fraction
    (exactly round(test_fraction * n) ratings, chosen by a seeded permutation).
    by="user": each user's ratings are split alike (per-user holdout), keeping at
    least one rating of every user in train.
    """
    check_split(test_fraction, by)
    rng = np.random.default_rng(seed)
    n = len(ratings)
    if by == "rating":
        order = rng.permutation(n)
        n_test = int(round(test_fraction * n))
        test = np.zeros(n, bool)
        test[order[:n_test]] = True
    else:
        _, user_index, counts = np.unique(ratings.users, return_inverse=True,
                                          return_counts=True)
        # rank of each rating within its user, in a random order
        shuffled = rng.permutation(n)
        by_user = shuffled[np.argsort(user_index[shuffled], kind="stable")]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, np.int64)
        rank[by_user] = np.arange(n) - np.repeat(starts, counts)
        n_test_of_user = np.minimum(np.round(test_fraction * counts).astype(np.int64),
                                    counts - 1)
        test = rank < n_test_of_user[user_index]
    if not test.any() or test.all():
        raise HogwildError(f"test_fraction {test_fraction} of {n} ratings leaves an empty "
                           f"{'test' if not test.any() else 'train'} set")
    return ratings.subset(~test), ratings.subset(test)


@dataclass
class Interactions:
    """Implicit feedback split per user: ``train`` and ``test`` are users x items
    scipy.sparse CSR matrices of ones (the same shape; row u is user_ids[u], column
    i item_ids[i])."""

    train: object
    test: object
    user_ids: np.ndarray
    item_ids: np.ndarray

    def describe(self):
        return (f"{self.train.nnz:,} + {self.test.nnz:,} held-out interactions, "
                f"{self.user_ids.size:,} users, {self.item_ids.size:,} items")


def interactions_from_ratings(ratings, threshold=4.0, test_fraction=0.2, seed=0):
    """Ratings as implicit feedback: each rating >= ``threshold`` is an interaction
    (MovieLens' 4 and 5 stars: LightFM's and implicit's convention), split per user
    (split_ratings(by="user"): every user keeps one in training). Users and items
    with no interaction are dropped."""
    import scipy.sparse as sp

    if not np.isfinite(threshold):
        raise HogwildError(f"threshold must be a finite number, got {threshold!r}")
    positive = ratings.subset(ratings.values >= threshold)
    if len(positive) == 0:
        raise HogwildError(f"no rating is >= {threshold:g}: no interactions "
                           f"(the ratings run from {ratings.values.min():g} to "
                           f"{ratings.values.max():g})")
    user_ids, users = np.unique(positive.users, return_inverse=True)
    item_ids, items = np.unique(positive.items, return_inverse=True)
    dense = Ratings(users, items, np.ones(users.size, np.float32), positive.source)
    train, test = split_ratings(dense, test_fraction, seed, by="user")
    shape = (user_ids.size, item_ids.size)

    def matrix(part):
        return sp.csr_matrix((part.values, (part.users, part.items)), shape=shape)

    return Interactions(matrix(train), matrix(test), user_ids, item_ids)
