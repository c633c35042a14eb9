"""The link probe: the costs of a job's links measured at start-up (measure_link,
for the alpha-beta-gamma model of hogwild.collectives), and every allreduce
algorithm timed (time_algorithms, for the allreduce-probe command)."""
import math
import time

import numpy as np

from hogwild.backends.mpi.tuning import tuned_communicator
from hogwild.collectives import ALGORITHMS, MeasuredLink, predict
from hogwild.errors import HogwildError

PROBE_SIZES = tuple(1 << k for k in range(10, 23, 2))  # bytes of the start-up probe, 1 KiB-4 MiB
PROBE_REPEATS = 9  # repeats per size up to 1 MiB (3 above); the median counts
RING_STEPS = 3  # ring steps back to back in a repeat of the link probe
STRAGGLER_BYTES = 1 << 18  # each rank's message to rank 0, timed to find a slow link


def probe_sizes_for(nbytes, algorithm="auto"):
    """The start-up probe's sizes for a run that exchanges ``nbytes`` a sync: those
    of PROBE_SIZES below it and the first at or above it (an allreduce's messages
    run from nbytes / ranks to nbytes), so a 1 KB model is not timed at 4 MiB
    (77 s of a start-up between emulated hosts); the two smallest where
    ``algorithm`` is named, which no prediction has to choose."""
    if algorithm not in ("auto", "hierarchical"):
        return PROBE_SIZES[:2]
    below = [size for size in PROBE_SIZES if size < nbytes]
    above = [size for size in PROBE_SIZES if size >= nbytes][:1]
    sizes = below + above
    return tuple(sizes) if len(sizes) >= 2 else PROBE_SIZES[:2]


def measure_link(MPI, comm, sizes=PROBE_SIZES, repeats=PROBE_REPEATS, partner=1):
    """The MeasuredLink of ``comm``, each pattern timed at each of ``sizes``: a
    message, half the median ping-pong round trip between ranks 0 and ``partner``
    (on several nodes, a rank of another node than rank 0's: Nodes.partner); an
    exchange round, every rank swapping with a partner (r xor 1, then r xor 2, ...,
    recursive doubling's rounds, back to back); a ring step, every rank sending
    to r + 1 while receiving from r - 1 (up to RING_STEPS steps back to back, as a
    ring runs them). A repeat is timed from a barrier by its slowest rank, divided
    by its rounds or steps; the median repeat counts. gamma is the time per byte
    of a float32 sum on rank 0; slowest, the slowest rank's message to rank 0 over
    ``partner``'s (slowest_factor). Every rank gets rank 0's figures."""
    rank, ranks = comm.Get_rank(), comm.Get_size()
    power = 1 << (ranks.bit_length() - 1)  # ranks past the largest power of two wait
    rounds = power.bit_length() - 1
    rounds *= math.ceil(RING_STEPS / rounds)  # back to back, as an allreduce runs them
    partners = [rank ^ (1 << (k % (power.bit_length() - 1))) for k in range(rounds)] \
        if rank < power else []
    right, left = (rank + 1) % ranks, (rank - 1) % ranks
    steps = RING_STEPS

    def ping_pong(buffer, incoming):
        if rank == 0:
            comm.Send(buffer, dest=partner, tag=7)
            comm.Recv(buffer, source=partner, tag=7)
        elif rank == partner:
            comm.Recv(buffer, source=0, tag=7)
            comm.Send(buffer, dest=0, tag=7)

    def exchange_rounds(buffer, incoming):
        for partner in partners:
            comm.Sendrecv(buffer, dest=partner, sendtag=8, recvbuf=incoming, source=partner,
                          recvtag=8)

    def ring_steps(buffer, incoming):
        for _ in range(steps):
            comm.Sendrecv(buffer, dest=right, sendtag=9, recvbuf=incoming, source=left,
                          recvtag=9)

    times = {}
    for name, pattern, per in (("ping_pong", ping_pong, 2),
                               ("exchange", exchange_rounds, rounds),
                               ("ring", ring_steps, steps)):
        times[name] = []
        for size in sizes:
            buffer, incoming = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
            rounds = []
            for _ in range((repeats if size <= 1 << 20 else 3) + 1):  # the first warms up
                comm.Barrier()
                start = time.perf_counter()
                pattern(buffer, incoming)
                rounds.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
            times[name].append(float(np.median(rounds[1:])) / per)
    slowest = slowest_factor(comm, partner, repeats=min(repeats, 3),
                             size=min(STRAGGLER_BYTES, sizes[-1]))
    costs = None
    if rank == 0:
        a = np.ones(1 << 18, np.float32)  # 1 MiB
        b = np.ones_like(a)
        sums = []
        for _ in range(repeats):
            start = time.perf_counter()
            np.add(a, b, out=a)
            sums.append(time.perf_counter() - start)
        costs = MeasuredLink(tuple(sizes), tuple(times["ping_pong"]),
                             tuple(times["exchange"]), tuple(times["ring"]),
                             min(sums) / a.nbytes, slowest)
    return comm.bcast(costs, root=0)


def slowest_factor(comm, partner, repeats, size=STRAGGLER_BYTES):
    """On rank 0: the slowest rank's message of ``size`` bytes to rank 0 over
    ``partner``'s (at least 1), each rank's the median of ``repeats`` timed from a
    barrier, one rank at a time: a straggler's link, which the ping-pong with one
    partner misses and the linear algorithm's gather waits for. None elsewhere."""
    rank, ranks = comm.Get_rank(), comm.Get_size()
    if ranks <= 2:  # the partner is the only other rank
        return 1.0 if rank == 0 else None
    buffer = np.zeros(size, np.uint8)
    seconds = {}
    for source in range(1, ranks):
        times = []
        for _ in range(repeats + 1):  # the first warms up
            comm.Barrier()
            start = time.perf_counter()
            if rank == source:
                comm.Send(buffer, dest=0, tag=10)
            elif rank == 0:
                comm.Recv(buffer, source=source, tag=10)
            times.append(time.perf_counter() - start)
        seconds[source] = float(np.median(times[1:]))
    if rank != 0:
        return None
    return max(1.0, max(seconds.values()) / max(seconds[partner], 1e-9))


def probe_sizes(smallest=1 << 10, largest=1 << 28, factor=4):
    """Message sizes in bytes, ``smallest`` to ``largest`` by ``factor``."""
    sizes = [smallest]
    while sizes[-1] * factor <= largest:
        sizes.append(sizes[-1] * factor)
    return sizes


class SitOut:
    """The reducer of a rank that sits an algorithm out (a summation server while
    the workers run Open MPI's): its turns are no-ops."""

    def Allreduce(self, sendbuf, recvbuf, op):
        pass

    def Barrier(self):
        pass

    def Free(self):
        pass


def time_algorithms(MPI, comm, sizes, costs, budget=0.25, progress=None, others=None,
                    workers=None):
    """{algorithm: {size: seconds of one allreduce}}, measured: each of Open MPI's
    algorithms forced on its own communicator (tuned_communicator) over ``workers``
    (default ``comm``; MPI.COMM_NULL on a rank that only serves, a summation
    server, which sits those turns out), and each of ``others`` ({name: (a
    reducer, its predicted seconds for n bytes)}, alike on every rank of ``comm``,
    the prices needed on rank 0 only: the hierarchical allreduce, the summation
    service; freed by the caller), on float32 vectors of each size, repeated for
    about ``budget`` seconds by the model's prediction on ``costs`` (at least
    three times, after one untimed; rank 0 counts), each repeat from a barrier
    and timed by its slowest rank; the median repeat counts (a busy host's hiccup
    moves a mean). The algorithms take turns repeat by repeat, in an order that
    rotates, so that a host's slow spell or a link's state (a token bucket
    refilled by an idle spell) falls on all of them alike. ``progress()`` after
    each size."""
    workers = comm if workers is None else workers
    serving = workers == MPI.COMM_NULL
    reducers = {}
    try:
        for algorithm in ALGORITHMS:
            if serving:
                reducers[algorithm] = SitOut()
                continue
            reducer, forced = tuned_communicator(MPI, workers, algorithm)
            if not forced:
                raise HogwildError("the allreduce probe forces Open MPI's tuned algorithms; "
                                   f"this MPI is {MPI.Get_library_version().splitlines()[0]}")
            reducers[algorithm] = reducer
        others = others or {}
        everyone = {**reducers, **{name: reducer for name, (reducer, _) in others.items()}}
        predicted = None
        if comm.Get_rank() == 0:
            ranks = workers.Get_size()
            predicted = {algorithm: lambda n, a=algorithm: predict(a, ranks, n, costs)
                         for algorithm in ALGORITHMS}
            predicted.update({name: price for name, (_, price) in others.items()})
        measured = {algorithm: {} for algorithm in everyone}
        for size in sizes:
            vector = np.zeros(max(size // 4, 1), np.float32)
            repeats = comm.bcast(None if predicted is None else {
                algorithm: int(min(50, max(3, budget / max(price(vector.nbytes), 1e-6))))
                for algorithm, price in predicted.items()}, root=0)
            seconds = {algorithm: [] for algorithm in everyone}
            for reducer in everyone.values():
                reducer.Allreduce(MPI.IN_PLACE, vector, op=MPI.SUM)
            order = list(everyone)
            for k in range(max(repeats.values())):
                for algorithm in order[k % len(order):] + order[:k % len(order)]:
                    if k < repeats[algorithm]:
                        reducer = everyone[algorithm]
                        reducer.Barrier()
                        start = time.perf_counter()
                        reducer.Allreduce(MPI.IN_PLACE, vector, op=MPI.SUM)
                        seconds[algorithm].append(time.perf_counter() - start)
            for algorithm, times in seconds.items():
                times = np.asarray(times)
                slowest = np.empty_like(times)
                comm.Allreduce(times, slowest, op=MPI.MAX)
                measured[algorithm][size] = float(np.median(slowest))
            if progress is not None:
                progress()
    finally:
        for reducer in reducers.values():
            reducer.Free()
    return measured
