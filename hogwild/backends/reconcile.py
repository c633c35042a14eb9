"""Work apart, then reconcile: the one loop behind model replication, MPI and Ray.

Several parties (worker threads or processes with their own copies, MPI ranks,
Ray nodes) each run a piece of their share of the epoch on their own copy of
the parameters, then reconcile the copies, piece after piece:

    for piece in the party's pieces of the epoch:
        run the piece on the party's own copy      (local updates, no messages)
        reconciler.reconcile()                     (collective: every party calls it)

The interval is one number everywhere: **updates of one party between two
reconciles** (``every``). TrainingConfig.merge_every is the replicas' (updates of
a worker), AllreduceSettings.sync_every the ranks' and SSPSettings.clock_every
the nodes'. The pieces are cut by one cutter (hogwild.backends.sharding).

Three reconcilers keep the contract, each in its backend:

    ReplicaMerge (hogwild.backends.replicas)  shared memory: the workers meet,
        each merges its slice of the copies (a coordinate one worker changed
        takes its value; others the mean or sum of the changes), and meet again
    Allreduce (hogwild.backends.mpi.exchange)  the ranks average their changes
        since the last reconcile (dense allreduce or sparse allgather)
    ParameterServer (hogwild.backends.ray.actors)  a node pushes its changes,
        ticks its clock, waits while it is more than ``staleness`` clocks ahead
        of the slowest, and pulls what changed on the server

What every one guarantees (tests/test_reconcile_contract.py): no update is lost
where the parties' samples touch disjoint coordinates; one party is bitwise the
serial run of its pieces; the step an epoch record keeps is the step applied.
"""
from abc import ABC, abstractmethod


class Reconciler(ABC):
    """One party's side of reconciling the parties' copies."""

    @abstractmethod
    def reconcile(self):
        """Bring this party's copy to the reconciled state (every party calls it as
        often). False: the run was aborted and the party must stop."""

    def reload(self):
        """The reconciled parameters were changed from outside the parties (an
        allreduce between MPI ranks around replicas): each party's copy takes them
        again, where it keeps one."""


def work_apart(pieces, run_piece, reconciler, after_piece=None):
    """The loop every party runs: ``run_piece(piece)`` (its updates, or < 0 when
    aborted) on the party's own copy, then ``reconciler.reconcile()``, for each of
    ``pieces``; ``after_piece(done)`` with the updates so far after each. The
    updates done, or -1 when the run was aborted."""
    done = 0
    for piece in pieces:
        updates = run_piece(piece)
        if updates < 0 or reconciler.reconcile() is False:
            return -1
        done += updates
        if after_piece is not None:
            after_piece(done)
    return done
