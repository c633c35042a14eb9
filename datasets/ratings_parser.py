"""Compiled parser for "user item rating [more fields]" text lines.

Separators: tabs or spaces, one comma, or '::' (MovieLens 1M/10M). Extra fields
(timestamps) are ignored, blank lines and '#' comments skipped, and a header on
the first line is skipped when it starts with a letter, an underscore or a quote
and its second field is not an id too ("userId,movieId,rating,timestamp"); a first
line of another form (such as "-7 3 4" or "a 1 3") is data, and an error where it
is malformed. Ids must be
non-negative integers (MovieLens and most rating dumps): at the first that is not,
the caller reads the file as text instead (hogwild.datasets.ratings: string ids).
"""
from numba import njit

from hogwild.datasets.svmlight_parser import NOT_FINITE as FLOAT_NOT_FINITE
from hogwild.datasets.svmlight_parser import OK, _parse_float

BAD_USER = 1
BAD_ITEM = 2
BAD_RATING = 3
NOT_FINITE = 4
MISSING_FIELD = 5

REASONS = {  # BAD_USER and BAD_ITEM send the file to the text reader
    BAD_USER: "the user id is not an integer from 0 to 2**63 - 1",
    BAD_ITEM: "the item id is not an integer from 0 to 2**63 - 1",
    BAD_RATING: "the rating is not a number",
    NOT_FINITE: "the rating is NaN, Inf or beyond float32's range (|x| > 3.4e38)",
    MISSING_FIELD: "expected user, item and rating fields",
}

_SPACE, _TAB, _CR, _NL, _HASH, _COMMA, _COLON = 32, 9, 13, 10, 35, 44, 58
_INT64_MAX = 2 ** 63 - 1


@njit(nogil=True, cache=True)
def _field_end(buf, i, end):
    while i < end and buf[i] != _SPACE and buf[i] != _TAB and buf[i] != _COMMA \
            and buf[i] != _COLON and buf[i] != _CR:
        i += 1
    return i


@njit(nogil=True, cache=True)
def _next_field(buf, i, end):
    """Skip one separator after a field: a run of blanks, or one ',' or '::' with
    blanks around it. Returns the next field's start, or -1 if the line ended."""
    while i < end and (buf[i] == _SPACE or buf[i] == _TAB or buf[i] == _CR):
        i += 1
    if i < end and buf[i] == _COMMA:
        i += 1
    elif i + 1 < end and buf[i] == _COLON and buf[i + 1] == _COLON:
        i += 2
    while i < end and (buf[i] == _SPACE or buf[i] == _TAB or buf[i] == _CR):
        i += 1
    return i if i < end else -1


@njit(nogil=True, cache=True)
def _parse_id(buf, i, end):
    """A non-negative integer in buf[i:end] that fits int64, or -1. Overflow is
    checked before the multiply: after it, 2**64 + 1 would wrap around to 1."""
    if i >= end:
        return -1
    value = 0
    while i < end:
        c = buf[i]
        if c < 48 or c > 57 or value > (_INT64_MAX - (c - 48)) // 10:
            return -1
        value = value * 10 + (c - 48)
        i += 1
    return value


@njit(nogil=True, cache=True)
def _is_header(buf, k, stop):
    """Whether the line from k is a header: its first field starts with a letter, '_'
    or a quote (as names do, and no number), and its second is no id."""
    c = buf[k]
    if not ((65 <= c <= 90) or (97 <= c <= 122) or c == 95 or c == 34 or c == 39):
        return False
    second = _next_field(buf, _field_end(buf, k, stop), stop)
    return second < 0 or _parse_id(buf, second, _field_end(buf, second, stop)) < 0


@njit(nogil=True, cache=True)
def parse_block(buf, first, users, items, values):
    """Parse the whole lines of ``buf`` (the file's first block where ``first``: its
    first line may be a header) into users/items/values (a rating per 5 bytes at
    most); returns (count, lines, status, the bad line's number and offset)."""
    n = 0
    line = 0
    i = 0
    end = buf.size
    first_content = first
    while i < end:
        line += 1
        start = i
        stop = i
        while stop < end and buf[stop] != _NL:
            stop += 1
        next_line = stop + 1
        k = i
        while k < stop and (buf[k] == _SPACE or buf[k] == _TAB or buf[k] == _CR):
            k += 1
        if k == stop or buf[k] == _HASH:
            i = next_line
            continue
        if first_content and _is_header(buf, k, stop):  # "userId,movieId,rating,timestamp"
            first_content = False
            i = next_line
            continue
        first_content = False
        t = _field_end(buf, k, stop)
        user = _parse_id(buf, k, t)
        if user < 0:
            return n, line, BAD_USER, line, start
        k = _next_field(buf, t, stop)
        if k < 0:
            return n, line, MISSING_FIELD, line, start
        t = _field_end(buf, k, stop)
        item = _parse_id(buf, k, t)
        if item < 0:
            return n, line, BAD_ITEM, line, start
        k = _next_field(buf, t, stop)
        if k < 0:
            return n, line, MISSING_FIELD, line, start
        t = _field_end(buf, k, stop)
        rating, status = _parse_float(buf, k, t)
        if status != OK:
            return n, line, NOT_FINITE if status == FLOAT_NOT_FINITE else BAD_RATING, line, \
                start
        users[n] = user
        items[n] = item
        values[n] = rating
        n += 1
        i = next_line
    return n, line, OK, 0, 0
