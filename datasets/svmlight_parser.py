"""Compiled svmlight/libsvm text parser: one pass over a block of whole lines.

Kept apart from svmlight.py so the file handling, caching and messages stay
readable Python while the byte loop runs in numba at about 400 MB/s a core
(several blocks at once: hogwild.datasets.ingest).
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
ZERO_INDEX = 8

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
    ZERO_INDEX: "feature index 0 in a file read as one-based; pass zero_based=True",
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


@njit(nogil=True, cache=True, inline="always")
def scan_float(buf, i, end):
    """(value, the position after it, status) of the number starting at buf[i]:
    _parse_float's rules, ending at the first byte that cannot continue it."""
    start = i
    negative = False
    if i < end and (buf[i] == 43 or buf[i] == 45):  # + -
        negative = buf[i] == 45
        i += 1
    if i < end and ((buf[i] | 32) == 110 or (buf[i] | 32) == 105):  # n(an), i(nf)
        return 0.0, i, NOT_FINITE
    mantissa = 0
    digits = 0
    exponent = 0
    seen_digit = False
    while i < end:
        d = buf[i] - 48
        if d < 0 or d > 9:
            break
        seen_digit = True
        if digits < 18:
            mantissa = mantissa * 10 + d
            digits += mantissa > 0
        else:
            exponent += 1
        i += 1
    if i < end and buf[i] == 46:  # .
        i += 1
        while i < end:
            d = buf[i] - 48
            if d < 0 or d > 9:
                break
            seen_digit = True
            if digits < 18:
                mantissa = mantissa * 10 + d
                digits += mantissa > 0
                exponent -= 1
            i += 1
    if not seen_digit:
        return 0.0, max(i, start + 1), BAD_VALUE
    if i < end and (buf[i] | 32) == 101:  # e
        i += 1
        exp_sign = 1
        if i < end and (buf[i] == 43 or buf[i] == 45):
            if buf[i] == 45:
                exp_sign = -1
            i += 1
        if i >= end or not 48 <= buf[i] <= 57:
            return 0.0, i, BAD_VALUE
        e = 0
        while i < end and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        exponent += exp_sign * e
    value = float(mantissa)
    if exponent > 0:
        value = value * _POW10[exponent] if exponent < 23 else value * 10.0 ** exponent
    elif exponent < 0:
        value = value / _POW10[-exponent] if -exponent < 23 else value / 10.0 ** (-exponent)
    if not value <= FLOAT32_MAX:
        return 0.0, i, NOT_FINITE
    return -value if negative else value, i, OK


@njit(nogil=True, cache=True)
def _parse_float(buf, i, end):
    """(value, status) of the whole token buf[i:end] as a number (scan_float's
    rules): decimal or exponent notation, exactly rounded for up to 18
    significant digits; nan/inf spelt out, and magnitudes float32 cannot hold
    (which would become inf where they are stored), give NOT_FINITE."""
    value, j, status = scan_float(buf, i, end)
    if status == OK and j != end:
        return 0.0, BAD_VALUE
    return value, status


@njit(nogil=True, cache=True, inline="always")
def _ends_token(c):
    return c == _SPACE or c == _TAB or c == _CR or c == _NL or c == _HASH


@njit(nogil=True, cache=True)
def parse_block(buf, base, zero_is_error, indptr, indices, values, labels, row_lines, qids):
    """Parse the whole lines of ``buf`` into the outputs (sized for the most a block
    can hold: a row per 2 bytes, a nonzero per 4). Indices are stored minus
    ``base``; a written 0 with base 1 is an error where ``zero_is_error``. Returns
    (rows, nonzeros, lines, status, the bad line's number and offset, the smallest
    and largest index written, whether a qid was given); blank lines and '#'
    comments are skipped, 'qid:N' kept in qids (-1 where a row has none)."""
    n = buf.size
    i = 0
    rows = 0
    nnz = 0
    line = 0
    low = 2147483647
    high = -1
    any_qid = False
    indptr[0] = 0
    while i < n:
        line += 1
        start = i
        while i < n and (buf[i] == _SPACE or buf[i] == _TAB or buf[i] == _CR):
            i += 1
        if i >= n:
            break
        if buf[i] == _NL:
            i += 1
            continue
        if buf[i] == _HASH:
            while i < n and buf[i] != _NL:
                i += 1
            i += 1
            continue
        label, i, status = scan_float(buf, i, n)
        if status == OK and i < n and not _ends_token(buf[i]):
            status = BAD_VALUE
        if status != OK:
            return (rows, nnz, line, BAD_LABEL if status == BAD_VALUE else status, line, start,
                    low, high, any_qid)
        previous = -1
        qid = -1
        while True:
            while i < n and (buf[i] == _SPACE or buf[i] == _TAB or buf[i] == _CR):
                i += 1
            if i >= n or buf[i] == _NL:
                i += 1
                break
            if buf[i] == _HASH:
                while i < n and buf[i] != _NL:
                    i += 1
                i += 1
                break
            if i + 3 < n and buf[i + 3] == _COLON and (buf[i] | 32) == 113 \
                    and (buf[i + 1] | 32) == 105 and (buf[i + 2] | 32) == 100:  # qid:
                value, i, status = scan_float(buf, i + 4, n)
                if status != OK or (i < n and not _ends_token(buf[i])) or value < 0 \
                        or value != np.floor(value) or value > 9.2e18:
                    return rows, nnz, line, BAD_INDEX, line, start, low, high, any_qid
                qid = np.int64(value)
                any_qid = True
                continue
            j = i
            index = 0
            while j < n:
                d = buf[j] - 48
                if d < 0 or d > 9:
                    break
                if index <= 2147483647:
                    index = index * 10 + d
                j += 1
            if j == n or buf[j] != _COLON or j == i:
                k = j
                while k < n and buf[k] != _COLON and not _ends_token(buf[k]):
                    k += 1
                status = BAD_INDEX if k < n and buf[k] == _COLON else MISSING_COLON
                return rows, nnz, line, status, line, start, low, high, any_qid
            if index > 2147483647:
                return (rows, nnz, line, INDEX_TOO_LARGE, line, start, low, high, any_qid)
            if index <= previous:
                return (rows, nnz, line, UNSORTED_INDEX, line, start, low, high, any_qid)
            if index == 0 and base == 1 and zero_is_error:
                return (rows, nnz, line, ZERO_INDEX, line, start, low, high, any_qid)
            previous = index
            value, i, status = scan_float(buf, j + 1, n)
            if status == OK and i < n and not _ends_token(buf[i]):
                status = BAD_VALUE
            if status != OK:
                return (rows, nnz, line, status, line, start, low, high, any_qid)
            low = min(low, index)
            high = max(high, index)
            indices[nnz] = index - base
            values[nnz] = value
            nnz += 1
        labels[rows] = label
        row_lines[rows] = line
        qids[rows] = qid
        rows += 1
        indptr[rows] = nnz
    return rows, nnz, line, OK, 0, 0, low, high, any_qid
