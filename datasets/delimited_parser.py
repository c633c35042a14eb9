"""Compiled parser of delimited text (CSV, TSV) whose columns play roles: a label,
numeric columns (a feature each, its value the number), categorical columns (the
value's text hashed within its column, of value 1), an importance weight, or
none. Empty fields are missing (skipped); a field may be double-quoted ("a,b",
with "" for a quote). One block of whole lines at a time (hogwild.datasets.ingest
runs several at once).
"""
import math

from numba import njit

from hogwild.datasets.hashing import hash_name, sort_row
from hogwild.datasets.svmlight_parser import NOT_FINITE, OK, scan_float

SKIP, LABEL, NUMERIC, CATEGORICAL, WEIGHT = 0, 1, 2, 3, 4
RAW, LOG = 0, 1  # how numeric values become feature values: as they are, or sign log(1+|x|)

FIELD_COUNT = 21
BAD_LABEL = 22
BAD_NUMBER = 23
BAD_WEIGHT = 24
BAD_QUOTE = 25
NO_LABEL = 26
REASONS = {
    FIELD_COUNT: "its number of fields differs from the first line's",
    BAD_LABEL: "the label is not a number",
    BAD_NUMBER: "a numeric column holds text (name it as categorical)",
    BAD_WEIGHT: "the weight is not a number >= 0",
    BAD_QUOTE: "a quoted field does not end with a quote before the separator",
    NO_LABEL: "the label is missing",
    NOT_FINITE: "a value is NaN, Inf or beyond float32's range (|x| > 3.4e38)",
}
_NL, _CR, _QUOTE, _SPACE, _TAB = 10, 13, 34, 32, 9


@njit(nogil=True, cache=True, inline="always")
def _field(buf, i, end, sep):
    """(start, stop, next) of the field at i: its text buf[start:stop] (quotes
    removed; doubled quotes inside are kept as two) and where the next begins
    (end + 1 after the last); stop = -1 for a quote left open."""
    if i < end and buf[i] == _QUOTE:
        j = i + 1
        while j < end:
            if buf[j] == _QUOTE:
                if j + 1 < end and buf[j + 1] == _QUOTE:
                    j += 2
                    continue
                break
            j += 1
        if j >= end or (j + 1 < end and buf[j + 1] != sep):
            return i, -1, end + 1
        return i + 1, j, j + 2
    j = i
    if sep == _SPACE:  # any run of blanks separates
        while j < end and buf[j] != _SPACE and buf[j] != _TAB:
            j += 1
        k = j
        while k < end and (buf[k] == _SPACE or buf[k] == _TAB):
            k += 1
        return i, j, k if k < end else end + 1
    while j < end and buf[j] != sep:
        j += 1
    return i, j, j + 1


@njit(nogil=True, cache=True)
def _whole_number(buf, i, end):
    """(value, status): buf[i:end] as a number, blanks around it allowed."""
    while i < end and (buf[i] == _SPACE or buf[i] == _TAB):
        i += 1
    while end > i and (buf[end - 1] == _SPACE or buf[end - 1] == _TAB):
        end -= 1
    value, j, status = scan_float(buf, i, end)
    if status == OK and j != end:
        status = BAD_NUMBER
    return value, status


@njit(nogil=True, cache=True)
def _is_blank(buf, i, end):
    for k in range(i, end):
        if buf[k] != _SPACE and buf[k] != _TAB:
            return False
    return True


@njit(nogil=True, cache=True)
def parse_block(buf, skip_lines, sep, roles, seeds, mask, scaling, indptr, indices, values,
                labels, weights, row_lines):
    """Parse the whole lines of ``buf`` (the first ``skip_lines`` content lines are a
    header) into the outputs (a row per 2 bytes; a feature a column a row).
    ``roles[c]`` and ``seeds[c]`` (the hash of its name) are column c's. Returns
    (rows, features, lines, status, the bad line's number and offset, the bad
    column)."""
    n = buf.size
    columns = roles.size
    i = 0
    rows = 0
    nnz = 0
    line = 0
    indptr[0] = 0
    while i < n:
        line += 1
        start = i
        end = i
        while end < n and buf[end] != _NL:
            end += 1
        i = end + 1
        stop = end
        if stop > start and buf[stop - 1] == _CR:
            stop -= 1
        if _is_blank(buf, start, stop):
            continue
        if skip_lines > 0:
            skip_lines -= 1
            continue
        lo = nnz
        label = math.nan
        weight = 1.0
        k = start
        column = 0
        while k <= stop:
            if column >= columns:
                return rows, nnz, line, FIELD_COUNT, line, start, column
            a, b, k = _field(buf, k, stop, sep)
            if b < 0:
                return rows, nnz, line, BAD_QUOTE, line, start, column
            role = roles[column]
            if role != SKIP and not _is_blank(buf, a, b):
                if role == CATEGORICAL:
                    indices[nnz] = hash_name(buf, a, b, seeds[column]) & mask
                    values[nnz] = 1.0
                    nnz += 1
                else:
                    value, status = _whole_number(buf, a, b)
                    if status != OK:
                        reason = status if status == NOT_FINITE else \
                            BAD_LABEL if role == LABEL else \
                            BAD_WEIGHT if role == WEIGHT else BAD_NUMBER
                        return rows, nnz, line, reason, line, start, column
                    if role == LABEL:
                        label = value
                    elif role == WEIGHT:
                        if value < 0:
                            return rows, nnz, line, BAD_WEIGHT, line, start, column
                        weight = value
                    elif value != 0.0:
                        if scaling == LOG:
                            value = math.copysign(math.log1p(abs(value)), value)
                        indices[nnz] = seeds[column] & mask
                        values[nnz] = value
                        nnz += 1
            column += 1
        if column != columns:
            return rows, nnz, line, FIELD_COUNT, line, start, column
        if math.isnan(label):
            return rows, nnz, line, NO_LABEL, line, start, 0
        nnz = sort_row(indices, values, lo, nnz)
        labels[rows] = label
        weights[rows] = weight
        row_lines[rows] = line
        rows += 1
        indptr[rows] = nnz
    return rows, nnz, line, OK, 0, 0, 0
