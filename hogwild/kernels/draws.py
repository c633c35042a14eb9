"""Random draws inside compiled kernels that do not depend on the visiting order:
a hash of (sample, epoch, salt), so that a sample draws the same whichever worker
visits it and whenever (a run is reproducible for a seed whatever the timing, up
to the races of the shared parameters themselves)."""
import numpy as np
from numba import njit

_MIX_1 = np.uint64(0x9E3779B97F4A7C15)
_MIX_2 = np.uint64(0xD1B54A32D192ED03)
_MIX_3 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_4 = np.uint64(0x94D049BB133111EB)


@njit(nogil=True, inline="always")
def sample_hash(e, epoch, salt):
    """64 random-looking bits of (e, epoch, salt) (the splitmix64 finaliser)."""
    x = np.uint64(e) * _MIX_1 + np.uint64(epoch) * _MIX_2 + salt
    x = (x ^ (x >> np.uint64(30))) * _MIX_3
    x = (x ^ (x >> np.uint64(27))) * _MIX_4
    return x ^ (x >> np.uint64(31))


@njit(nogil=True, inline="always")
def below(bits, n):
    """An integer uniform in [0, n) from 64 random bits (n < 2**32: the top 32 bits
    times n, shifted; bias below n / 2**32)."""
    return np.int64(((bits >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
