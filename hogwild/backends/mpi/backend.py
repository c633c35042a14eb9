"""MPIBackend: one rank's side of backend "mpi" (see hogwild.backends.mpi)."""
import math
import sys
import time

import numpy as np

from hogwild.backends.base import HostBackend
from hogwild.backends.host import aligned_copy
from hogwild.backends.mpi.exchange import Allreduce
from hogwild.backends.mpi.hierarchy import HierarchicalReducer, Nodes
from hogwild.backends.mpi.job import agree, import_mpi, job_local_size, run_fields, survived
from hogwild.backends.mpi.probe import measure_link, probe_sizes_for
from hogwild.backends.mpi.settings import LOCAL_SCHEDULERS, check_summation_servers, \
    step_factor
from hogwild.backends.mpi.summation import SummationService
from hogwild.backends.mpi.survival import lost_line, rank_lost, shrink, world_ranks
from hogwild.backends.mpi.tuning import tuned_communicator
from hogwild.backends.sharding import (FlatLayout, job_mean_times, node_samples, own_shares,
                                      piece_plans, pieces_per_epoch, run_seed)
from hogwild.backends.threads import ThreadsBackend
from hogwild.cluster_costs import summation_service
from hogwild.collectives import LinkCosts, choose
from hogwild.errors import HogwildError
from hogwild.limits import usable_cores
from hogwild.schedulers import get_scheduler


class _PieceLost(Exception):
    """A rank was lost before the piece's reconcile completed anywhere: the
    survivors run the rest of the epoch again, re-split among them."""


class MPIBackend(HostBackend):
    """One rank's side of a synchronous data-parallel run: its share of the samples
    on the threads backend, an Allreduce after each piece. Under ULFM it survives
    lost ranks (_survive). With summation servers, the job's last ranks take no
    samples: they run the same pieces with nothing to train, and add up a part of
    the others' changes at each sync (hogwild.backends.mpi.summation)."""

    name = "mpi"
    schedulers = LOCAL_SCHEDULERS
    replication_modes = ThreadsBackend.replication_modes
    plans_itself = True

    @classmethod
    def requested_workers(cls, config):
        """Threads per rank: the usable cores shared among this machine's ranks (as
        the launcher counts them, known before MPI starts)."""
        return config.workers if config.workers is not None \
            else max(1, usable_cores() // job_local_size())

    @classmethod
    def open(cls, workers, config, source):
        return cls(workers, config, source)

    def __init__(self, workers, config, source):
        """Starts MPI (import_mpi) and the rank's threads."""
        self.MPI = MPI = import_mpi()
        self.comm = MPI.COMM_WORLD
        self.rank, self.ranks = self.comm.Get_rank(), self.comm.Get_size()
        self.reports = self.rank == 0
        self.measures_everywhere = True  # any survivor may become the chief
        self.settings, self.workers, self.epochs = config.distributed, workers, config.epochs
        self.servers = self.settings.summation_servers
        check_summation_servers(self.servers, self.ranks)
        self.first_server = self.trainers  # the world rank of the first summation server
        self.seed = run_seed(config.seed)
        self.run_length = config.shuffle_block
        self.scheduler = get_scheduler(config.scheduler)
        self.local = ThreadsBackend.open(workers, config, source)
        self.replication = self.local.replication
        self.forced = False
        self.exchange = None
        self.nodes = self.links_by_node = self.leaders_algorithm = None  # hierarchical
        self.steps_applied = []  # (updates, step) of each piece of the last epoch
        self.world = list(range(self.ranks))  # the world rank of each of comm's ranks
        self.ranks_at_start, self.lost = self.ranks, []  # a record per lost rank
        self.completed = 0  # collectives this rank completed since the first epoch
        self.last_result = None  # the last one's result (see _collective)
        self.epoch, self.epoch_done = 0, 1.0  # the epoch and its fraction reconciled
        self.began = time.perf_counter()

    @property
    def trainers(self):
        """The ranks that take samples: all but the summation servers."""
        return self.ranks - self.servers

    @property
    def serves(self):
        """Whether this rank is a summation server (no samples; it only adds)."""
        return self.rank >= self.trainers

    def agree(self, config, objective):
        """Every rank's run settings equal rank 0's (run_fields): the first collective
        of a fit, so that ranks that differ fail together instead of waiting."""
        agree(self.comm, "the run", run_fields(config, objective))

    def checkpoint_settings(self, config):
        settings = config.distributed
        return {"backend": "mpi", "ranks": self.ranks, "sync_every": settings.sync_every,
                "step_scaling": settings.step_scaling,
                "warmup_epochs": settings.warmup_epochs,
                "summation_servers": self.servers}

    def worker_count(self, planned):
        return self.trainers * planned

    def share(self, params, data, n_samples):
        self.own = self.settings.samples == "own"  # (then every sample it holds is its share)
        self.shares = self.own and own_shares(self.comm, n_samples)
        if not self.own and self.trainers > n_samples:
            training = " that train" if self.servers else ""
            raise HogwildError(f"{self.trainers} ranks{training} for {n_samples} samples: at "
                               "most one rank per sample")
        self.n, self.data = n_samples, data
        layout = FlatLayout(params, "mpi")
        self._split()
        flat = aligned_copy(layout.flatten(params))
        self.comm.Bcast(flat, root=0)  # every rank starts from rank 0's parameters
        params, data = self.local.share(layout.views(flat), data, n_samples)
        self.exchange = Allreduce(self.MPI, self.comm, flat, params, layout,
                                  self.settings.exchange, self.local.reload, self.servers)
        return params, data

    def _split(self):
        """This rank's share of the samples, its planner and the pieces of an epoch,
        for the ranks there are (again after a rank was lost); a summation server's
        share is empty."""
        if self.serves:
            self.first = self.last = self.n
            self.planner = None
        else:
            self.first, self.last = (0, self.n) if self.own else \
                node_samples(self.n, self.trainers, self.rank)
            self.planner = self.scheduler.planner(self.last - self.first, self.workers)
        self.pieces = pieces_per_epoch(max(self.shares[r] for r in self.world), 1,
                                       self.settings.sync_every) if self.own else \
            pieces_per_epoch(self.n, self.trainers, self.settings.sync_every)

    def replicated(self):
        return self.local.replicated()

    def warm_up(self, loops, params, data, scheduler, objective):
        """Compile (or load) the local loops and the exchange, measure the link and
        pick the allreduce algorithm."""
        began = time.perf_counter()
        self.local.warm_up(loops, params, data, scheduler, objective)
        self.exchange.warm_up()
        size = self.exchange.flat.nbytes
        self.costs, leaders_algorithm = LinkCosts(0, 0, 0), None
        if self.ranks > 1:
            self.nodes = Nodes.of(self.MPI, self.comm)
            sizes = probe_sizes_for(size, self.settings.algorithm)
            self.costs = measure_link(self.MPI, self.comm, sizes, partner=self.nodes.partner)
        self.choice, self.predictions = choose(self.ranks, size, self.costs)
        if self.servers:
            self.predictions["summation_service"] = summation_service(
                self.trainers, self.servers, size, self.costs)
            self.algorithm = self.choice = "summation_service"
            self.nodes.free(self.MPI)
            self.exchange.reducer = SummationService(self.MPI, self.comm, self.servers)
            self.startup_seconds = time.perf_counter() - began
            return
        if self.ranks > 1:
            if len(self.nodes.sizes) > 1 or self.settings.algorithm == "hierarchical":
                self.links_by_node = self.nodes.links(self.MPI, self.comm, sizes)
                flat = self.nodes.choose(size, *self.links_by_node, self.costs)
                if flat is not None:  # rounds between nodes at the link between them
                    self.choice, self.predictions = flat
                seconds, leaders_algorithm = self.nodes.predict(size, *self.links_by_node)
                if seconds is not None and len(self.nodes.sizes) > 1:  # else no network
                    self.predictions["hierarchical"] = seconds
                    self.choice = min(self.predictions, key=self.predictions.get)
        self.algorithm = self.choice if self.settings.algorithm == "auto" \
            else self.settings.algorithm
        if self.algorithm == "hierarchical":
            self.leaders_algorithm = leaders_algorithm
            reducer = HierarchicalReducer(self.MPI, self.nodes, leaders_algorithm)
            self.exchange.reducer, self.forced = reducer, reducer.forced
        elif self.ranks > 1:
            self.nodes.free(self.MPI)
            self.exchange.reducer, self.forced = tuned_communicator(self.MPI, self.comm,
                                                                    self.algorithm)
        self.startup_seconds = time.perf_counter() - began

    def run_epoch(self, loops, plan, params, data, steps, epoch):
        """The rank's share of the epoch in ``pieces`` pieces, an Allreduce after each
        (the linear scaling rule's factor on each piece's steps). The epoch's
        updates: every rank's, as the reconciles counted them. After a lost rank,
        the rest of the epoch (the fraction not reconciled) is re-split among the
        survivors, from a new plan."""
        self.steps_applied, self.epoch, self.epoch_done = [], epoch, 0.0
        before = self.exchange.updates
        while self.epoch_done < 1.0:
            try:
                if self._run_pieces(loops, params, data, steps, epoch) < 0:
                    return -1  # aborted
            except _PieceLost:
                continue
        return self.exchange.updates - before

    def _run_pieces(self, loops, params, data, steps, epoch):
        """The epoch's pieces from the first not reconciled (on the ranks there are
        now); the local run's -1 when it was aborted."""
        ranks, pieces = self.ranks, self.pieces
        plans = None if self.serves else piece_plans(
            self.planner, self.n, self.trainers, self.rank, pieces, epoch, self.seed,
            self.run_length, first=self.first)
        for k in range(min(round(self.epoch_done * pieces), pieces), pieces):
            applied = steps.over(k / pieces, (k + 1) / pieces).scaled(
                step_factor(self.settings, self.trainers, self.exchange.done, pieces))
            done = 0 if plans is None else self.local.run_epoch(loops, plans[k], params, data,
                                                                applied, epoch)
            if done < 0:
                return done
            self.exchange.pending = done
            self._collective(self.exchange.reconcile, redo=True)
            self.steps_applied.append((done, applied.mean))
            self.epoch_done = (k + 1) / pieces
            if self.ranks != ranks:  # this rank lagged in a lost rank's reconcile and took
                raise _PieceLost    # its result: the rest on the survivors' plan, as theirs
        self.epoch_done = 1.0
        return 0

    def applied_step(self, steps):
        """The schedule's step times the linear scaling rule's factor: the mean over
        the epoch's updates where a warm-up changed it between pieces (every rank
        applies the same factors)."""
        total = sum(done for done, _ in self.steps_applied)
        if total == 0:
            return self.steps_applied[-1][1] if self.steps_applied else steps.mean
        return sum(done * applied for done, applied in self.steps_applied) / total

    def loss_sum(self, loops, params, data, n):
        """The training data's: every rank's loss over its share, summed over the
        ranks. Any other data's (a metric's, on rank 0): on this rank alone."""
        if data is not self.data:
            return super().loss_sum(loops, params, data, n)
        def summed():  # on the share this rank has now (again after a lost rank)
            last = min(self.last, n)
            mine = loops.sum_loss(params, data, self.first, last) if last > self.first else 0.0
            return job_mean_times(self.comm, mine, max(last - self.first, 0), n) if self.own \
                else self.comm.allreduce(mine)
        return self._collective(summed)

    def stop_agreed(self, requested):
        """Whether any rank was asked to stop (every rank stops after the same epoch)."""
        return bool(self._collective(lambda: self.comm.allreduce(int(requested),
                                                                 op=self.MPI.MAX)))

    def _collective(self, run, redo=False):
        """``run()``, a collective on ``comm`` from the first epoch on, counted. Where
        it fails because a rank was lost, the survivors shrink (_survive): a rank
        that lagged takes the result of the ranks that completed it, the others run
        it again on the survivors, or with ``redo`` raise _PieceLost (the piece's
        local work must be done again from the reconciled state)."""
        while True:
            try:
                result = run()
                break
            except self.MPI.Exception as error:
                if not rank_lost(self.MPI, error):
                    raise
                completed_elsewhere = self._survive()
                if completed_elsewhere is not None:
                    (result,) = completed_elsewhere
                    break
                if redo:
                    raise _PieceLost from None
        self.completed += 1
        self.last_result = result
        return result

    def _survive(self):
        """Go on without the ranks that died: shrink to the survivors, then take the
        state of the most advanced rank that trains (the one that completed most
        collectives, the lowest such), who sends its reconciled parameters, sync and
        update counts, epoch and last result; a collective can complete on some
        ranks and fail on others, never more than one apart (a summation server,
        whose parameters are not kept, may be ahead: it goes back). The shares,
        pieces and the allreduce's communicator are made again for the survivors;
        the lowest survivor becomes the chief (it reports and writes checkpoints).
        Returns (the last result) where this rank lagged behind, else None. A rank
        lost meanwhile: again."""
        MPI, exchange, before = self.MPI, self.exchange, self.world
        while True:
            try:
                survivors = shrink(MPI, self.comm, () if exchange.reducer is self.comm
                                   else (exchange.reducer,))
                self.comm = exchange.reducer = survivors
                self.world = world_ranks(MPI, survivors)
                servers = sum(rank >= self.first_server for rank in self.world)
                if servers == len(self.world):
                    raise HogwildError("every rank that trained was lost; the summation "
                                       "servers cannot go on alone")
                positions = survivors.allgather(self.completed)[:len(self.world) - servers]
                source = positions.index(max(positions))
                survivors.Bcast(exchange.base, root=source)
                done, updates, epoch, result = survivors.bcast(
                    (exchange.done, exchange.updates, self.epoch, self.last_result), root=source)
                self.rank, self.ranks = survivors.Get_rank(), survivors.Get_size()
                self.servers = servers
                reducer = self._survivors_reducer(survivors)
                break
            except MPI.Exception as error:
                if not rank_lost(MPI, error):
                    raise
        trained = sum(rank < self.first_server for rank in before)
        unfinished = math.ceil(self.n / trained / self.pieces)  # (before _split)
        lost = [{"rank": rank, "epoch": epoch + 1, "after_syncs": done,
                 **({"summation_server": True} if rank >= self.first_server else {}),
                 "seconds": round(time.perf_counter() - self.began, 3),
                 **({"samples_lost": self.shares[rank]} if self.own else
                    {"unfinished_piece_samples": unfinished})}
                for rank in before if rank not in self.world]
        self.lost += lost
        self.nodes = self.links_by_node = self.leaders_algorithm = None  # as they were
        self.reports = self.rank == 0
        survived(MPI, survivors, self.reports)
        exchange.done, exchange.updates, exchange.pending = done, updates, 0
        exchange.use(survivors, reducer, self.servers)
        self._split()
        for record in lost if self.reports else ():
            print(lost_line(record, done, self.trainers, reducer, self.algorithm),
                  file=sys.stderr, flush=True)
        if self.completed < max(positions):
            return (result,)
        self.completed = max(positions)  # a summation server that was ahead goes back
        return None

    def _survivors_reducer(self, comm):
        """The reducer of the survivors' allreduce: the summation service of the
        servers left (at most as many as the ranks that train; the others add
        zeros as if they trained), else the algorithm asked for, else (auto, or a
        hierarchical one: the nodes changed) the model's flat choice on the link
        measured at the start."""
        if self.servers and self.trainers >= 2:
            self.algorithm = "summation_service"
            return SummationService(self.MPI, comm, min(self.servers, self.trainers))
        if self.settings.algorithm not in ("auto", "hierarchical"):
            self.algorithm = self.settings.algorithm
        else:
            self.choice, self.predictions = choose(comm.Get_size(), self.exchange.flat.nbytes,
                                                   self.costs)
            self.algorithm = self.choice
        if comm.Get_size() == 1:
            return comm
        reducer, self.forced = tuned_communicator(self.MPI, comm, self.algorithm)
        return reducer

    def export(self, params):
        return tuple(np.array(p) for p in params)

    def report(self):
        """The ranks, the syncs (dense or sparse), the link's measured costs and the
        allreduce algorithm with its predicted and measured time per sync; where
        ranks were lost, which and when (``ranks`` are the survivors)."""
        exchange = self.exchange
        measured = self._collective(exchange.measured_seconds)
        return {
            "ranks": self.ranks, "rank": self.rank, "threads_per_rank": self.workers,
            **({"summation_servers": self.servers, "ranks_that_train": self.trainers}
               if self.servers else {}),
            **({"ranks_at_start": self.ranks_at_start, "lost_ranks": self.lost}
               if self.lost else {}),
            **({"samples": "own", "samples_by_rank": [self.shares[r] for r in self.world]}
               if self.own else {}),
            "sync_every": self.settings.sync_every, "syncs_per_epoch": self.pieces,
            "syncs": exchange.done, "exchange": self.settings.exchange,
            "dense": dict(exchange.traffic["dense"]),
            "sparse": dict(exchange.traffic["sparse"]),
            "step_scaling": self.settings.step_scaling,
            "warmup_epochs": self.settings.warmup_epochs,
            "message_bytes": int(exchange.flat.nbytes),
            "link": self.costs.figures(),
            "algorithm": self.algorithm,
            "algorithm_by": "model" if self.settings.algorithm == "auto" and not self.servers
            else "user",
            "algorithm_forced": self.forced, "model_choice": self.choice,
            "predicted_seconds": self.predictions,
            "predicted_sync_seconds": self.predictions.get(self.algorithm),
            "measured_sync_seconds": measured,
            **(self.nodes.report(self.links_by_node, self.algorithm == "hierarchical",
                                 self.leaders_algorithm) if self.nodes is not None else {})}

    def close(self):
        self.local.close()
        if self.exchange is not None and self.exchange.reducer is not self.comm:
            self.exchange.reducer.Free()
            self.exchange.reducer = self.comm
