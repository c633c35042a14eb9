"""Compiled svmlight/libsvm text parser (two passes over the raw bytes).

Kept apart from svmlight.py so the file handling, caching and messages stay
readable Python while the byte loop runs in numba at several hundred MB/s.
"""
import numpy as np
from numba import njit

OK = 0
BAD_LABEL = 1
BAD_INDEX = 2
BAD_VALUE = 3
MISSING_COLON = 4
NOT_FINITE = 5
UNSORTED_INDEX = 6
INDEX_TOO_LARGE = 7

REASONS = {
    BAD_LABEL: "the label is not a number",
    BAD_INDEX: "a feature index is not a non-negative integer",
    BAD_VALUE: "a feature value is not a number",
    MISSING_COLON: "expected index:value",
    NOT_FINITE: "a value is NaN, Inf or beyond float32's range (|x| > 3.4e38)",
    UNSORTED_INDEX: "feature indices must increase along a line (one is repeated or out "
                    "of order)",
    INDEX_TOO_LARGE: "a feature index is beyond 2,147,483,647 (2**31 - 1), the most features "
                     "a model has",
}
FLOAT32_MAX = float(np.finfo(np.float32).max)  # values are stored as float32

_SPACE, _TAB, _CR, _NL, _HASH, _COLON = 32, 9, 13, 10, 35, 58
_POW10 = np.array([10.0 ** i for i in range(23)])


@njit(nogil=True, cache=True)
def _is_blank(c):
    return c == _SPACE or c == _TAB or c == _CR


@njit(nogil=True, cache=True)
def _token_end(buf, i, end):
    while i < end and not _is_blank(buf[i]) and buf[i] != _COLON and buf[i] != _HASH:
        i += 1
    return i


@njit(nogil=True, cache=True)
def _parse_float(buf, i, end):
    """(value, status) of buf[i:end]: decimal or exponent notation, exactly rounded
    for up to 18 significant digits; nan/inf spelt out, and magnitudes float32
    cannot hold (which would become inf where they are stored), give NOT_FINITE."""
    if i >= end:
        return 0.0, BAD_VALUE
    sign = 1.0
    if buf[i] == 43 or buf[i] == 45:  # + -
        if buf[i] == 45:
            sign = -1.0
        i += 1
    c = buf[i] | 32 if i < end else 0
    if c == 110 or c == 105:  # n(an), i(nf)
        return 0.0, NOT_FINITE
    mantissa = 0
    digits = 0
    exponent = 0
    seen_digit = False
    while i < end and 48 <= buf[i] <= 57:
        seen_digit = True
        if digits < 18:
            mantissa = mantissa * 10 + (buf[i] - 48)
            if mantissa > 0:
                digits += 1
        else:
            exponent += 1
        i += 1
    if i < end and buf[i] == 46:  # .
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            seen_digit = True
            if digits < 18:
                mantissa = mantissa * 10 + (buf[i] - 48)
                exponent -= 1
                if mantissa > 0:
                    digits += 1
            i += 1
    if not seen_digit:
        return 0.0, BAD_VALUE
    if i < end and (buf[i] | 32) == 101:  # e
        i += 1
        exp_sign = 1
        if i < end and (buf[i] == 43 or buf[i] == 45):
            if buf[i] == 45:
                exp_sign = -1
            i += 1
        if i >= end or not 48 <= buf[i] <= 57:
            return 0.0, BAD_VALUE
        e = 0
        while i < end and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        exponent += exp_sign * e
    if i != end:
        return 0.0, BAD_VALUE
    value = float(mantissa)
    if exponent > 0:
        value = value * _POW10[exponent] if exponent < 23 else value * 10.0 ** exponent
    elif exponent < 0:
        value = value / _POW10[-exponent] if -exponent < 23 else value / 10.0 ** (-exponent)
    if not value <= FLOAT32_MAX:
        return 0.0, NOT_FINITE
    return sign * value, OK


@njit(nogil=True, cache=True)
def count_upper_bounds(buf):
    """(lines, colons): upper bounds on rows and nonzeros, for allocation."""
    lines = 1
    colons = 0
    for c in buf:
        if c == _NL:
            lines += 1
        elif c == _COLON:
            colons += 1
    return lines, colons


@njit(nogil=True, cache=True)
def parse(buf, indptr, indices, values, labels, row_lines):
    """Fill the preallocated outputs; returns (rows, nnz, status, line, line_start).

    Blank lines and '#' comments are skipped, 'qid:N' tokens ignored. Indices are
    stored as written (the caller chooses the base) and must increase along a line,
    as scikit-learn requires. On error, status says why and
    line / line_start locate the offending line (1-based line number).
    """
    n = buf.size
    pos = 0
    line = 0
    rows = 0
    nnz = 0
    indptr[0] = 0
    while pos < n:
        line += 1
        start = pos
        end = pos
        while end < n and buf[end] != _NL:
            end += 1
        pos = end + 1
        i = start
        while i < end and _is_blank(buf[i]):
            i += 1
        if i == end or buf[i] == _HASH:
            continue
        j = _token_end(buf, i, end)
        label, status = _parse_float(buf, i, j)
        if status != OK:
            return rows, nnz, BAD_LABEL if status == BAD_VALUE else status, line, start
        i = j
        previous = -1
        while True:
            while i < end and _is_blank(buf[i]):
                i += 1
            if i == end or buf[i] == _HASH:
                break
            j = _token_end(buf, i, end)
            if j >= end or buf[j] != _COLON:
                return rows, nnz, MISSING_COLON, line, start
            is_qid = j - i == 3 and (buf[i] | 32) == 113 and (buf[i + 1] | 32) == 105 \
                and (buf[i + 2] | 32) == 100
            index = 0
            if not is_qid:
                if j == i:
                    return rows, nnz, BAD_INDEX, line, start
                for k in range(i, j):
                    if not 48 <= buf[k] <= 57:
                        return rows, nnz, BAD_INDEX, line, start
                    if index > 2147483647:
                        return rows, nnz, INDEX_TOO_LARGE, line, start
                    index = index * 10 + (buf[k] - 48)
                if index > 2147483647:
                    return rows, nnz, INDEX_TOO_LARGE, line, start
                if index <= previous:
                    return rows, nnz, UNSORTED_INDEX, line, start
                previous = index
            i = j + 1
            j = i
            while j < end and not _is_blank(buf[j]) and buf[j] != _HASH:
                j += 1
            value, status = _parse_float(buf, i, j)
            if status != OK:
                return rows, nnz, status, line, start
            if not is_qid:
                indices[nnz] = index
                values[nnz] = value
                nnz += 1
            i = j
        labels[rows] = label
        row_lines[rows] = line
        rows += 1
        indptr[rows] = nnz
    return rows, nnz, OK, line, 0
