"""Warp-level helpers for an Objective's ``warp_update`` (GPU backend only).

In a warp update the 32 lanes of a CUDA warp work on one sample together, each
on its own share of the dense per-sample work (lane l takes coordinates l, l+32,
...), and ``warp_sum`` adds the lanes' partial results so that every lane holds
the total: cuMF_SGD's layout for rank-k factor rows (Xie et al., HPDC 2017).

numba's CUDA simulator has no warp shuffles. Under NUMBA_ENABLE_CUDASIM=1 this
module gives the simulator's in-kernel ``cuda`` object an exact emulation of
``shfl_xor_sync`` (every lane posts its value, the warp's 32 lanes meet at a
barrier, each lane reads its partner's), so the kernel that
runs on a GPU is the one CI tests, unchanged. As on a GPU with a full mask, all
32 lanes of the warp must reach every shuffle: warp updates run the same loop
trip counts in every lane. A per-warp barrier rather than the simulator's
syncthreads, which polls the whole block and made each shuffle ~10 ms.
"""
import os
import threading

from numba import cuda  # a module global: the simulator swaps it for its own in kernels

FULL_MASK = 0xFFFFFFFF
WARP_SIZE = 32
SIMULATOR_TIMEOUT = 120  # seconds a simulated lane waits for its warp before failing


@cuda.jit(device=True)
def warp_sum(value):
    """The sum of ``value`` over the 32 lanes of the warp, in every lane (an XOR
    butterfly: each step adds commutatively, so all lanes get bitwise the same
    total)."""
    for offset in (16, 8, 4, 2, 1):
        value += cuda.shfl_xor_sync(FULL_MASK, value, offset)
    return value


def _simulated_shfl_xor_sync(self, mask, value, lane_mask):
    """Each lane posts its value on the board of this shuffle's parity, the warp
    meets at a barrier, each lane reads its partner's post. One barrier suffices:
    a lane that runs ahead posts its next value on the other board, and cannot
    come back to this one before every lane has passed the next barrier, that
    is, has read this one."""
    thread = threading.current_thread()
    warp = thread.thread_id // WARP_SIZE
    shared = thread._manager.__dict__.setdefault("hogwild_warps", {})  # one per block
    barrier = shared.get(warp) or shared.setdefault(
        warp, threading.Barrier(WARP_SIZE, timeout=SIMULATOR_TIMEOUT))
    parity = thread.__dict__.get("hogwild_parity", 0)
    thread.hogwild_parity = 1 - parity
    board = shared.setdefault((warp, parity), {})
    board[thread.thread_id] = value
    barrier.wait()
    return board[thread.thread_id ^ lane_mask]


def _emulate_shuffles_in_the_simulator():
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    if not hasattr(FakeCUDAModule, "shfl_xor_sync"):
        FakeCUDAModule.shfl_xor_sync = _simulated_shfl_xor_sync


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    _emulate_shuffles_in_the_simulator()
