"""MPIBackend: one rank's side of backend "mpi" (see hogwild.backends.mpi)."""
import time

import numpy as np

from hogwild.backends.base import HostBackend
from hogwild.backends.host import aligned_copy
from hogwild.backends.mpi.exchange import Allreduce
from hogwild.backends.mpi.hierarchy import HierarchicalReducer, Nodes
from hogwild.backends.mpi.job import agree, import_mpi, job_local_size, run_fields
from hogwild.backends.mpi.probe import measure_link
from hogwild.backends.mpi.settings import LOCAL_SCHEDULERS, step_factor
from hogwild.backends.mpi.tuning import tuned_communicator
from hogwild.backends.reconcile import work_apart
from hogwild.backends.sharding import FlatLayout, node_samples, piece_plans, pieces_per_epoch, \
    run_seed
from hogwild.backends.threads import ThreadsBackend
from hogwild.collectives import LinkCosts, choose
from hogwild.errors import HogwildError
from hogwild.limits import usable_cores
from hogwild.schedulers import get_scheduler


class MPIBackend(HostBackend):
    """One rank's side of a synchronous data-parallel run: its share of the samples
    on the threads backend, an Allreduce after each piece."""

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
        self.settings, self.workers, self.epochs = config.distributed, workers, config.epochs
        self.seed = run_seed(config.seed)
        self.run_length = config.shuffle_block
        self.scheduler = get_scheduler(config.scheduler)
        self.local = ThreadsBackend.open(workers, config, source)
        self.replication = self.local.replication
        self.forced = False
        self.exchange = None
        self.nodes = self.links_by_node = self.leaders_algorithm = None  # hierarchical
        self.steps_applied = []  # (updates, step) of each piece of the last epoch

    def agree(self, config, objective):
        """Every rank's run settings equal rank 0's (run_fields): the first collective
        of a fit, so that ranks that differ fail together instead of waiting."""
        agree(self.comm, "the run", run_fields(config, objective))

    def checkpoint_settings(self, config):
        settings = config.distributed
        return {"backend": "mpi", "ranks": self.ranks, "sync_every": settings.sync_every,
                "step_scaling": settings.step_scaling,
                "warmup_epochs": settings.warmup_epochs}

    def worker_count(self, planned):
        return self.ranks * planned

    def share(self, params, data, n_samples):
        if self.ranks > n_samples:
            raise HogwildError(f"{self.ranks} ranks for {n_samples} samples: at most one "
                               "rank per sample")
        self.n, self.data = n_samples, data
        layout = FlatLayout(params, "mpi")
        self.first, self.last = node_samples(n_samples, self.ranks, self.rank)
        self.planner = self.scheduler.planner(self.last - self.first, self.workers)
        self.pieces = pieces_per_epoch(n_samples, self.ranks, self.settings.sync_every)
        flat = aligned_copy(layout.flatten(params))
        self.comm.Bcast(flat, root=0)  # every rank starts from rank 0's parameters
        params, data = self.local.share(layout.views(flat), data, n_samples)
        self.exchange = Allreduce(self.MPI, self.comm, flat, params, layout,
                                  self.settings.exchange, self.local.reload)
        return params, data

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
            self.costs = measure_link(self.MPI, self.comm, partner=self.nodes.partner)
        self.choice, self.predictions = choose(self.ranks, size, self.costs)
        if self.ranks > 1:
            if len(self.nodes.sizes) > 1 or self.settings.algorithm == "hierarchical":
                self.links_by_node = self.nodes.links(self.MPI, self.comm)
                flat = self.nodes.choose(size, *self.links_by_node)
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
        (the linear scaling rule's factor on each piece's steps)."""
        self.steps_applied = []

        def run_piece(piece):
            k = len(self.steps_applied)
            applied = steps.over(k / self.pieces, (k + 1) / self.pieces).scaled(
                step_factor(self.settings, self.ranks, self.exchange.done, self.pieces))
            done = self.local.run_epoch(loops, piece, params, data, applied, epoch)
            self.steps_applied.append((done, applied.mean))
            return done
        updates = work_apart(piece_plans(self.planner, self.n, self.ranks, self.rank,
                                         self.pieces, epoch, self.seed, self.run_length),
                             run_piece, self.exchange)
        return self.comm.allreduce(updates)

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
        last = min(self.last, n)
        mine = loops.sum_loss(params, data, self.first, last) if last > self.first else 0.0
        return self.comm.allreduce(mine)

    def stop_agreed(self, requested):
        """Whether any rank was asked to stop (every rank stops after the same epoch)."""
        return bool(self.comm.allreduce(int(requested), op=self.MPI.MAX))

    def export(self, params):
        return tuple(np.array(p) for p in params)

    def report(self):
        """The ranks, the syncs (dense or sparse), the link's measured costs and the
        allreduce algorithm with its predicted and measured time per sync."""
        exchange = self.exchange
        return {
            "ranks": self.ranks, "rank": self.rank, "threads_per_rank": self.workers,
            "sync_every": self.settings.sync_every, "syncs_per_epoch": self.pieces,
            "syncs": exchange.done, "exchange": self.settings.exchange,
            "dense": dict(exchange.traffic["dense"]),
            "sparse": dict(exchange.traffic["sparse"]),
            "step_scaling": self.settings.step_scaling,
            "warmup_epochs": self.settings.warmup_epochs,
            "message_bytes": int(exchange.flat.nbytes),
            "link": self.costs.figures(),
            "algorithm": self.algorithm,
            "algorithm_by": "model" if self.settings.algorithm == "auto" else "user",
            "algorithm_forced": self.forced, "model_choice": self.choice,
            "predicted_seconds": self.predictions,
            "predicted_sync_seconds": self.predictions.get(self.algorithm),
            "measured_sync_seconds": exchange.measured_seconds(),
            **self._hierarchy_report()}

    def _hierarchy_report(self):
        """The ranks of each node, and where they were measured, the links inside
        and between nodes and the leaders' algorithm (a hierarchical allreduce)."""
        if self.nodes is None:
            return {}
        inside, between = self.links_by_node or (None, None)
        return {"ranks_per_node": list(self.nodes.sizes),
                **({"link_inside_node": inside.figures()} if inside is not None else {}),
                **({"link_between_nodes": between.figures()} if between is not None else {}),
                **({"leaders_algorithm": self.leaders_algorithm}
                   if self.algorithm == "hierarchical" else {})}

    def close(self):
        self.local.close()
        if self.exchange is not None and self.exchange.reducer is not self.comm:
            self.exchange.reducer.Free()
            self.exchange.reducer = self.comm
