"""blocked: conflict-free blocks of a grid (DSGD / FPSGD)."""
import numpy as np

from hogwild.errors import HogwildError
from hogwild.schedulers.plan import EpochPlan


class BlockedScheduler:
    """DSGD / FPSGD-style conflict-free blocks (Gemulla et al. 2011; Zhuang et al.
    2013). An epoch is ``grid`` rounds; round s runs the blocks (i, sigma_s(i)) for
    every grid row i, where the sigma_s are a random rotation order composed with
    a random column relabelling, so every block runs exactly once per epoch and
    no two blocks of a round share a row or a column.

    There is no barrier between rounds: a block starts as soon as the blocks of
    the previous round on its grid row and on its grid column are done (gates in
    compiled code), so it sees exactly the parameters it would see with a barrier,
    and the result is bitwise reproducible for a seed and layout whatever the
    number of workers and the thread timing. Each worker owns a fixed band of grid
    rows, whose parameters stay in its cache (put the larger side, e.g. users, on
    the rows); only column blocks move between cores.
    """

    name = "blocked"
    kind = "gated"
    needs = ("blocks",)  # what an objective must declare (problems ask, see SCHEDULERS)

    def prepare(self, objective, workers):
        layout = objective.blocks
        if layout is None:
            raise HogwildError("scheduler 'blocked' needs an objective with a block layout "
                               "(Objective(..., blocks=...), see hogwild.structure."
                               "block_layout); matrix completion builds one")
        offsets = np.asarray(layout.offsets)
        if offsets.shape != (layout.grid ** 2 + 1,) or offsets[0] != 0 or \
                (np.diff(offsets) < 0).any():
            raise HogwildError(f"block layout: offsets must rise from 0, one per block of the "
                               f"{layout.grid} x {layout.grid} grid and one more")
        if int(layout.offsets[-1]) != objective.n_samples:
            raise HogwildError(f"block layout covers {int(layout.offsets[-1])} samples, "
                               f"the objective has {objective.n_samples}")
        return _BlockedPlanner(layout, min(workers, layout.grid), objective.n_samples)


class _BlockedPlanner:
    setup_seconds = 0.0

    def __init__(self, layout, workers, n_samples):
        self.layout, self.workers, self.n_samples = layout, workers, n_samples

    def plan(self, rng, run_length=1):
        g, offsets, workers = self.layout.grid, self.layout.offsets, self.workers
        rotations = rng.permutation(g)
        relabel = rng.permutation(g)
        shares = [[] for _ in range(workers)]
        for level, shift in enumerate(rotations):
            for i in range(g):
                j = int(relabel[(i + shift) % g])
                k = i * g + j  # block (i, j) is run k: samples offsets[k]..offsets[k+1]-1
                # gates: grid row i is gate i, grid column j is gate g + j
                shares[i * workers // g].append((k, k + 1, int(offsets[k + 1]), i, g + j,
                                                 level))
        phase = tuple(np.array(share, np.int64).reshape(-1, 6) for share in shares)
        return EpochPlan("gated", offsets[:-1], self.n_samples, (phase,), gates=2 * g)


class FreeBlocksScheduler(BlockedScheduler):
    """FPSGD's scheduler (Zhuang et al., RecSys 2013; LIBMF): the same grid of
    conflict-free blocks as ``blocked``, but no block is assigned in advance. A
    worker that finishes a block takes, under a short lock, one that has not run
    this epoch and shares no grid row or column with a running block, so a slow
    block holds up no one (no rounds, no bands). Every block runs exactly once per
    epoch. The order in which blocks run depends on thread timing, so runs are
    reproducible only in distribution (``blocked`` is the bitwise one).
    """

    name = "fpsgd"
    kind = "free"

    def prepare(self, objective, workers):
        planner = super().prepare(objective, workers)
        return _FreeBlocksPlanner(planner.layout, planner.workers, planner.n_samples)


class _FreeBlocksPlanner(_BlockedPlanner):
    def plan(self, rng, run_length=1):
        g, offsets = self.layout.grid, self.layout.offsets
        # gate 0: the lock; 1 + i: grid row i busy; 1 + g + j: column j busy;
        # 1 + 2g + k: block k taken this epoch. Rows in a random order each epoch.
        table = np.array([(k, k + 1, int(offsets[k + 1]), 1 + k // g, 1 + g + k % g,
                           1 + 2 * g + k) for k in rng.permutation(g * g)], np.int64)
        phase = tuple(table for _ in range(self.workers))
        return EpochPlan("free", offsets[:-1], self.n_samples, (phase,),
                         gates=1 + 2 * g + g * g)
