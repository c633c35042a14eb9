"""The statistics a problem computes from its samples before training (the labels
there are, how often each feature occurs, the mean row norm behind an automatic
step), where each rank of an MPI job holds only its own samples (part files read
per host: AllreduceSettings.samples="own"): summed over the job, so that every
rank sets up the run that one process holding all the samples would."""
import numpy as np


class LocalPool:
    """The samples this process holds are all the run's: statistics as they are."""

    own = False

    def sum(self, value):
        return value

    def union(self, labels):
        return labels

    def every(self, value):
        return [value]


class JobPool:
    """Statistics summed (or labels united) over the job's ranks (its survivors,
    once ranks were lost)."""

    own = True

    def __init__(self, MPI):
        self.MPI = MPI

    @property
    def comm(self):
        from hogwild.backends.mpi import job_comm
        return job_comm(self.MPI)

    def sum(self, value):
        """A number or array summed over the ranks (every rank gets the sum)."""
        if np.ndim(value) == 0:
            return type(value)(self.comm.allreduce(value))
        value = np.ascontiguousarray(value)
        total = np.empty_like(value)
        self.comm.Allreduce(value, total, op=self.MPI.SUM)
        return total

    def union(self, labels):
        """The sorted distinct labels of every rank's."""
        return np.unique(np.concatenate(self.comm.allgather(np.asarray(labels))))

    def every(self, value):
        """Every rank's value, in rank order."""
        return self.comm.allgather(value)


LOCAL = LocalPool()


def samples_pool(backend, distributed):
    """The pool of a run on ``backend`` with these distributed settings (a dict or
    AllreduceSettings): a JobPool where each MPI rank holds its own samples, else
    LOCAL."""
    if backend != "mpi" or distributed is None:
        return LOCAL
    samples = distributed.get("samples") if isinstance(distributed, dict) \
        else getattr(distributed, "samples", "whole")
    if samples != "own":
        return LOCAL
    from hogwild.backends.mpi import import_mpi
    return JobPool(import_mpi())
