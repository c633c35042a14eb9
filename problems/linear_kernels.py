"""What the binary (sparse_svm) and one-vs-rest (multiclass) kernels share: the
hash that picks a sample's lazy turns.

Lazy regularisation. Most hinge samples are inactive (margin >= 1) once training
is under way; for them the only update is the regulariser's shrink of their
features, and writing those shared coordinates costs more than the rest of the
update (cache lines bounce between workers). So an inactive sample applies the
shrink of LAZY_EPOCHS epochs at once, (1 - step * reg_scale)^LAZY_EPOCHS, in one
epoch out of LAZY_EPOCHS on average, chosen by a hash of (sample, epoch, salt)
that is independent of the visiting order: in expectation (in log space) each
feature is shrunk exactly as in the paper's update, with far fewer writes.
"""
import numpy as np
from numba import njit

from hogwild.kernels.draws import sample_hash

LAZY_EPOCHS_LOG2 = 3  # shrink inactive samples in 1 epoch of 2**3 = 8


@njit(nogil=True, inline="always")
def lazy_turn(e, epoch, salt):
    """True for about one (sample, epoch) pair in 2**LAZY_EPOCHS_LOG2."""
    return (sample_hash(e, epoch, salt) >> np.uint64(64 - LAZY_EPOCHS_LOG2)) == np.uint64(0)
