"""Surviving a lost rank: User Level Failure Mitigation (ULFM, MPI 4's fault
tolerance proposal; Open MPI 5 under ``mpirun --with-ft ulfm``, which ``--ranks``
passes). mpirun then keeps the job when a rank dies, and a collective that needed
the dead rank raises MPI_ERR_PROC_FAILED on the ranks that notice, or
MPI_ERR_REVOKED on those that another survivor told (MPI_Comm_revoke). The
survivors revoke every communicator of the run, shrink the world to themselves
(MPI_Comm_shrink, itself fault tolerant) and go on; MPIBackend decides from which
state (see MPIBackend._survive). Under an MPI without ULFM, or a plain mpirun,
mpirun ends the job when a rank dies and nothing here runs."""


def rank_lost(MPI, error):
    """Whether an MPI error says that a rank of the communicator died (or that a
    survivor revoked it for that reason)."""
    return isinstance(error, MPI.Exception) and error.Get_error_class() in (
        MPI.ERR_PROC_FAILED, MPI.ERR_REVOKED)


def shrink(MPI, comm, derived=()):
    """The survivors' communicator: ``comm`` and the communicators ``derived`` from
    it (a tuned duplicate, a hierarchical allreduce's) revoked, so that every rank
    waiting in one of them learns of the loss, then shrunk to the ranks alive. The
    survivors keep their order: the lowest survivor is rank 0."""
    for communicator in (*derived, comm):
        try:
            communicator.Revoke()
        except MPI.Exception:  # revoked already, or freed
            pass
    return comm.Shrink()


def world_ranks(MPI, comm):
    """The COMM_WORLD rank of each rank of ``comm``."""
    group, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        return [int(r) for r in MPI.Group.Translate_ranks(group, range(group.Get_size()),
                                                          world)]
    finally:
        group.Free()
        world.Free()


def lost_line(record, syncs, trainers, reducer, algorithm):
    """The chief's line on a lost rank (``record``: one of MPIBackend.lost): a
    summation server's costs no update, and says who adds now (``reducer``, the
    survivors' allreduce: a SummationService or a communicator running
    ``algorithm``); a rank that trained leaves its samples to the ``trainers``."""
    if record.get("summation_server"):
        servers = getattr(reducer, "servers", 0)
        adders = (f"{servers} summation server{'s add' if servers > 1 else ' adds'}" if servers
                  else f"the ranks' {algorithm} allreduce adds")
        return (f"hogwild: summation server {record['rank']} was lost in epoch "
                f"{record['epoch']} (after {syncs:,} syncs); {adders} the changes")
    went_on = (f"hogwild: rank {record['rank']} was lost in epoch {record['epoch']} (after "
               f"{syncs:,} syncs); {trainers} rank{'s go' if trainers > 1 else ' goes'} on")
    if "samples_lost" in record:  # its samples were its own: nobody else holds them
        return (f"{went_on} without its {record['samples_lost']:,} samples (no other rank "
                "holds them)")
    return (f"{went_on} with its samples, its unfinished piece's updates (at most "
            f"{record['unfinished_piece_samples']:,}) lost")
