"""BytePS's summation service as an allreduce over MPI (Jiang et al., OSDI 2020):
the first ``workers`` ranks of a communicator hold vectors to sum, the others are
servers that only add (spare CPU processes or machines, taking no samples). The
vector is cut into one part per rank, a worker's part and a server's part in
the proportions of BytePS's Theorem 1 (hogwild.cluster_costs.summation_shares),
so that every machine's link carries the same bytes; each worker pushes its copy
of every part to that part's owner, the owner adds the workers' copies in rank
order and sends the sum back to every worker. Parts go in chunks of at most
SUMMATION_CHUNK bytes, every send and receive posted at once, so that an owner
sums and returns a chunk while the next ones arrive (BytePS's pipeline; its cost
is cluster_costs.summation_service). Every worker ends with the same sum,
bitwise: each element is added by one rank, in one order."""
import math

import numpy as np

from hogwild.cluster_costs import SUMMATION_CHUNK, summation_shares

_PUSH, _PULL = 31, 32  # message tags (chunks match in order: MPI does not overtake)


class SummationService:
    """The reducer an exchange or the allreduce probe calls on every rank of
    ``comm`` (``Allreduce(IN_PLACE, buffer, op)``, ``Barrier()``, ``Revoke()``,
    ``Free()``, as a communicator's): on a worker it
    sums the workers' ``buffer`` in place; on a server it takes part in summing a
    vector of ``buffer``'s length (its contents unused). ``servers`` ranks at the
    end of ``comm`` serve, at most as many as workers (BytePS gains nothing
    beyond that)."""

    def __init__(self, MPI, comm, servers):
        self.MPI, self.comm = MPI, comm
        self.ranks = comm.Get_size()
        self.workers = self.ranks - servers
        self.servers = servers
        self.rank = comm.Get_rank()
        self._buffers = {}  # (elements, dtype) -> the workers' copies of this rank's part,
        # the sums pulled (never into the buffer whose pushes may still be in flight)

    def bounds(self, count):
        """The parts' boundaries in elements: part r (owned by rank r) is
        [bounds[r], bounds[r + 1])."""
        worker, server = summation_shares(self.workers, self.servers)
        shares = [worker] * self.workers + [server] * self.servers
        edges = np.rint(np.cumsum([0.0, *shares]) / sum(shares) * count).astype(np.int64)
        edges[-1] = count
        return edges

    def chunks(self, edges, itemsize):
        """[(owner, start, stop)] of every chunk of the parts ``edges`` (bounds),
        chunk by chunk across the owners (every owner gets its first chunk first)."""
        step = max(1, SUMMATION_CHUNK // itemsize)
        largest = int(np.diff(edges).max())
        return [(owner, start, min(start + step, int(edges[owner + 1])))
                for c in range(math.ceil(largest / step)) for owner in range(self.ranks)
                if (start := int(edges[owner]) + c * step) < edges[owner + 1]]

    def _plan(self, count, dtype):
        key = (count, np.dtype(dtype).str)
        if key not in self._buffers:
            edges = self.bounds(count)
            mine = int(edges[self.rank + 1] - edges[self.rank])
            pulled = np.empty(count if self.rank < self.workers else mine, dtype)
            self._buffers[key] = (self.chunks(edges, np.dtype(dtype).itemsize), int(
                edges[self.rank]), np.empty((self.workers, mine), dtype), pulled)
        return self._buffers[key]

    def Allreduce(self, sendbuf, recvbuf, op):
        MPI, comm, rank = self.MPI, self.comm, self.rank
        assert sendbuf is MPI.IN_PLACE and op == MPI.SUM  # the one form callers use
        chunks, low, copies, pulled = self._plan(recvbuf.size, recvbuf.dtype)
        worker = rank < self.workers
        base = 0 if worker else low  # a server's pulled buffer holds its part only
        mine = [(start, stop) for owner, start, stop in chunks if owner == rank]
        arriving = [[comm.Irecv(copies[w, start - low:stop - low], source=w, tag=_PUSH)
                     for w in range(self.workers) if w != rank] for start, stop in mine]
        requests = []
        if worker:
            for owner, start, stop in chunks:
                if owner != rank:
                    requests.append(comm.Irecv(pulled[start:stop], source=owner, tag=_PULL))
                    requests.append(comm.Isend(recvbuf[start:stop], dest=owner, tag=_PUSH))
            copies[rank] = recvbuf[low:low + copies.shape[1]]
        for (start, stop), incoming in zip(mine, arriving):
            MPI.Request.Waitall(incoming)
            total = pulled[start - base:stop - base]
            np.sum(copies[:, start - low:stop - low], axis=0, out=total)
            requests += [comm.Isend(total, dest=w, tag=_PULL)
                         for w in range(self.workers) if w != rank]
        MPI.Request.Waitall(requests)
        if worker:
            recvbuf[:] = pulled

    def Barrier(self):
        self.comm.Barrier()

    def Revoke(self):
        """Revoke the communicator it sums on (a lost rank: hogwild.backends.mpi.survival)."""
        self.comm.Revoke()

    def Free(self):
        self._buffers.clear()
