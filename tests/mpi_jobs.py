"""Jobs that tests/test_mpi.py runs under mpirun: ``python tests/mpi_jobs.py CASE``.
Rank 0 prints one JSON object; every rank must reach the end (or the job fails).

    params      a small SVM with backend "mpi" (settings as JSON in argv[2], fit
                options in argv[3]; a list there gives each rank its own value); prints
                a SHA-256 of every rank's parameters, the objective and the report
    reference   the same SVM, then the synchronous averaging it should equal,
                computed here without MPI's help (over the ranks that train: the
                summation servers take no samples); prints both digests and the report
    contract    an objective of tests/reconcile_cases.py (argv[2]) with fit options
                (argv[3]); prints rank 0's parameters and the recorded steps
    summation   BytePS's summation service with 0, 1 and 2 of the job's ranks serving,
                on vectors of several lengths (shorter than the parts, too): prints
                whether every worker got the exact sum, and how 1000 elements were cut
    lose        the params case where the rank named by the option "lose_rank"
                kills itself (SIGKILL) just before its "lose_at"-th reconcile (run
                it under mpirun --with-ft ulfm); every survivor prints a JSON line
                with its rank, a SHA-256 of its parameters and its result
"""
import hashlib
import json
import os
import signal
import sys

import numpy as np

from hogwild.backends.mpi import import_mpi
from hogwild.backends.sharding import FlatLayout, node_samples, pieces_per_epoch, run_seed
from hogwild.backends.threads import ThreadsBackend
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.engine import fit
from hogwild.kernels.compiler import compile_loops
from hogwild.problems.sparse_svm import svm_objective
from hogwild.schedulers import get_scheduler
from hogwild.steps import StepSchedule

COMM = import_mpi().COMM_WORLD  # not mpi4py's import: a job of one rank would leave
# Open MPI's shared memory segment behind (see import_mpi)


def objective():
    X, y = make_sparse_classification(n_samples=3000, n_features=400, nnz_per_row=12, seed=3)
    return svm_objective(X, np.where(y > 0, 1.0, -1.0).astype(np.float32), reg=1e-3, seed=1)


def digest(params):
    return hashlib.sha256(b"".join(np.ascontiguousarray(p).tobytes() for p in params)) \
        .hexdigest()


def run(settings, **options):
    options = {"epochs": 3, "step": 0.05, "decay": 0.9, "scheduler": "serial", "seed": 7,
               "backend": "mpi", "workers": 1, "distributed": settings, **options}
    return fit(objective(), **options)


def params_case(settings, options):
    result = run(settings, **options)
    digests = COMM.gather(digest(result.params))
    if COMM.rank == 0:
        print(json.dumps({"digests": digests, "objective": result.objective,
                          "history": [r.objective for r in result.history],
                          "steps": [r.step for r in result.history],
                          "workers": result.workers, "replicated": result.replicated,
                          "distributed": result.distributed}))


def reference_case(settings):
    """Synchronous averaging by hand: each sync, every rank runs its piece of the
    epoch serially from the same state, and the state becomes
    base + (sum of the ranks' changes) * (1 / ranks), in float32."""
    result = run(settings)
    problem = objective()
    ranks, seed = COMM.size - settings.get("summation_servers", 0), 7

    loops = compile_loops(problem.update, problem.loss, problem.fastmath)
    layout = FlatLayout(problem.params, "mpi")
    state = layout.flatten(problem.params)
    schedule = StepSchedule("geometric", 0.05, 0.9)
    pieces = pieces_per_epoch(problem.n_samples, ranks, settings["sync_every"])
    serial = get_scheduler("serial")
    engine = ThreadsBackend(1)
    for epoch in range(3):
        plans = []
        for rank in range(ranks):
            first, last = node_samples(problem.n_samples, ranks, rank)
            rng = np.random.default_rng([run_seed(seed), rank, epoch])
            plans.append(serial.planner(last - first, 1).plan_pieces(rng, 1, pieces, first))
        for piece in range(pieces):
            total = np.zeros_like(state)
            for rank in range(ranks):
                replica = state.copy()
                engine.run_epoch(loops, plans[rank][piece], layout.views(replica),
                                 problem.data, schedule.epoch_steps(epoch).scaled(ranks), epoch)
                total += replica - state
            state = state + total * np.float32(1.0 / ranks)
    engine.close()
    if COMM.rank == 0:
        print(json.dumps({"mpi": digest(result.params),
                          "reference": digest(layout.views(state)),
                          "distributed": result.distributed}))


def contract_case(name, options):
    from reconcile_cases import OBJECTIVES, RUN

    result = fit(OBJECTIVES[name](), **{**RUN, "backend": "mpi", **options})
    if COMM.rank == 0:
        print(json.dumps({"params": [p.tolist() for p in result.params],
                          "steps": [r.step for r in result.history],
                          "ranks": result.distributed["ranks"]}))


def lose_case(settings, options):
    lost, at = options.pop("lose_rank"), options.pop("lose_at")
    if COMM.rank == lost:
        from hogwild.backends.mpi.exchange import Allreduce
        reconcile, calls = Allreduce.reconcile, []

        def dying(exchange):
            calls.append(1)
            if len(calls) == at:
                os.kill(os.getpid(), signal.SIGKILL)
            return reconcile(exchange)
        Allreduce.reconcile = dying
    result = run(settings, **options)
    print(json.dumps({"rank": COMM.rank, "digest": digest(result.params),
                      "objective": result.objective,
                      "updates": [r.updates for r in result.history],
                      "distributed": result.distributed}), flush=True)


def summation_case():
    from mpi4py import MPI

    from hogwild.backends.mpi import SummationService

    outcome = {}
    for servers in range(COMM.size // 2 + 1):
        service = SummationService(MPI, COMM, servers)
        workers = COMM.size - servers
        outcome[f"{servers} servers, parts of 1000"] = service.bounds(1000).tolist()
        for count in (1, 2, 5, 1000, 4099, 400_003):  # the last in several chunks
            for _ in range(2):  # a second sum reuses the buffers
                vector = (np.arange(count, dtype=np.float32) % 97 + COMM.rank * 1000
                          if COMM.rank < workers else np.full(count, np.nan, np.float32))
                service.Allreduce(MPI.IN_PLACE, vector, op=MPI.SUM)
            exact = (np.arange(count) % 97 * workers + 1000 * workers * (workers - 1) // 2)
            sums = COMM.gather(vector if COMM.rank < workers else None, root=0)
            if COMM.rank == 0:
                sums = [s for s in sums if s is not None]
                outcome[f"{servers} servers, {count}"] = bool(
                    len(sums) == workers and all(np.array_equal(s, exact) for s in sums))
        service.Free()
    if COMM.rank == 0:
        print(json.dumps(outcome))


def this_ranks(fields):
    """The fields with each list replaced by this rank's item of it."""
    return {name: value[COMM.rank] if isinstance(value, list) else value
            for name, value in fields.items()}


if __name__ == "__main__":
    case = sys.argv[1]
    if case == "contract":
        contract_case(sys.argv[2], json.loads(sys.argv[3]))
        raise SystemExit(0)
    if case == "summation":
        summation_case()
        raise SystemExit(0)
    settings = this_ranks(json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
    options = this_ranks(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
    if case == "params":
        params_case(settings, options)
    elif case == "reference":
        reference_case(settings)
    elif case == "lose":
        lose_case(settings, options)
    else:
        raise SystemExit(f"unknown case {case!r}")
