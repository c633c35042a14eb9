"""Hierarchical allreduce, composed from communicators split by node (the three
phases of Open MPI's han and Horovod's hierarchical allreduce): a reduce to each
node's leader over the node's shared memory, an allreduce of the leaders over the
network by the flat algorithm the model chooses for the link between nodes, and
a broadcast inside each node. Only the leaders' traffic crosses the network."""
from dataclasses import dataclass

from hogwild.backends.mpi.probe import PROBE_SIZES, measure_link
from hogwild.backends.mpi.tuning import tuned_communicator
from hogwild.cluster_costs import hierarchical
from hogwild.collectives import choose


@dataclass
class Nodes:
    """The job's ranks by node: ``node`` the communicator of this rank's node (the
    ranks sharing its memory, node rank 0 its leader), ``leaders`` the leaders'
    communicator (MPI.COMM_NULL on the other ranks), ``sizes`` each node's ranks.
    Collective over ``comm``."""

    node: object
    leaders: object
    sizes: tuple
    partner: int  # the first rank on another node than rank 0's (1 on one node)
    in_order: bool  # whether the ranks fill the nodes in order (mpirun's --map-by core)

    @classmethod
    def of(cls, MPI, comm):
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
        leader = node.Get_rank() == 0
        leaders = comm.Split(0 if leader else MPI.UNDEFINED, key=comm.Get_rank())
        sizes = tuple(size for size in comm.allgather(node.Get_size() if leader else 0)
                      if size)
        node_of = comm.allgather(node.bcast(comm.Get_rank(), root=0))  # each rank's leader
        away = [rank for rank, first in enumerate(node_of) if first != node_of[0]]
        in_order = all(first == rank - rank % sizes[0] for rank, first in enumerate(node_of))
        return cls(node, leaders, sizes, away[0] if away else 1, in_order)

    @property
    def uniform(self):
        """Ranks per node where every node has as many, else None."""
        return self.sizes[0] if len(set(self.sizes)) == 1 else None

    def links(self, MPI, comm, sizes=PROBE_SIZES):
        """(the link inside a node, the link between nodes) as the start-up probe
        measures them (hogwild.backends.mpi.probe) at ``sizes``: every node's ranks
        at once, then the leaders; every rank gets rank 0's node's figures (every
        rank must choose alike), None for a link with one rank to measure.
        Collective over comm."""
        inside = measure_link(MPI, self.node, sizes) if self.node.Get_size() > 1 else None
        between = None
        if self.leaders != MPI.COMM_NULL and self.leaders.Get_size() > 1:
            between = measure_link(MPI, self.leaders, sizes)
        return comm.bcast(inside, root=0), comm.bcast(between, root=0)

    def choose(self, nbytes, inside, between, whole=None):
        """collectives.choose for the flat algorithms across these nodes (the rounds
        between nodes at ``between``, the others at ``inside``, the ring's steps at
        ``whole``, the link measured over every rank, where given), or None on one
        node, on nodes of different sizes, or without the links measured. Ranks
        that do not fill the nodes in order are priced at the link between nodes
        for every round (an upper bound)."""
        per_node, ranks = self.uniform, sum(self.sizes)
        if per_node is None or len(self.sizes) == 1 or between is None \
                or (per_node > 1 and inside is None):
            return None
        if per_node == 1 or not self.in_order:
            return choose(ranks, nbytes, between)
        return choose(ranks, nbytes, inside, nodes=(per_node, between, whole))

    def predict(self, nbytes, inside, between):
        """(predicted seconds, the leaders' algorithm) of a hierarchical allreduce
        of ``nbytes`` bytes, or (None, None) where nodes differ in size or either
        link could not be measured."""
        per_node = self.uniform
        if per_node is None or (per_node > 1 and inside is None) \
                or (len(self.sizes) > 1 and between is None):
            return None, None
        if len(self.sizes) == 1:
            return hierarchical(1, per_node, nbytes, inside, inside)[0], None
        if per_node == 1:
            inside = between  # no node reduce: the leaders are every rank
        return hierarchical(len(self.sizes), per_node, nbytes, inside, between)

    def report(self, links, hierarchical, leaders_algorithm):
        """The ranks of each node, and where they were measured, the links inside
        and between nodes (``links``, as links() gave them, or None) and, for a
        ``hierarchical`` allreduce, the leaders' algorithm."""
        inside, between = links or (None, None)
        return {"ranks_per_node": list(self.sizes),
                **({"link_inside_node": inside.figures()} if inside is not None else {}),
                **({"link_between_nodes": between.figures()} if between is not None else {}),
                **({"leaders_algorithm": leaders_algorithm} if hierarchical else {})}

    def free(self, MPI):
        self.node.Free()
        if self.leaders != MPI.COMM_NULL:
            self.leaders.Free()


class HierarchicalReducer:
    """The reducer an Allreduce exchange calls (``Allreduce(IN_PLACE, buffer,
    op)``), composed by node: reduce to the leader, the leaders' allreduce through
    a communicator tuned to ``leaders_algorithm`` (tuned_communicator; a name, None
    for Open MPI's own pick, or a function of the message's bytes that names one),
    broadcast. ``forced``: whether it runs as reported."""

    def __init__(self, MPI, nodes, leaders_algorithm):
        self.MPI, self.nodes = MPI, nodes
        self.leads = nodes.leaders != MPI.COMM_NULL and nodes.leaders.Get_size() > 1
        self.algorithm_for = leaders_algorithm if callable(leaders_algorithm) \
            else (lambda nbytes: leaders_algorithm)
        self.between = {}  # the leaders' communicator for each algorithm used
        self.forced = True
        if self.leads and not callable(leaders_algorithm):
            self._leaders(leaders_algorithm)

    def _leaders(self, algorithm):
        """The leaders' communicator tuned to ``algorithm`` (made on first use: a
        collective of the leaders, who all reach it with the same message)."""
        if algorithm not in self.between:
            if algorithm is None:
                self.between[None] = self.nodes.leaders
            else:
                self.between[algorithm], forced = tuned_communicator(
                    self.MPI, self.nodes.leaders, algorithm)
                self.forced = self.forced and forced
        return self.between[algorithm]

    def Allreduce(self, sendbuf, recvbuf, op):
        MPI, node = self.MPI, self.nodes.node
        assert sendbuf is MPI.IN_PLACE  # the one form the exchange uses
        if node.Get_size() > 1:
            if node.Get_rank() == 0:
                node.Reduce(MPI.IN_PLACE, recvbuf, op=op, root=0)
            else:
                node.Reduce(recvbuf, None, op=op, root=0)
        if self.leads:
            self._leaders(self.algorithm_for(recvbuf.nbytes)).Allreduce(MPI.IN_PLACE, recvbuf,
                                                                        op=op)
        if node.Get_size() > 1:
            node.Bcast(recvbuf, root=0)

    def Barrier(self):
        self.nodes.node.Barrier()
        if self.leads:
            self.nodes.leaders.Barrier()
        self.nodes.node.Barrier()

    def Revoke(self):
        """Revoke every communicator of the composition (a rank was lost: see
        hogwild.backends.mpi.survival); one revoked already is passed over."""
        for communicator in (self.nodes.node, self.nodes.leaders, *self.between.values()):
            if communicator != self.MPI.COMM_NULL:
                try:
                    communicator.Revoke()
                except self.MPI.Exception:
                    pass

    def Free(self):
        for communicator in self.between.values():
            if communicator is not self.nodes.leaders:
                communicator.Free()
        self.nodes.free(self.MPI)
