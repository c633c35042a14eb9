"""Reading delimited text (CSV, TSV, ...) whose columns play roles, through the
binary cache, as hashed sparse rows: Criteo's display-ads logs (a label, 13
integer and 26 categorical columns, tab-separated, empty fields missing) and
files like them.

The separator, a header line and each column's kind are read off the file's
first megabyte unless given: the separator is the one of tab, comma, semicolon
and '|' found the same number of times on each of the first lines (else runs of
blanks); the first line is a header when its label field is not a number and
the next line's is; a column is numeric when every value in those lines is a
number, else categorical. A numeric column is one feature (its name hashed)
whose value is the number, by default sign(x) log(1 + |x|) (counts spread over
orders of magnitude); a categorical column's value is hashed within its column's
name (as Vowpal Wabbit hashes "|column value"), of value 1. Columns are named by
the header, else by their position from 0. See delimited_parser for the rules of
a line.
"""
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.datasets import delimited_parser as P
from hogwild.datasets.files import TextBlocks
from hogwild.datasets.hashing import DEFAULT_HASH_BITS, MAX_HASH_BITS, hash_text
from hogwild.datasets.parts import check_files, data_source, first_file
from hogwild.datasets.ingest import Piece, TextFormat, block_arrays, parsed
from hogwild.datasets.ratings import is_number
from hogwild.disk_arrays import on_disk
from hogwild.errors import DataFormatError, HogwildError, check_int, choose

_CACHE_VERSION = "delimited-1"
SEPARATORS = {"tab": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}
SCALES = {"log": P.LOG, "raw": P.RAW}
ROLE_NAMES = {P.SKIP: "skip", P.LABEL: "label", P.NUMERIC: "numeric",
              P.CATEGORICAL: "categorical", P.WEIGHT: "weight"}
HEAD_BYTES = 1 << 20  # what the separator, header and column kinds are read off


@dataclass
class DelimitedData:
    """A delimited file's rows: X (CSR, 2^hash_bits columns), labels y, weights
    (None without a weight column), ``columns`` ((name, role) of each column, for
    reading a test file the same way), and each row's line."""

    X: sp.csr_matrix
    y: np.ndarray
    weights: np.ndarray
    path: Path
    row_lines: np.ndarray
    columns: tuple
    separator: str
    hash_bits: int
    numeric_scale: str
    crossings: object = None
    random_order: bool = False

    @property
    def trained_in_place(self):
        """Rows memory-mapped from the binary cache train where they are (see
        SvmlightData.trained_in_place)."""
        return self.random_order or on_disk(self.X.data)


def _head(path):
    """The first lines of the file (of the first of Parts; text, decompressed), at
    most HEAD_BYTES."""
    with TextBlocks(first_file(path), HEAD_BYTES, HEAD_BYTES) as blocks:
        first = next(iter(blocks), None)
    if first is None:
        raise HogwildError(f"empty data: {path} holds no samples")
    text = bytes(first.data).decode("utf-8", "replace")
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if len(lines) > 1 and first.data.size >= HEAD_BYTES:
        lines = lines[:-1]  # cut short
    return [line for line in lines if line.strip()]


def _split(line, separator):
    if separator == " ":
        return line.split()
    fields, field, quoted, i = [], [], False, 0
    while i < len(line):
        c = line[i]
        if quoted:
            if c == '"' and line[i + 1:i + 2] == '"':
                field.append('"')
                i += 1
            elif c == '"':
                quoted = False
            else:
                field.append(c)
        elif c == '"' and not field:
            quoted = True
        elif c == separator:
            fields.append("".join(field))
            field = []
        else:
            field.append(c)
        i += 1
    fields.append("".join(field))
    return fields


def _guess_separator(lines, path):
    """The separator that splits all but one in ten of the first lines (a bad one
    among them is then named by the parser) into the same number of fields, more
    than one."""
    sample = lines[:50]
    for separator in ("\t", ",", ";", "|", " "):
        counts = [len(_split(line, separator)) for line in sample]
        common = max(set(counts), key=counts.count)
        if common > 1 and counts.count(common) >= len(sample) - max(1, len(sample) // 10):
            return separator
    raise DataFormatError(f"{path}: cannot tell its separator (tab, comma, semicolon, '|' or "
                          "blanks, the same number on all but one in ten of its first lines); give "
                          "it (--separator)")


def _column(given, names, what, path):
    """The index of a column given by name or position."""
    if isinstance(given, (int, np.integer)) and not isinstance(given, bool):
        index = int(given)
    elif isinstance(given, str) and given in names:
        index = names.index(given)
    elif isinstance(given, str) and given.isdigit():
        index = int(given)
    else:
        raise HogwildError(f"{what} column {given!r} is not a column of {path} (its columns: "
                           f"{', '.join(names[:12])}{', ...' if len(names) > 12 else ''})")
    if not 0 <= index < len(names):
        raise HogwildError(f"{what} column {given!r} is not a column of {path}, which has "
                           f"{len(names)}")
    return index


def _roles(path, label, numeric, categorical, weight, skip, separator, header):
    """(separator, header lines to skip, ((name, role) of each column)) of the file,
    read off its first lines where not given."""
    lines = _head(path)
    separator = _guess_separator(lines, path) if separator is None else separator
    rows = [_split(line, separator) for line in lines]
    width = len(rows[0])
    if header is None:  # a first line whose label is text, the next's a number
        at = 0 if label is None or not isinstance(label, (int, np.integer)) else int(label)
        at = min(at, width - 1)
        first = rows[0][at] if rows[0] else ""
        header = len(rows) > 1 and len(rows[1]) > at and not is_number(first) \
            and is_number(rows[1][at])
        if label is not None and isinstance(label, str) and label in rows[0] and \
                not label.isdigit():
            header = True
    names = [name.strip() for name in rows[0]] if header else [str(c) for c in range(width)]
    body = rows[1:] if header else rows
    if label is None:
        label = next((name for name in ("label", "click", "clicked", "target", "y")
                      if name in names), 0)
    roles = [None] * width
    roles[_column(label, names, "label", path)] = P.LABEL
    for given, role in ((weight, P.WEIGHT),):
        if given is not None:
            roles[_column(given, names, "weight", path)] = role
    for columns, role in ((skip, P.SKIP), (numeric, P.NUMERIC), (categorical, P.CATEGORICAL)):
        for given in columns or ():
            index = _column(given, names, ROLE_NAMES[role], path)
            if roles[index] in (P.LABEL, P.WEIGHT):
                raise HogwildError(f"column {given!r} of {path} is the {ROLE_NAMES[roles[index]]}"
                                   f"; it cannot also be {ROLE_NAMES[role]}")
            roles[index] = role
    for c in range(width):
        if roles[c] is None:
            values = [row[c].strip() for row in body if c < len(row) and row[c].strip()]
            roles[c] = P.NUMERIC if values and all(map(is_number, values)) else P.CATEGORICAL
    return separator, int(bool(header)), tuple(zip(names, roles))


class DelimitedFormat(TextFormat):
    """Delimited lines for hogwild.datasets.ingest."""

    fields = {"indptr": np.int64, "indices": np.int32, "values": np.float32,
              "labels": np.float64, "weights": np.float32, "row_lines": np.int64}
    offsets, lines, what = {"indptr": "indices"}, "row_lines", "line"
    version = _CACHE_VERSION
    header = {"rows": int, "nnz": int, "weighted": bool}

    def __init__(self, separator, header_lines, columns, hash_bits, scale):
        self.separator = ord(separator)
        self.header_lines = header_lines
        self.roles = np.array([role for _, role in columns], np.int64)
        self.seeds = np.array([hash_text(name) for name, _ in columns], np.int64)
        self.names = [name for name, _ in columns]
        self.mask = (1 << hash_bits) - 1
        self.scale = SCALES[scale]

    def parse(self, data, first=False):
        rows = (data.size + 1) // 2 + 1
        features = rows * max(int((self.roles >= P.NUMERIC).sum()), 1)
        features = min(features, data.size + 1)  # a feature takes a byte of text at least
        out = block_arrays({"indptr": (rows + 1, np.int64), "indices": (features, np.int32),
                            "values": (features, np.float32), "labels": (rows, np.float64),
                            "weights": (rows, np.float32), "row_lines": (rows, np.int64)})
        rows, nnz, lines, status, bad_line, bad_at, column = P.parse_block(
            data, self.header_lines if first else 0, self.separator, self.roles, self.seeds,
            self.mask, self.scale, out["indptr"], out["indices"], out["values"],
            out["labels"], out["weights"], out["row_lines"])
        error = None
        if status != P.OK:
            name = self.names[column] if column < len(self.names) else f"{column}"
            error = (f"{P.REASONS[status]}; column {name!r}", bad_line, bad_at)
        arrays = {"indptr": out["indptr"][:rows + 1], "indices": out["indices"][:nnz],
                  "values": out["values"][:nnz], "labels": out["labels"][:rows],
                  "weights": out["weights"][:rows], "row_lines": out["row_lines"][:rows]}
        weighted = bool(rows) and bool((arrays["weights"] != 1).any())
        return Piece(arrays, rows, lines, error, {"weighted": weighted})

    def merge(self, total, stats):
        return {"weighted": total["weighted"] or stats["weighted"]}

    def finish(self, sink, totals):
        return {"nnz": totals.lengths["indices"], "weighted": totals.stats["weighted"]}


@dataclass(frozen=True)
class Layout:
    """How a delimited file's lines are read, as delimited_layout read them off its
    first lines: what load_delimited's ``like`` takes (as from a DelimitedData), so
    that other files (the parts other ranks read) are read the same way."""

    separator: str
    header_lines: int
    columns: tuple
    hash_bits: int
    numeric_scale: str


def delimited_layout(path, label=None, numeric=None, categorical=None, weight=None, skip=None,
                     separator=None, header=None, hash_bits=DEFAULT_HASH_BITS,
                     numeric_scale="log"):
    """The Layout of ``path`` (a file, or the first of Parts) with load_delimited's
    column options."""
    path = data_source(path)
    check_files(path)
    hash_bits = check_int("hash_bits", hash_bits, 1, MAX_HASH_BITS)
    choose(SCALES, numeric_scale, "numeric_scale")
    if separator is not None:
        separator = SEPARATORS.get(separator, separator)
        if not (isinstance(separator, str) and len(separator) == 1
                and separator not in '"\r\n'):
            raise HogwildError(f"separator must be one character or one of "
                               f"{', '.join(SEPARATORS)}, got {separator!r}")
    if header not in (None, True, False):
        raise HogwildError(f"header must be True, False or None, got {header!r}")
    separator, header_lines, columns = _roles(path, label, numeric, categorical, weight,
                                              skip, separator, header)
    return Layout(separator, header_lines, columns, hash_bits, numeric_scale)


def load_delimited(path, label=None, numeric=None, categorical=None, weight=None, skip=None,
                   separator=None, header=None, hash_bits=DEFAULT_HASH_BITS,
                   numeric_scale="log", like=None, cache=True, progress=None) -> DelimitedData:
    """Load a delimited text file (plain or compressed) of labelled rows, parsed on
    every core into the binary cache and memory-mapped from it.

    label, weight: the label's and importance weight's column (a name, with a
    header, or a position from 0; default: a column named label, click, clicked,
    target or y, else the first). numeric, categorical, skip: columns of each
    kind (the rest read off the first lines: numeric where every value is a
    number). separator: "tab", "comma", "semicolon", "pipe", "space" or the
    character (default: read off the first lines). header: True, False or None
    (read off the first lines). hash_bits: features are hashed into 2^hash_bits
    columns. numeric_scale: "log" (sign(x) log(1 + |x|)) or "raw". like: a
    DelimitedData whose columns, separator and hashing this file shares (a test
    file read as its training file), or a Layout.
    """
    path = data_source(path)
    if like is None:
        like = delimited_layout(path, label, numeric, categorical, weight, skip, separator,
                                header, hash_bits, numeric_scale)
    check_files(path)
    separator, columns = like.separator, like.columns
    hash_bits, numeric_scale = like.hash_bits, like.numeric_scale
    if header is not None:
        header_lines = int(bool(header))
    elif isinstance(like, Layout):
        header_lines = like.header_lines
    else:  # a header where the training file had one (named columns)
        header_lines = int(any(name != str(c) for c, (name, _) in enumerate(columns)))
    fmt = DelimitedFormat(separator, header_lines, columns, hash_bits, numeric_scale)
    how = [separator, header_lines, [list(c) for c in columns], hash_bits, numeric_scale]
    arrays, meta = parsed(path, fmt, how, cache, progress)
    X = sp.csr_matrix((arrays["values"], arrays["indices"], arrays["indptr"]),
                      shape=(meta["rows"], 1 << hash_bits), copy=False)
    return DelimitedData(X=X, y=arrays["labels"], weights=arrays["weights"] if meta["weighted"]
                         else None, path=path, row_lines=arrays["row_lines"], columns=columns,
                         separator=separator, hash_bits=hash_bits, numeric_scale=numeric_scale)
