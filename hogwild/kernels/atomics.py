"""Synchronisation usable inside numba ``nogil`` code: a test-and-test-and-set
spinlock, and gates that order work between workers without a global barrier.

The ``locked`` scheduler wraps every update in this lock: it is the baseline
the Hogwild! paper compares against, so it must be a real lock in compiled code
(an atomic compare-and-swap with acquire ordering, a release store to unlock),
not a Python lock taken around a whole chunk.

Every wait here can end two ways: what it waits for happens, or the run's abort
word is raised (a worker failed or died; the backend raises it). A lock is a
gates array with one gate (``new_lock``): the abort word, then the lock word on a
cache line of its own, holding its owner (worker number + 1) so that a backend
can free the lock of a worker that failed or died while holding it
(``release_if_owner``). Waits back off (spin, then yield the core, then sleep:
``_back_off``), so more workers than cores slow a run down instead of stalling it.
"""
import numpy as np
from llvmlite import ir
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


def _call_libc(builder, name, args):
    """Call the C library's int32 function ``name``, linked by symbol name so that
    numba's on-disk cache stays valid (a ctypes function pointer would bake one
    process's address into the cached code)."""
    fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32)] * len(args))
    return builder.call(cgutils.get_or_insert_function(builder.module, fnty, name), args)


@intrinsic
def _sched_yield(typingctx):
    """Give the core to another runnable thread, if there is one."""
    def codegen(context, builder, signature, args):
        return _call_libc(builder, "sched_yield", [])

    return types.int32(), codegen


@intrinsic
def _usleep(typingctx, micros):
    """Sleep ``micros`` microseconds (an int32 constant or variable)."""
    def codegen(context, builder, signature, args):
        return _call_libc(builder, "usleep",
                          [context.cast(builder, args[0], signature.args[0], types.int32)])

    return types.int32(micros), codegen


SPIN_POLLS = 20_000   # about 20 us of polling: a hand-off between running workers
YIELD_POLLS = 200     # then give the core to another runnable thread this many times
SLEEP_MICROS = 50     # then sleep between polls: the awaited worker has no core


@njit(nogil=True, cache=True, inline="always")
def _back_off(polls):
    """Pause before poll number ``polls`` of a wait."""
    if polls >= SPIN_POLLS + YIELD_POLLS:
        _usleep(SLEEP_MICROS)
    elif polls >= SPIN_POLLS:
        _sched_yield()


# --- gates: point-to-point ordering between workers ----------------------------------
#
# A gate is a counter that one worker raises when it has finished a piece of work and
# others wait on before starting work that depends on it. Gate g lives at
# gates[GATE_STRIDE * (g + 1)], each on its own cache line; gates[0] is the abort
# word, set when a worker fails so that the others stop waiting.

GATE_STRIDE = 16  # int32 words per 64-byte cache line
LOCK_WORD = GATE_STRIDE  # a lock is gate 0 of a one-gate array


def new_gates(count):
    """Zeroed gates 0..count-1 and a clear abort word."""
    return np.zeros(GATE_STRIDE * (count + 1), dtype=np.int32)


def new_lock():
    """A fresh unlocked lock with a clear abort word, each on its own cache line."""
    return new_gates(1)


@njit(nogil=True, cache=True, inline="always")
def acquire(lock, owner):
    """Wait until the lock word goes 0 -> ``owner`` (a worker's number + 1);
    False if the run was aborted first."""
    polls = 0
    while True:
        if _compare_and_swap(lock, LOCK_WORD, np.int32(0), np.int32(owner)) == 0:
            return True
        while _atomic_load(lock, LOCK_WORD) != 0:
            if _atomic_load(lock, 0) != 0:
                return False
            _back_off(polls)
            polls += 1


@njit(nogil=True, cache=True, inline="always")
def release(lock):
    _atomic_store(lock, LOCK_WORD, np.int32(0))


@njit(nogil=True, cache=True)
def release_if_owner(lock, owner):
    """Free the lock if ``owner`` holds it (that worker failed or died holding it)."""
    _compare_and_swap(lock, LOCK_WORD, np.int32(owner), np.int32(0))


@njit(nogil=True, cache=True, inline="always")
def wait_for_gate(gates, gate, level):
    """Wait until gate ``gate`` reaches ``level``; False if the run was aborted."""
    slot = GATE_STRIDE * (gate + 1)
    polls = 0
    while _atomic_load(gates, slot) < level:
        if _atomic_load(gates, 0) != 0:
            return False
        _back_off(polls)
        polls += 1
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
    """Tell workers waiting on these gates (or this lock) to give up (a worker failed)."""
    gates[0] = 1


def abandon_lock(lock, owner):
    """Worker ``owner`` failed or died: free the lock if it held it, and abort the
    others' waits (they would otherwise wait for its share forever)."""
    release_if_owner(lock, owner)
    abort_gates(lock)


__all__ = ["acquire", "release", "release_if_owner", "abandon_lock", "new_lock", "new_gates",
           "wait_for_gate", "open_gate", "abort_gates", "spin_for_gate", "raise_gate"]


# --- free blocks (FPSGD's dynamic scheduling) ---------------------------------------
# A "free" plan's state is a gates array: gate 0 is a lock; a block row
# (lo, hi, limit, row_gate, column_gate, taken_gate) is free to start while its
# taken gate, its row's and its column's gates are all 0. Only the lock's holder
# reads or writes them.

_PICK_MIX = 0x9E3779B1


@njit(nogil=True, cache=True, inline="always")
def _gate(state, gate):
    return state[GATE_STRIDE * (gate + 1)]


@njit(nogil=True, cache=True, inline="always")
def _set_gate(state, gate, value):
    state[GATE_STRIDE * (gate + 1)] = value


@njit(nogil=True, cache=True, inline="always")
def take_free_block(state, blocks, owner, picks):
    """Under the lock, take a block whose row and column no running block has, the
    search starting at a position hashed from (owner, picks); its index, -1 when
    every block left is blocked (wait and retry), -2 when none is left, -3 when
    the run was aborted."""
    n = blocks.shape[0]
    if not acquire(state, owner):
        return -3
    start = ((owner * _PICK_MIX + picks * 40503) & 0x7FFFFFFF) % n
    chosen = -2
    for t in range(n):
        b = (start + t) % n
        if _gate(state, blocks[b, 5]) == 0:
            if _gate(state, blocks[b, 3]) == 0 and _gate(state, blocks[b, 4]) == 0:
                chosen = b
                break
            chosen = -1
    if chosen >= 0:
        _set_gate(state, blocks[chosen, 5], 1)
        _set_gate(state, blocks[chosen, 3], 1)
        _set_gate(state, blocks[chosen, 4], 1)
    release(state)
    return chosen


@njit(nogil=True, cache=True, inline="always")
def finish_block(state, blocks, b, owner):
    """Free block ``b``'s row and column; False if the run was aborted."""
    if not acquire(state, owner):
        return False
    _set_gate(state, blocks[b, 3], 0)
    _set_gate(state, blocks[b, 4], 0)
    release(state)
    return True


@njit(nogil=True, cache=True, inline="always")
def wait_a_little(state, polls):
    """Back off before poll ``polls`` of a retry; False if the run was aborted."""
    if _atomic_load(state, 0) != 0:
        return False
    _back_off(polls)
    return True
