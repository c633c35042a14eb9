"""Reading Vowpal Wabbit's text format (see vw_parser for the rules) through the
binary cache, as hashed sparse rows.

    1 2.0 'id17 |user age:0.3 city=paris |ad id_17 ...

Features are hashed into 2^hash_bits weights exactly as Vowpal Wabbit hashes them
(hogwild.datasets.hashing), so that a model's indices are Vowpal Wabbit's; the
importance weight is each row's sample weight. ``quadratic`` namespace pairs
("ua": every feature of a namespace starting with u crossed with each of one
starting with a, as Vowpal Wabbit's -q ua) are kept as the two namespaces'
features per row, and crossed by the training kernels, not written out.
"""
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.datasets import vw_parser as P
from hogwild.datasets.hashing import DEFAULT_HASH_BITS, MAX_HASH_BITS
from hogwild.datasets.parts import check_files, data_source
from hogwild.datasets.ingest import Piece, TextFormat, block_arrays, parsed
from hogwild.errors import HogwildError, check_int

_CACHE_VERSION = "vw-1"


@dataclass(frozen=True)
class Crossings:
    """Quadratic features of hashed rows: for row r, the features of side s (a
    namespace letter of ``letters``) are indices/values[offsets[r * S + s] :
    offsets[r * S + s + 1]] (S sides), and each pair (a, b) of ``pairs`` (sides)
    crosses them into ((16777619 * i) ^ j) & mask with value v_i v_j (i, j of
    the same side: each unordered pair once, a feature with itself included)."""

    offsets: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    letters: str
    pairs: np.ndarray
    mask: int

    def rows(self, first, last):
        """The crossings of rows first..last-1 (offsets rebased)."""
        sides = len(self.letters)
        offsets = np.asarray(self.offsets[first * sides:last * sides + 1])
        lo, hi = int(offsets[0]), int(offsets[-1])
        return Crossings(offsets - lo, self.indices[lo:hi], self.values[lo:hi], self.letters,
                         self.pairs, self.mask)


@dataclass
class VWData:
    """A Vowpal Wabbit file's rows: X (CSR, 2^hash_bits columns, each row's features
    sorted and collisions summed), labels y, importance weights (None where every
    weight is 1), the quadratic features' Crossings (None without quadratic),
    and each row's line."""

    X: sp.csr_matrix
    y: np.ndarray
    weights: np.ndarray
    crossings: Crossings
    path: Path
    row_lines: np.ndarray
    hash_bits: int
    random_order: bool = False

    @property
    def trained_in_place(self):
        """Rows memory-mapped from the binary cache train where they are (see
        SvmlightData.trained_in_place)."""
        from hogwild.disk_arrays import on_disk
        return self.random_order or on_disk(self.X.data)


def check_quadratic(quadratic):
    """The -q pairs as a tuple of two-character strings (namespaces by first letter,
    ' ' the default namespace, ':' none: Vowpal Wabbit's wildcard is not read)."""
    if quadratic is None:
        return ()
    if isinstance(quadratic, str):
        quadratic = [quadratic]
    pairs = tuple(quadratic)
    for pair in pairs:
        if not (isinstance(pair, str) and len(pair) == 2 and pair.isprintable()
                and ":" not in pair and "|" not in pair):
            raise HogwildError(f"quadratic pairs are two namespace letters each (as Vowpal "
                               f"Wabbit's -q ab), got {pair!r}")
    return pairs


class VWFormat(TextFormat):
    """Vowpal Wabbit lines for hogwild.datasets.ingest."""

    fields = {"indptr": np.int64, "indices": np.int32, "values": np.float32,
              "labels": np.float64, "weights": np.float32, "row_lines": np.int64,
              "side_offsets": np.int64, "side_indices": np.int32, "side_values": np.float32}
    offsets = {"indptr": "indices", "side_offsets": "side_indices"}
    lines, what, version = "row_lines", "Vowpal Wabbit line", _CACHE_VERSION
    header = {"rows": int, "nnz": int, "hash_bits": int, "letters": str, "weighted": bool}

    def __init__(self, hash_bits, letters):
        self.mask = (1 << hash_bits) - 1
        self.hash_bits, self.letters = hash_bits, letters
        self.slot_of = np.full(256, -1, np.int64)
        for slot, letter in enumerate(letters.encode("latin-1")):
            self.slot_of[letter] = slot

    def parse(self, data, first=False):
        rows, features = (data.size + 1) // 2 + 1, (data.size + 1) // 2 + 1
        sides = len(self.letters)
        out = block_arrays({
            "indptr": (rows + 1, np.int64), "indices": (features, np.int32),
            "values": (features, np.float32), "labels": (rows, np.float64),
            "weights": (rows, np.float32), "row_lines": (rows, np.int64),
            "side_offsets": (rows * sides + 1, np.int64),
            "side_indices": (features if sides else 0, np.int32),
            "side_values": (features if sides else 0, np.float32),
            "feature_slot": (features, np.int8)})
        scratch = out.pop("feature_slot")
        (rows, nnz, side_nnz, lines, status, bad_line, bad_at) = P.parse_block(
            data, self.mask, self.slot_of, sides, out["indptr"], out["indices"], out["values"],
            out["labels"], out["weights"], out["row_lines"], out["side_offsets"],
            out["side_indices"], out["side_values"], scratch)
        error = None if status == P.OK else (P.REASONS[status], bad_line, bad_at)
        arrays = {"indptr": out["indptr"][:rows + 1], "indices": out["indices"][:nnz],
                  "values": out["values"][:nnz], "labels": out["labels"][:rows],
                  "weights": out["weights"][:rows], "row_lines": out["row_lines"][:rows],
                  "side_offsets": out["side_offsets"][:rows * sides + 1],
                  "side_indices": out["side_indices"][:side_nnz],
                  "side_values": out["side_values"][:side_nnz]}
        weighted = bool(rows) and bool((arrays["weights"] != 1).any())
        return Piece(arrays, rows, lines, error, {"weighted": weighted})

    def merge(self, total, stats):
        return {"weighted": total["weighted"] or stats["weighted"]}

    def finish(self, sink, totals):
        return {"nnz": totals.lengths["indices"], "hash_bits": self.hash_bits,
                "letters": self.letters, "weighted": totals.stats["weighted"]}


def load_vw(path, hash_bits=DEFAULT_HASH_BITS, quadratic=None, cache=True,
            progress=None) -> VWData:
    """Load a Vowpal Wabbit text file (plain or compressed), parsed on every core
    into the binary cache and memory-mapped from it.

    hash_bits: features are hashed into 2^hash_bits weights (Vowpal Wabbit's -b;
    default 18, its default too). quadratic: namespace pairs to cross, such as
    ["ua"] (Vowpal Wabbit's -q ua; namespaces go by their first letter).
    cache, progress: as load_svmlight's.
    """
    hash_bits = check_int("hash_bits", hash_bits, 1, MAX_HASH_BITS)
    pairs = check_quadratic(quadratic)
    letters = "".join(sorted({c for pair in pairs for c in pair}))
    path = data_source(path)
    check_files(path)
    arrays, meta = parsed(path, VWFormat(hash_bits, letters), [hash_bits, letters], cache,
                          progress)
    X = sp.csr_matrix((arrays["values"], arrays["indices"], arrays["indptr"]),
                      shape=(meta["rows"], 1 << hash_bits), copy=False)
    crossings = None
    if pairs:
        crossings = Crossings(arrays["side_offsets"], arrays["side_indices"],
                              arrays["side_values"], letters,
                              np.array([[letters.index(a), letters.index(b)] for a, b in pairs],
                                       np.int64), (1 << hash_bits) - 1)
    return VWData(X=X, y=arrays["labels"], weights=arrays["weights"] if meta["weighted"]
                  else None, crossings=crossings, path=path, row_lines=arrays["row_lines"],
                  hash_bits=hash_bits)
