"""Synchronisation usable inside numba ``nogil`` code: a test-and-test-and-set
spinlock, and gates that order work between workers without a global barrier.

The ``locked`` scheduler wraps every update in this lock: it is the baseline
the Hogwild! paper compares against, so it must be a real lock in compiled code
(an atomic compare-and-swap with acquire ordering, a release store to unlock),
not a Python lock taken around a whole chunk.

The lock word is element 0 of an int32 array; callers give it its own cache line
(see ``new_lock``) so that it does not falsely share with parameters.
"""
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


def _int32_slot_pointer(context, builder, array_type, array, index):
    data = context.make_array(array_type)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, array_type, data, [index])


@intrinsic
def _compare_and_swap(typingctx, array, index, expected, new):
    """Atomically: if array[index] == expected, store new. Returns the old value."""
    if not (isinstance(array, types.Array) and array.dtype == types.int32):
        return None
    sig = types.int32(array, index, types.int32, types.int32)

    def codegen(context, builder, signature, args):
        ptr = _int32_slot_pointer(context, builder, signature.args[0], args[0], args[1])
        pair = builder.cmpxchg(ptr, args[2], args[3], "acquire", "monotonic")
        return builder.extract_value(pair, 0)

    return sig, codegen


@intrinsic
def _atomic_load(typingctx, array, index):
    """array[index] read with acquire ordering (never hoisted out of a spin loop)."""
    if not (isinstance(array, types.Array) and array.dtype == types.int32):
        return None
    sig = types.int32(array, index)

    def codegen(context, builder, signature, args):
        ptr = _int32_slot_pointer(context, builder, signature.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "acquire", 4)

    return sig, codegen


@intrinsic
def _atomic_store(typingctx, array, index, value):
    """array[index] = value with release ordering."""
    if not (isinstance(array, types.Array) and array.dtype == types.int32):
        return None
    sig = types.void(array, index, types.int32)

    def codegen(context, builder, signature, args):
        ptr = _int32_slot_pointer(context, builder, signature.args[0], args[0], args[1])
        builder.store_atomic(args[2], ptr, "release", 4)
        return context.get_dummy_value()

    return sig, codegen


@njit(nogil=True, cache=True, inline="always")
def acquire(lock):
    """Spin until lock[0] goes 0 -> 1 for this thread."""
    while True:
        if _compare_and_swap(lock, 0, np.int32(0), np.int32(1)) == 0:
            return
        while _atomic_load(lock, 0) != 0:
            pass


@njit(nogil=True, cache=True, inline="always")
def release(lock):
    _atomic_store(lock, 0, np.int32(0))


def new_lock():
    """A fresh unlocked lock word, alone on a 64-byte cache line."""
    return np.zeros(16, dtype=np.int32)


# --- gates: point-to-point ordering between workers ----------------------------------
#
# A gate is a counter that one worker raises when it has finished a piece of work and
# others wait on before starting work that depends on it. Gate g lives at
# gates[GATE_STRIDE * (g + 1)], each on its own cache line; gates[0] is the abort
# word, set when a worker fails so that the others stop waiting.

GATE_STRIDE = 16  # int32 words per 64-byte cache line


def new_gates(count):
    """Zeroed gates 0..count-1 and a clear abort word."""
    return np.zeros(GATE_STRIDE * (count + 1), dtype=np.int32)


@njit(nogil=True, cache=True, inline="always")
def wait_for_gate(gates, gate, level):
    """Spin until gate ``gate`` reaches ``level``; False if the run was aborted."""
    slot = GATE_STRIDE * (gate + 1)
    while _atomic_load(gates, slot) < level:
        if _atomic_load(gates, 0) != 0:
            return False
    return True


@njit(nogil=True, cache=True, inline="always")
def open_gate(gates, gate, level):
    """Raise gate ``gate`` to ``level``, after (release) this worker's writes."""
    _atomic_store(gates, GATE_STRIDE * (gate + 1), np.int32(level))


@njit(nogil=True, cache=True)
def spin_for_gate(gates, gate, level, spins):
    """Spin up to ``spins`` times (without the GIL) for gate ``gate`` to reach
    ``level``; True if it did. For hand-offs between threads, which a sleeping
    thread would answer a fraction of a millisecond late."""
    slot = GATE_STRIDE * (gate + 1)
    for _ in range(spins):
        if _atomic_load(gates, slot) >= level:
            return True
    return _atomic_load(gates, slot) >= level


@njit(nogil=True, cache=True)
def raise_gate(gates, gate, level):
    """open_gate, callable from Python."""
    _atomic_store(gates, GATE_STRIDE * (gate + 1), np.int32(level))


def abort_gates(gates):
    """Tell workers waiting on these gates to give up (a worker failed)."""
    gates[0] = 1


__all__ = ["acquire", "release", "new_lock", "new_gates", "wait_for_gate", "open_gate",
           "abort_gates", "spin_for_gate", "raise_gate"]
