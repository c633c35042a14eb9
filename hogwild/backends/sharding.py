"""How a multi-process run splits its work: each node (a Ray node actor, an MPI
rank) owns a contiguous share of the samples, draws its own plans for it, and
sees the parameters as one flat vector (for the server's key ranges, or for one
allreduce)."""
import numpy as np

from hogwild.errors import HogwildError
from hogwild.schedulers import even_spans


class FlatLayout:
    """The objective's parameter arrays as one vector (views into it, so a node's
    engine updates the vector in place) cut into key ranges for the server."""

    def __init__(self, params, backend):
        dtypes = sorted({str(np.asarray(p).dtype) for p in params})
        if len(dtypes) != 1:
            raise HogwildError(f"backend '{backend}' needs parameter arrays of one dtype, got "
                               f"{', '.join(dtypes)}")
        self.dtype = np.dtype(dtypes[0])
        self.shapes = [np.shape(p) for p in params]
        sizes = [int(np.size(p)) for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])

    def flatten(self, params):
        return np.concatenate([np.asarray(p, self.dtype).ravel() for p in params])

    def views(self, flat):
        return tuple(flat[a:b].reshape(shape) for a, b, shape in
                     zip(self.offsets[:-1], self.offsets[1:], self.shapes))

    def bounds(self, shards):
        return np.linspace(0, self.size, shards + 1).round().astype(np.int64)


def run_seed(seed):
    """The integer that seeds every node's sample order (from an int, None or a
    SeedSequence)."""
    sequence = seed if isinstance(seed, np.random.SeedSequence) \
        else np.random.SeedSequence(seed)
    return int(sequence.generate_state(1)[0])


def node_samples(n_samples, nodes, node):
    """The contiguous share (first, last) of the samples that ``node`` owns."""
    first, last = even_spans(n_samples, nodes)[node]
    return int(first), int(last)


def own_shares(comm, n_samples):
    """{rank: its samples} of a job whose ranks each hold their own (``comm``'s
    ranks), or a HogwildError naming a rank that holds none."""
    shares = dict(enumerate(comm.allgather(n_samples)))
    empty = [rank for rank, n in shares.items() if n == 0]
    if empty:
        raise HogwildError(f"rank {empty[0]} holds no samples of its own: every rank needs "
                           "some to train on")
    return shares


def job_mean_times(comm, loss_sum, samples, n):
    """The job's mean loss (every rank's ``loss_sum`` over its ``samples``) times
    ``n``: what a rank that divides by its own n reports as the job's mean."""
    total, count = comm.allreduce(np.array([loss_sum, samples], np.float64))
    return float(total) * n / count if count else 0.0


def pieces_per_epoch(n_samples, nodes, every):
    """How many pieces every node cuts its share of an epoch into, each of about
    ``every`` samples, a reconcile after each (an MPI sync, a Ray clock): the
    largest share's count, so that every node reconciles as often. ``every`` None:
    one piece, the whole share."""
    if every is None:
        return 1
    return max(1, -(-largest_share(n_samples, nodes) // every))


def largest_share(n_samples, nodes):
    """The samples of the largest node's share."""
    return max(last - first for first, last in even_spans(n_samples, nodes))


def piece_plans(planner, n_samples, nodes, node, pieces, epoch, seed, run_length, first=None):
    """The EpochPlans of each piece of an epoch on ``node``, from the local
    scheduler's ``planner`` (for the node's share): its share's runs in a random
    order for (seed, node, epoch), cut into ``pieces`` nearly equal pieces. A
    restarted node recomputes them. ``first``: the share's first sample where the
    node's share is not node_samples' (a rank that holds only its own)."""
    if first is None:
        first, _ = node_samples(n_samples, nodes, node)
    rng = np.random.default_rng([seed, node, epoch])
    return planner.plan_pieces(rng, run_length, pieces, first)
