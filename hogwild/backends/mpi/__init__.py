"""backend="mpi": synchronous data parallelism, the ranks' changes averaged by allreduce.

Every rank of an MPI job (``mpirun -n N python script.py``, ``mpirun -n N hogwild
run ...``) calls hogwild.fit with its own copy of the objective (loaded from its
own disk; no data goes through rank 0). Then:

- each rank owns a contiguous share of the samples and runs the local engine on it
  (the threads backend: hogwild, locked or serial plans, any replication mode);
- every ``sync_every`` local updates (default: once an epoch) the ranks average
  their parameter changes since the last sync: one dense allreduce of the change
  vector, or, where fewer bytes move that way, an allgather of the changed
  coordinates (indices and values), each rank adding them up in rank order. Either
  way every rank ends with the same parameters;
- the dense allreduce runs Open MPI's tuned algorithm that the alpha-beta-gamma
  model (hogwild.collectives) predicts fastest for the vector's size and the rank
  count, on the link costs a probe measures when the run starts (or the one asked
  for); on several nodes the hierarchical allreduce (a reduce per node, the
  leaders' allreduce, a broadcast) is priced on the links inside and between
  nodes and chosen where it is cheaper; predicted and measured times are in
  FitResult.distributed;
- rank 0 (the chief) reports: progress, callbacks, metrics and checkpoints are its
  alone. The epoch's objective is the sum of every rank's loss over its share. A
  stop request (Ctrl-C, SIGTERM) on any rank stops every rank after the same epoch;
- under ULFM (``mpirun --with-ft ulfm``; ``--ranks`` passes it) a rank lost once
  training began is survived: the others shrink to themselves, take the most
  advanced reconciled state, split its samples among them and go on; the lowest
  survivor becomes the chief (survival.py, MPIBackend._survive).

With one local update per rank between syncs this is synchronous minibatch SGD
with a minibatch of ``ranks`` samples. ``step_scaling="linear"`` (the default)
multiplies the step by the rank count (the linear scaling rule of Goyal et al.,
"Accurate, Large Minibatch SGD", 2017), optionally reached gradually over
``warmup_epochs``: the mean of the ranks' changes then moves about as far as one
process would in the same epochs. Without it ("none") each rank's progress is
divided by the ranks: MovieLens 1M at 2 ranks ends at test RMSE 0.881 instead of
0.855 after 20 epochs. "none" keeps a mean of feasible points feasible, which
suits constrained parameters (the graph cuts' simplex rows).

A rank that raises must end the job: a rank that returns from an error while the
others wait in a collective hangs the job at MPI_Finalize. The command line calls
MPI_Abort for every error; in a script, an exception that nothing catches does the
same (import_mpi installs an excepthook, as ``python -m mpi4py script.py`` would).
Ranks whose settings differ would enter different collectives: every rank compares
its run's settings (every field of its TrainingConfig and AllreduceSettings, the
objective's name and shapes) with rank 0's before the first collective of a fit,
and all fail with the same message naming the field and both values.

A rank whose launcher (mpirun) died exits within a second and removes the
launcher's session directory. Open MPI's shared-memory segments are made in a
folder of this user's for the launcher (``hogwild-PID-mpi-UID`` in /dev/shm) and
lose their names once every rank of a node has mapped them; a folder left by a
launcher killed before that, and its session directory (``ompi.PID`` in the
temporary folder), are removed by the next hogwild run that starts MPI or
launches ranks (their launcher's pid is gone).

Where each part lives: job.py (the job as a rank sees it: rank, size, starting
MPI, the ranks' agreement), launcher.py (watching mpirun, removing what a killed
one left), settings.py (AllreduceSettings, the linear scaling rule), tuning.py
(forcing Open MPI's allreduce algorithm), probe.py (the link probe), hierarchy.py
(the ranks by node, the hierarchical allreduce), summation.py (BytePS's summation
service, measured by allreduce-probe), survival.py (ULFM), exchange.py
(Allreduce, the ranks' Reconciler) and backend.py (MPIBackend). Nothing here
starts MPI on import: import_mpi does, when a run or a command needs it.
"""
from hogwild.backends.mpi.backend import MPIBackend
from hogwild.backends.mpi.hierarchy import HierarchicalReducer, Nodes
from hogwild.backends.mpi.job import (STARTED_SOCKET_VARIABLE, agree, import_mpi, in_mpi_job,
                                      job_chief, job_comm, job_local_size, job_rank,
                                      job_size, meet_before_exit)
from hogwild.backends.mpi.launcher import remove_stale_sessions
from hogwild.backends.mpi.probe import SitOut, measure_link, probe_sizes, time_algorithms
from hogwild.backends.mpi.settings import AllreduceSettings, check_summation_servers, \
    step_factor
from hogwild.backends.mpi.starting import first_to_say
from hogwild.backends.mpi.summation import SummationService
from hogwild.backends.mpi.survival import rank_lost

__all__ = ["STARTED_SOCKET_VARIABLE", "AllreduceSettings", "HierarchicalReducer", "MPIBackend",
           "Nodes", "SitOut", "SummationService", "agree", "check_summation_servers",
           "first_to_say", "import_mpi", "in_mpi_job", "job_chief", "job_comm",
           "job_local_size", "job_rank", "job_size",
           "measure_link", "meet_before_exit", "probe_sizes", "rank_lost",
           "remove_stale_sessions", "step_factor", "time_algorithms"]
