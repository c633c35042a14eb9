"""How each kind of EpochPlan runs: one table from the plan's kind to its compiled
loop, the columns of its span rows and the synchronisation words it needs. Every
CPU backend runs a worker's share through ``run_share``; nothing else decodes a
plan's kind.

    spans   lock-free spans (lo, hi, limit)                        run_spans
    locked  the same spans, each update under one spinlock         run_spans_locked
    gated   blocks (lo, hi, limit, gate_a, gate_b, level) that     run_gated_spans
            start once both gates reach their level
    phased  spans (lo, hi, limit, phase) with a compiled barrier   run_phased_spans
            between phases
    free    blocks (lo, hi, limit, row, column, taken gates),      run_free_blocks
            every worker the same; each takes free ones (FPSGD)
"""
from typing import Callable, NamedTuple

import numpy as np

from hogwild.kernels.atomics import abandon_lock, abort_gates, new_gates


class Share(NamedTuple):
    """One worker's part of one phase of an epoch: what its compiled loop takes
    besides the parameters and the data."""

    kind: str
    runs: np.ndarray       # the plan's run starts
    spans: np.ndarray      # this worker's span rows
    run_length: int
    steps: np.ndarray      # the step table (hogwild.steps.EpochSteps.table)
    epoch: int
    sync: np.ndarray       # the plan's gates, or its lock (see new_sync)
    worker: int            # 0 .. workers - 1
    workers: int
    first: int = 0         # the share's updates done before these spans
    total: int = 1         # what the step table spans (share_length; read with a
    #                        table of several steps only)

    def piece(self, spans, done):
        """The part ``spans`` of this share, ``done`` of its updates done before it."""
        return self._replace(spans=spans, first=self.first + done)


class PlanKind(NamedTuple):
    loop: str                              # the CompiledLoops field that runs a share
    columns: int                           # columns of a span row
    gates: Callable                        # (plan, workers) -> gates the plan waits on
    extra: Callable                        # Share -> the loop's arguments after epoch


PLAN_KINDS = {
    "spans": PlanKind("run_spans", 3, lambda plan, workers: 0, lambda share: ()),
    "locked": PlanKind("run_spans_locked", 3, lambda plan, workers: 1,  # the lock: gate 0
                       lambda share: (share.sync, share.worker + 1)),
    "gated": PlanKind("run_gated_spans", 6, lambda plan, workers: plan.gates,
                      lambda share: (share.sync,)),
    "phased": PlanKind("run_phased_spans", 4, lambda plan, workers: workers,
                       lambda share: (share.sync, share.worker, share.workers)),
    "free": PlanKind("run_free_blocks", 6, lambda plan, workers: plan.gates,
                     lambda share: (share.sync, share.worker + 1)),
}


def gate_count(plan, workers):
    """How many gates a plan's synchronisation array holds (new_gates' count)."""
    return PLAN_KINDS[plan.kind].gates(plan, workers)


def run_share(loops, share, params, data):
    """Run ``share`` with its kind's compiled loop; the updates done, or -1 when
    another worker aborted the run."""
    kind = PLAN_KINDS[share.kind]
    return getattr(loops, kind.loop)(share.runs, share.spans, share.run_length, params,
                                     data, share.steps, share.first, share.total, share.epoch,
                                     *kind.extra(share))


def share_length(plan, spans, workers, steps):
    """What a worker's step table spans (Share.total): the plan's phases (phased)
    or levels (gated), which every worker counts alike, else the updates of its
    span rows (of free blocks, which any worker may take, an even share); 1 for a
    table of one step, which needs none."""
    if steps.size == 1:
        return 1
    if plan.kind == "phased":
        return max(plan.barriers, 1)
    if plan.kind == "gated":
        levels = [rows[:, 5] for phase in plan.phases for rows in phase if len(rows)]
        return int(np.concatenate(levels).max()) + 1 if levels else 1
    total = 0
    for lo, hi, limit in np.asarray(spans, np.int64).reshape(len(spans), -1)[:, :3]:
        starts = plan.runs[lo:hi]
        total += int(np.minimum(starts + plan.run_length, limit).sum() - starts.sum())
    return max(total // workers if plan.kind == "free" else total, 1)


def give_up(kind, sync, worker):
    """Worker ``worker`` failed (or died): release the lock if it held it and abort
    the other workers' waits, which would otherwise wait for its share forever."""
    if kind in ("locked", "free"):  # both take a lock
        abandon_lock(sync, worker + 1)
    else:
        abort_gates(sync)


def warm_up(loops, kind, params, data):
    """Compile (or load from cache) the loop of plans of ``kind``, outside the
    timed epochs, by running it on no samples."""
    spans = np.zeros((0, PLAN_KINDS[kind].columns), np.int64)
    run_share(loops, Share(kind, np.zeros(0, np.int64), spans, 1, np.zeros(1), 0,
                           new_gates(1), 0, 1),
              params, data)


def pieces(kind, spans, run_length, chunk_samples):
    """A worker's span rows cut into kernel calls of about ``chunk_samples`` updates
    (progress counters move and failures are seen during long epochs; replicas
    merge between them). Plain spans split at any run; gated and phased rows
    (blocks, phases) are kept whole, and free blocks, which any worker may take,
    in one piece."""
    runs_per_piece = max(1, chunk_samples // max(run_length, 1))
    if kind in ("spans", "locked"):
        for lo, hi, limit in spans:
            for start in range(lo, hi, runs_per_piece):
                yield np.array([[start, min(start + runs_per_piece, hi), limit]], np.int64)
        return
    rows = max(1, len(spans) if kind == "free" else len(spans) // 32)
    for start in range(0, len(spans), rows):
        yield spans[start:start + rows]
