"""Write generated data as the text files users hold, to try the readers on them.

    python scripts/write_text.py clicks:1000000x1000000x20000000 --as svmlight --out DIR
    python scripts/write_text.py clicks:1000000x1000000x20000000 --as vw-names --out DIR
    python scripts/write_text.py jumbo:200000x50000x20000000 --as ratings --out DIR

A click log (hogwild.datasets.clicks) becomes train and test files of its rows:
svmlight (zero-based indices, labels -1/+1), vw (Vowpal Wabbit text, one
namespace, the indices as feature names) or vw-names (two namespaces, u for
the first half of the log's fields and a for the rest, each feature named
f<index>: string features, hashed by the reader). A Jumbo matrix
(hogwild.datasets.jumbo) becomes "user item rating" lines, tab-separated.
Values are written with 9 significant digits (a float32 reads back exactly).
Rows are read from the generated arrays with file reads and formatted on every
core, a chunk at a time, and written in order: a 30 GB file takes the memory of
a few chunks. Prints one JSON line: the files and
their sizes.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
from numba import njit

from hogwild.datasets.formatting import write_float, write_int
from hogwild.datasets.generated import in_order
from hogwild.disk_arrays import in_memory

ROWS_PER_CHUNK = 1 << 16
FORMATS = {"svmlight": ".svm", "vw": ".vw", "vw-names": ".vw", "ratings": ".tsv"}


@njit(nogil=True, cache=True)
def _rows_text(indptr, indices, values, labels, first, last, kind, span, half, out):
    """Rows first..last-1 as text into out; the bytes written. kind 0: svmlight,
    1: vw, 2: vw with named features in two namespaces (the field of feature j is
    j // span; fields below ``half`` are namespace u)."""
    at = 0
    base = indptr[0]
    for r in range(first, last):
        at = write_int(out, at, 1 if labels[r] > 0 else -1)
        lo, hi = indptr[r] - base, indptr[r + 1] - base
        if kind == 1:
            for c in (32, 124, 102):  # " |f"
                out[at] = c
                at += 1
        current = -1
        for k in range(lo, hi):
            j = indices[k]
            if kind == 2:
                side = 0 if j // span < half else 1
                if side != current:
                    out[at] = 32
                    out[at + 1] = 124
                    out[at + 2] = 117 if side == 0 else 97  # |u, |a
                    at += 3
                    current = side
                out[at] = 32
                out[at + 1] = 102  # f
                at = write_int(out, at + 2, j)
            else:
                out[at] = 32
                at = write_int(out, at + 1, j)
            out[at] = 58
            at = write_float(out, at + 1, values[k])
        out[at] = 10
        at += 1
    return at


@njit(nogil=True, cache=True)
def _ratings_text(users, items, values, out):
    at = 0
    for k in range(values.size):
        at = write_int(out, at, users[k])
        out[at] = 9
        at = write_int(out, at + 1, items[k])
        out[at] = 9
        at = write_float(out, at + 1, values[k])
        out[at] = 10
        at += 1
    return at


def write_rows(rows, path, kind, span, half):
    """Write SvmlightData rows to ``path`` as text of ``kind`` (see _rows_text)."""
    X, y = rows.X, in_memory(rows.y)
    n = X.shape[0]
    chunks = -(-n // ROWS_PER_CHUNK)

    def draw(index):
        first, last = index * ROWS_PER_CHUNK, min(n, (index + 1) * ROWS_PER_CHUNK)
        lo, hi = int(X.indptr[first]), int(X.indptr[last])
        indptr = np.asarray(in_memory(X.indptr[first:last + 1]), np.int64)
        indices, values = in_memory(X.indices[lo:hi]), in_memory(X.data[lo:hi])
        out = np.empty(40 * (hi - lo) + 16 * (last - first) + 16, np.uint8)
        size = _rows_text(indptr, indices, values, y[first:last], 0, last - first, kind,
                          span, half, out)
        return out[:size]

    with open(path, "wb") as f:
        for text in in_order(chunks, draw):
            f.write(text)


def write_ratings(ratings, path):
    n = len(ratings)
    step = 1 << 20

    def draw(index):
        lo, hi = index * step, min(n, (index + 1) * step)
        out = np.empty(48 * (hi - lo), np.uint8)
        size = _ratings_text(in_memory(ratings.users[lo:hi]), in_memory(ratings.items[lo:hi]),
                             in_memory(ratings.values[lo:hi]), out)
        return out[:size]

    with open(path, "wb") as f:
        for text in in_order(-(-n // step), draw):
            f.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="clicks:ROWSxFEATURESxNNZ or jumbo:ROWSxCOLSxNNZ")
    parser.add_argument("--as", dest="kind", choices=list(FORMATS), default="svmlight")
    parser.add_argument("--out", default=".", help="the folder of train.* and test.*")
    parser.add_argument("--jumbo-rank", type=int, default=20)
    parser.add_argument("--jumbo-noise", type=float, default=0.3)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = FORMATS[args.kind]
    paths = {"train": out / f"train{suffix}", "test": out / f"test{suffix}"}
    if args.spec.startswith("jumbo:"):
        from hogwild.datasets.jumbo import make_jumbo, parse_jumbo_spec
        if args.kind != "ratings":
            sys.exit("a Jumbo matrix is written --as ratings")
        train, test, _ = make_jumbo(*parse_jumbo_spec(args.spec), rank=args.jumbo_rank,
                                    noise=args.jumbo_noise, progress=True)
        for name, ratings in (("train", train), ("test", test)):
            write_ratings(ratings, paths[name])
    else:
        from hogwild.datasets.clicks import make_clicks, parse_clicks_spec
        if args.kind == "ratings":
            sys.exit("a click log is written --as svmlight, vw or vw-names")
        rows, features, nnz = parse_clicks_spec(args.spec)
        train, test, _ = make_clicks(rows, features, nnz, progress=True)
        fields = -(-nnz // rows)
        kind = {"svmlight": 0, "vw": 1, "vw-names": 2}[args.kind]
        for name, data in (("train", train), ("test", test)):
            write_rows(data, paths[name], kind, features // fields, fields // 2)
    print(json.dumps({"spec": args.spec, "as": args.kind,
                      **{name: {"path": str(p), "bytes": p.stat().st_size}
                         for name, p in paths.items()}}))


if __name__ == "__main__":
    main()
