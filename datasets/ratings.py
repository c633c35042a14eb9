"""Rating data (user, item, rating triples): file readers and train/test splits.

Files: MovieLens 100K ``u.data`` (tab-separated), 1M/10M ``ratings.dat``
('::'), 20M/25M/latest ``ratings.csv`` (with a header), and any "user item
rating" text or CSV, plain, gzip or bzip2 (see ratings_parser for the rules).
"""
import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from hogwild.datasets import ratings_parser as P
from hogwild.datasets.files import TextBlocks, read_text_bytes
from hogwild.datasets.ingest import Piece, TextFormat, parsed
from hogwild.errors import DataFormatError, HogwildError, choose
from hogwild.paths import check_regular

SPLITS = ("rating", "user")
FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass
class Ratings:
    """Observed ratings: users[k] rated items[k] with values[k]. Ids are the
    dataset's own (external) ids; models map them to dense indices."""

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    source: Optional[str] = None

    def __post_init__(self):
        self.users, self.items = _ids(self.users, "user"), _ids(self.items, "item")
        if not isinstance(self.values, np.ndarray):
            self.values = np.asarray(self.values)
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


def _ids(ids, what):
    """Ids as an array (Python lists too); ids of types that do not compare (1 and
    'a' in one object column) are a HogwildError, since no order or dense index
    could be given to them."""
    if not isinstance(ids, np.ndarray):  # arrays stay as they are (memory maps too)
        ids = np.asarray(ids)
    if ids.dtype == object:
        try:
            np.unique(ids)
        except TypeError:
            kinds = sorted({type(i).__name__ for i in ids.tolist()})
            raise HogwildError(f"{what} ids mix types ({', '.join(kinds)}); give ids of one "
                               "type (all integers, or all strings)") from None
    return ids


def read_ratings(path, cache=True, progress=None) -> Ratings:
    """Read a "user item rating [...]" file; ratings become float32. An id column
    whose every id is an integer from 0 to 2**63 - 1 becomes int64, any other its
    ids' text (string ids). Separators: blanks, ',', '::' or a tab, or ';' or '|',
    with quoted fields as Book-Crossing's "276725";"034545104X";"0" (found on the
    first line). Files of integer ids with the first four are parsed on every
    core into the binary cache (hogwild.datasets.ingest) and memory-mapped from
    it, whatever their size; the others are read whole, in memory. ``cache``,
    ``progress``: as load_svmlight's."""
    path = Path(path)
    check_regular(path)
    separator = _separator(_head(path))
    if separator in FAST_SEPARATORS:
        try:
            arrays, meta = parsed(path, RatingsFormat(), [], cache, progress)
        except DataFormatError as error:
            if getattr(error, "reason", None) not in _TEXT_IDS:
                raise
        else:
            return Ratings(arrays["users"], arrays["items"], arrays["values"], str(path))
    return _read_delimited(path, read_text_bytes(path), separator)


class RatingsFormat(TextFormat):
    """"user item rating" lines of integer ids for hogwild.datasets.ingest (a line of
    other ids stops the read: the caller reads the file as text)."""

    fields = {"users": np.int64, "items": np.int64, "values": np.float32}
    what, samples, version, header = "rating line", "ratings", "ratings-1", {"rows": int}

    def parse(self, data, first=False):
        most = (data.size + 1) // 5 + 1  # "1 2 3" and a line end: 6 bytes a rating
        users, items = np.empty(most, np.int64), np.empty(most, np.int64)
        values = np.empty(most, np.float32)
        n, lines, status, bad_line, bad_at = P.parse_block(data, first, users, items, values)
        error = None if status == P.OK else (P.REASONS[status], bad_line, bad_at)
        return Piece({"users": users[:n], "items": items[:n], "values": values[:n]}, n,
                     lines, error)


_TEXT_IDS = (P.REASONS[P.BAD_USER], P.REASONS[P.BAD_ITEM])  # the text reader's files


def _head(path):
    """The file's first 64 kB of text (decompressed)."""
    with TextBlocks(path, 1 << 16, 1 << 20) as blocks:
        first = next(iter(blocks), None)
    return b"" if first is None else bytes(first.data)


# Separators looked for on the first line, in this order (None: runs of blanks);
# the compiled parser reads the first four's files of integer ids.
SEPARATORS = {"::": "'::'", "\t": "a tab", ";": "';'", "|": "'|'", ",": "','"}
FAST_SEPARATORS = ("::", "\t", ",", None)
MAX_ID_CHARACTERS = 4096  # a text id longer than this is no id (a URL fits)


def _separator(raw):
    """The separator of the first line that is neither blank nor a '#' comment."""
    for line in raw[:1 << 16].decode("utf-8", "replace").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return next((s for s in SEPARATORS if s in line), None)
    return None


def _split(line, separator):
    if separator is None:
        return line.split()
    if len(separator) == 1:
        return next(csv.reader([line], delimiter=separator), [])
    return line.split(separator)


def is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _malformed(path, line, reason, text):
    shown = text if len(text) <= 80 else text[:77] + "..."
    return DataFormatError(f"{path}, line {line}: malformed rating line ({reason}): "
                           f"{shown!r}")


def _read_delimited(path, raw, separator):
    """Lines split in Python: string ids, ';' or '|' separators, quoted fields."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise DataFormatError(f"{path}, line {line}: not UTF-8 text (at byte offset "
                              f"{error.start:,}), so not a rating file") from None
    lines = text.splitlines()
    if separator is not None and len(separator) == 1:  # quoted fields: csv's rules
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator)
        rows = ((reader.line_num, fields, lines[reader.line_num - 1]) for fields in reader)
    else:
        rows = ((number, _split(line, separator), line) for number, line in
                enumerate(lines, 1))
    expected = (f"expected user, item and rating fields separated by "
                f"{SEPARATORS.get(separator, 'blanks')}, as on the first line")
    users, items, values, first = [], [], [], True
    for number, fields, line in rows:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if first and len(fields) >= 3 and not is_number(fields[2].strip()):
            first = False  # a header
            continue
        first = False
        if len(fields) < 3:
            raise _malformed(path, number, expected, line.rstrip())
        user, item = fields[0].strip(), fields[1].strip()
        for what, field in (("user", user), ("item", item)):
            if not field:
                raise _malformed(path, number, f"the {what} id is empty", line.rstrip())
            if len(field) > MAX_ID_CHARACTERS:
                raise _malformed(path, number, f"the {what} id is {len(field):,} characters "
                                 f"long, more than {MAX_ID_CHARACTERS:,}", line.rstrip())
        try:
            rating = float(fields[2].strip())
        except ValueError:
            raise _malformed(path, number, P.REASONS[P.BAD_RATING], line.rstrip()) from None
        if not abs(rating) <= FLOAT32_MAX:
            raise _malformed(path, number, P.REASONS[P.NOT_FINITE], line.rstrip())
        users.append(user)
        items.append(item)
        values.append(rating)
    if not values:
        raise HogwildError(f"empty data: {path} holds no ratings")
    return Ratings(_id_array(users), _id_array(items), np.array(values, np.float32),
                   str(path))


def _id_array(ids):
    """int64 where every id is an integer from 0 to 2**63 - 1, else the ids' text."""
    if all(i.isascii() and i.isdigit() and len(i) <= 19 for i in ids) \
            and max(map(int, ids)) <= 2 ** 63 - 1:
        return np.array([int(i) for i in ids], np.int64)
    return np.array(ids, str)


def check_split(test_fraction, by):
    """A split's settings, or a HogwildError naming the bad one."""
    choose(SPLITS, by, "split")
    if not 0 < test_fraction < 1:  # NaN fails too
        raise HogwildError(f"test_fraction must be in (0, 1), got {test_fraction!r}")


def held_out_per_group(groups, fraction, rng, count=None):
    """A mask of the samples held out: round(fraction * count) of each group's
    (e.g. a user's), or ``count`` of each where given, drawn by ``rng``, always
    leaving the group one."""
    n = len(groups)
    _, group_index, counts = np.unique(groups, return_inverse=True, return_counts=True)
    # rank of each sample within its group, in a random order
    shuffled = rng.permutation(n)
    by_group = shuffled[np.argsort(group_index[shuffled], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(n, np.int64)
    rank[by_group] = np.arange(n) - np.repeat(starts, counts)
    wanted = np.round(fraction * counts).astype(np.int64) if count is None else count
    held_of_group = np.minimum(wanted, counts - 1)
    return rank < held_of_group[group_index]


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
        test = held_out_per_group(ratings.users, test_fraction, rng)
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
    with no interaction are dropped, and a pair rated more than once is one
    interaction (kept where it first appears), so that no pair is both trained on
    and held out."""
    if not np.isfinite(threshold):
        raise HogwildError(f"threshold must be a finite number, got {threshold!r}")
    dense, user_ids, item_ids = _interactions(ratings, threshold)
    return _split_interactions(*split_ratings(dense, test_fraction, seed, by="user"),
                               user_ids, item_ids)


def leave_one_out(ratings, seed=0):
    """Implicit feedback as He et al. 2017 evaluate it (the NCF paper's protocol):
    every rating is an interaction (whether the user rated the item), and one of
    each user's is held out (a user with one keeps it in training). Drawn at random
    by ``seed``: the paper holds out the latest, and the shared MovieLens 1M copy
    has no timestamps. Rank each held-out item against sampled negatives
    (hogwild.problems.matrix_completion.ranking.sampled_negatives)."""
    dense, user_ids, item_ids = _interactions(ratings, float(np.min(ratings.values)))
    held = held_out_per_group(dense.users, 0.0, np.random.default_rng(seed), count=1)
    return _split_interactions(dense.subset(~held), dense.subset(held), user_ids, item_ids)


def _interactions(ratings, threshold):
    """(the ratings >= threshold as dense (user, item) pairs of ones, each pair once,
    user ids, item ids)."""
    positive = ratings.subset(ratings.values >= threshold)
    if len(positive) == 0:
        raise HogwildError(f"no rating is >= {threshold:g}: no interactions "
                           f"(the ratings run from {ratings.values.min():g} to "
                           f"{ratings.values.max():g})")
    user_ids, users = np.unique(positive.users, return_inverse=True)
    item_ids, items = np.unique(positive.items, return_inverse=True)
    _, first = np.unique(users.astype(np.int64) * item_ids.size + items, return_index=True)
    first.sort()
    users, items = users[first], items[first]
    return Ratings(users, items, np.ones(users.size, np.float32), positive.source), user_ids, \
        item_ids


def _split_interactions(train, test, user_ids, item_ids):
    import scipy.sparse as sp

    shape = (user_ids.size, item_ids.size)

    def matrix(part):
        return sp.csr_matrix((part.values, (part.users, part.items)), shape=shape)

    return Interactions(matrix(train), matrix(test), user_ids, item_ids)
