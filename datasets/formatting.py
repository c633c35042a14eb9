"""Numbers written as text by compiled code, for the generators that write data
files (Criteo-layout logs, text copies of generated data): integers, and floats
with 9 significant digits (a float32 reads back exactly) in %g's form."""
import math

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def write_int(out, at, value):
    """Write the integer ``value`` into out[at:]; the position after it."""
    if value < 0:
        out[at] = 45
        at += 1
        value = -value
    digits = 1
    probe = value
    while probe >= 10:
        probe //= 10
        digits += 1
    for k in range(digits - 1, -1, -1):
        out[at + k] = 48 + value % 10
        value //= 10
    return at + digits


@njit(nogil=True, cache=True)
def write_float(out, at, value):
    """Write ``value`` with 9 significant digits, trailing zeros dropped, as %.9g
    would (fixed notation from 1e-5 to 1e9, else d.ddde-XX); the position after."""
    if value == 0.0:
        out[at] = 48
        return at + 1
    if value < 0:
        out[at] = 45
        at += 1
        value = -value
    exponent = int(math.floor(math.log10(value)))
    mantissa = np.int64(round(value / 10.0 ** (exponent - 8)))
    if mantissa >= 1_000_000_000:  # rounded up to the next power of ten
        mantissa //= 10
        exponent += 1
    digits = 9
    while digits > 1 and mantissa % 10 == 0:
        mantissa //= 10
        digits -= 1
    if -5 <= exponent < 9:
        if exponent < 0:  # 0.000ddd
            out[at] = 48
            out[at + 1] = 46
            at += 2
            for _ in range(-exponent - 1):
                out[at] = 48
                at += 1
            return write_int(out, at, mantissa)
        whole = exponent + 1
        if digits <= whole:  # an integer: ddd000
            at = write_int(out, at, mantissa)
            for _ in range(whole - digits):
                out[at] = 48
                at += 1
            return at
        end = write_int(out, at, mantissa)
        for k in range(end, at + whole, -1):  # make room for the point
            out[k] = out[k - 1]
        out[at + whole] = 46
        return end + 1
    first = at
    at = write_int(out, at, mantissa)
    if digits > 1:
        for k in range(at, first + 1, -1):
            out[k] = out[k - 1]
        out[first + 1] = 46
        at += 1
    out[at] = 101
    out[at + 1] = 45 if exponent < 0 else 43
    at += 2
    if abs(exponent) < 10:
        out[at] = 48
        at += 1
    return write_int(out, at, abs(exponent))
