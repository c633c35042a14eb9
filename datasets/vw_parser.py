"""Compiled parser of Vowpal Wabbit's text format, one block of whole lines at a
time (hogwild.datasets.ingest runs several at once).

    label [importance] ['tag] |namespace[:scale] name[:value] name ... |other ...

Features are hashed as Vowpal Wabbit hashes them (hogwild.datasets.hashing),
scaled by their namespace's scale, those of value 0 dropped; a ``name:text``
value hashes the text within the name, of value 1 (Vowpal Wabbit 9's rule), and
a feature with no name (``:2``) is its namespace's hash plus its position among
the namespace's nameless ones. A row's features are stored sorted by index,
those that collide summed (the linear part), and, for the namespaces that
quadratic features cross, again per namespace in the line's order (the sides).
A tab in the label part ends a prefix that is dropped, as Vowpal Wabbit does.
"""
from numba import njit

from hogwild.datasets.hashing import hash_name, sort_row
from hogwild.datasets.svmlight_parser import BAD_VALUE, NOT_FINITE, OK, scan_float

NO_LABEL = 11
BAD_LABEL = 12
BAD_WEIGHT = 13
INITIAL = 14
BAD_SCALE = 15
REASONS = {
    NO_LABEL: "no label before the first '|'",
    BAD_LABEL: "the label is not a number",
    BAD_WEIGHT: "the importance weight (the label's second number) is not a number >= 0",
    INITIAL: "a third number in the label (an initial prediction) is not supported",
    BAD_SCALE: "a namespace's scale (|name:scale) is not a finite number",
    NOT_FINITE: "a value is NaN, Inf or beyond float32's range (|x| > 3.4e38)",
}

_SPACE, _TAB, _CR, _NL, _BAR, _COLON, _QUOTE = 32, 9, 13, 10, 124, 58, 39


@njit(nogil=True, cache=True, inline="always")
def _blank(c):
    return c == _SPACE or c == _TAB or c == _CR


@njit(nogil=True, cache=True, inline="always")
def _name_end(buf, i, end):
    """The end of a name (of a feature or namespace) from i: a blank, ':', '|' or
    the line's end."""
    while i < end and not _blank(buf[i]) and buf[i] != _COLON and buf[i] != _BAR \
            and buf[i] != _NL:
        i += 1
    return i


@njit(nogil=True, cache=True, inline="always")
def _token_end(buf, i, end):
    while i < end and not _blank(buf[i]) and buf[i] != _BAR and buf[i] != _NL:
        i += 1
    return i


@njit(nogil=True, cache=True)
def _number(buf, i, end):
    """(value, status) of the token buf[i:end] as a whole number."""
    value, j, status = scan_float(buf, i, end)
    if status == OK and j != end:
        status = BAD_VALUE
    return value, status


@njit(nogil=True, cache=True)
def _labels(buf, start, bar, out, row):
    """Parse the label part buf[start:bar] into out[0][row] (label) and out[1][row]
    (importance weight); the status."""
    labels, weights = out
    for k in range(start, bar):  # text before a tab is not the label's
        if buf[k] == _TAB:
            start = k + 1
    count = 0
    i = start
    first_value = 0.0
    second_value = 1.0
    while True:
        while i < bar and _blank(buf[i]):
            i += 1
        if i >= bar:
            break
        j = _token_end(buf, i, bar)
        if buf[i] == _QUOTE or j == bar:  # the tag: 'name, or the token at the bar
            i = j
            continue
        if count == 0:
            first_value, status = _number(buf, i, j)
            if status != OK:
                return NOT_FINITE if status == NOT_FINITE else BAD_LABEL
        elif count == 1:
            second_value, status = _number(buf, i, j)
            if status != OK or second_value < 0:
                return BAD_WEIGHT
        else:
            return INITIAL
        count += 1
        i = j
    if count == 0:
        return NO_LABEL
    labels[row] = first_value
    weights[row] = second_value
    return OK


@njit(nogil=True, cache=True)
def parse_block(buf, mask, slot_of, slots, indptr, indices, values, labels, weights,
                row_lines, side_offsets, side_indices, side_values, feature_slot):
    """Parse the whole lines of ``buf`` into the outputs (sized for the most a block
    holds: a row per 2 bytes, a feature per 2). ``mask``: the hash's low bits kept;
    ``slot_of[c]``: the side (0 .. slots - 1) of namespaces whose name starts with
    byte c, -1 for those no quadratic feature crosses; ``feature_slot`` a scratch
    array as long as ``indices``. Returns (rows, features, side features, lines,
    status, the bad line's number and offset)."""
    n = buf.size
    i = 0
    rows = 0
    nnz = 0
    side_nnz = 0
    line = 0
    indptr[0] = 0
    side_offsets[0] = 0
    end = n  # each scan below stops at a line's end too: a line is read in one pass
    while i < n:
        line += 1
        start = i
        k = start
        while k < end and _blank(buf[k]):
            k += 1
        if k == end or buf[k] == _NL:
            i = k + 1
            continue
        bar = k
        while bar < end and buf[bar] != _BAR and buf[bar] != _NL:
            bar += 1
        status = _labels(buf, start, bar, (labels, weights), rows)
        if status != OK:
            return rows, nnz, side_nnz, line, status, line, start
        lo = nnz
        k = bar
        while k < end and buf[k] == _BAR:
            k += 1
            slot = -1
            scale = 1.0
            if k >= end or _blank(buf[k]) or buf[k] == _BAR or buf[k] == _NL:
                namespace = 0
                slot = slot_of[_SPACE]
            else:
                name_end = _name_end(buf, k, end)
                namespace = hash_name(buf, k, name_end, 0)
                slot = slot_of[buf[k]]
                k = name_end
                if k < end and buf[k] == _COLON:
                    token = _token_end(buf, k + 1, end)
                    scale, status = _number(buf, k + 1, token)
                    if status != OK:
                        return rows, nnz, side_nnz, line, BAD_SCALE, line, start
                    k = token
            nameless = 0
            while k < end and buf[k] != _BAR and buf[k] != _NL:
                if _blank(buf[k]):
                    k += 1
                    continue
                name_end = _name_end(buf, k, end)
                value = 1.0
                if name_end == k and buf[k] != _COLON:  # a stray byte: skip the token
                    k = _token_end(buf, k, end)
                    continue
                if name_end == k:
                    h = namespace + nameless
                    nameless += 1
                else:
                    h = hash_name(buf, k, name_end, namespace)
                k = name_end
                if k < end and buf[k] == _COLON:
                    # one pass over a number's bytes: scanned, then its end checked
                    value, token, status = scan_float(buf, k + 1, end)
                    if status == NOT_FINITE:
                        return rows, nnz, side_nnz, line, NOT_FINITE, line, start
                    if status != OK or (token < end and not _blank(buf[token])
                                        and buf[token] != _BAR and buf[token] != _NL):
                        # name:text, the text hashed within the name
                        token = _token_end(buf, k + 1, end)
                        h = hash_name(buf, k + 1, token, h)
                        value = 1.0
                    k = token
                value *= scale
                if value == 0.0:
                    continue
                if abs(value) > 3.4028234663852886e38:
                    return rows, nnz, side_nnz, line, NOT_FINITE, line, start
                indices[nnz] = h & mask
                values[nnz] = value
                feature_slot[nnz] = slot
                nnz += 1
        for s in range(slots):
            for f in range(lo, nnz):
                if feature_slot[f] == s:
                    side_indices[side_nnz] = indices[f]
                    side_values[side_nnz] = values[f]
                    side_nnz += 1
            side_offsets[rows * slots + s + 1] = side_nnz
        i = k + 1  # past the line's end
        nnz = sort_row(indices, values, lo, nnz)
        row_lines[rows] = line
        rows += 1
        indptr[rows] = nnz
    return rows, nnz, side_nnz, line, OK, 0, 0
