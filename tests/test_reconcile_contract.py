"""One contract for the three ways of working apart and reconciling
(hogwild.backends.reconcile): replica merges in shared memory (backend
"threads", replication "worker"), the MPI ranks' allreduce (backend "mpi", real
jobs under mpirun) and the Ray nodes' parameter server (backend "ray", bulk
synchronous). Each path runs the same objectives with the same interval: 100
updates of a party between reconciles.

- No update lost where the parties' samples touch disjoint coordinates: each
  coordinate ends at the sum of its sample's steps, exactly (sums of 0.25, 0.125
  and 0.0625 are exact in float32).
- One party is bitwise the serial run of its pieces.
- The step each epoch record keeps is the step the workers applied, read back
  from the parameters: a coordinate one party changed moves by the applied step
  times the reconcile's weight of one party's change (1 for a replica merge and a
  push; 1/ranks for the allreduce, which averages, with the linear scaling rule's
  step of ranks times the schedule's).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from hogwild import fit
from launchers import MPIRUN, mpirun
from reconcile_cases import OBJECTIVES, RUN, SAMPLES, serial_run_of_pieces

EVERY = 100  # updates of a party between reconciles, on every path
PATHS = ["replicas", "mpi", "ray"]
JOBS = str(Path(__file__).with_name("mpi_jobs.py"))


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="backend 'ray' needs Ray (hogwild[distributed])")
    from hogwild.backends.ray import start_local_ray

    instance = start_local_ray(ray, 2)
    yield
    instance.close()


def run(path, request, name, parties, **options):
    """(params, recorded steps) of the objective ``name`` on ``path`` with
    ``parties`` workers, ranks or nodes, reconciling every EVERY updates."""
    if path == "replicas":
        result = fit(OBJECTIVES[name](), **RUN, workers=parties, replication="worker",
                     merge_every=EVERY, **options)
        return result.params, [r.step for r in result.history]
    if path == "ray":
        request.getfixturevalue("local_ray")
        result = fit(OBJECTIVES[name](), **RUN, backend="ray", scheduler="serial",
                     distributed={"nodes": parties, "staleness": 0, "clock_every": EVERY})
        return result.params, [r.step for r in result.history]
    pytest.importorskip("mpi4py", reason="backend 'mpi' needs mpi4py (hogwild[mpi])")
    if MPIRUN is None:
        pytest.skip("backend 'mpi' needs mpirun (pip install 'hogwild[mpi]' brings Open MPI's)")
    settings = {"sync_every": EVERY, **options.pop("distributed", {})}
    done = mpirun(parties, [sys.executable, JOBS, "contract", name, json.dumps(
        {"scheduler": "serial", "workers": 1, "distributed": settings, **options})])
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ranks"] == parties
    return tuple(np.asarray(p, np.float32) for p in report["params"]), report["steps"]


@pytest.mark.parametrize("path", PATHS)
def test_no_update_is_lost_where_the_parties_touch_disjoint_coordinates(path, request):
    (counts,), _ = run(path, request, "counting", 2)
    steps = RUN["step"] * RUN["decay"] ** np.arange(RUN["epochs"])
    np.testing.assert_array_equal(counts, np.full(SAMPLES, steps.sum(), np.float32))


@pytest.mark.parametrize("path", PATHS)
def test_one_party_is_bitwise_the_serial_run_of_its_pieces(path, request):
    params, _ = run(path, request, "svm", 1)
    if path == "replicas":  # its pieces: the engine's plan, cut every EVERY updates
        reference = fit(OBJECTIVES["svm"](), **RUN, workers=1, replication="shared").params
    else:  # the cutter's (hogwild.backends.sharding) for one rank or node
        reference = serial_run_of_pieces(OBJECTIVES["svm"](), EVERY)
    for ours, theirs in zip(params, reference):
        assert np.array_equal(ours, theirs)
    assert not np.array_equal(params[0], OBJECTIVES["svm"]().params[0])  # it trained


@pytest.mark.parametrize("path", PATHS)
def test_the_recorded_step_is_the_step_the_parties_applied(path, request):
    """With MPI's warm-up (linear over the first epoch) the step changes between
    the pieces of an epoch: the record keeps its mean over the epoch's updates."""
    options = {"distributed": {"warmup_epochs": 1}} if path == "mpi" else {}
    (counts,), steps = run(path, request, "counting", 2, **options)
    weight = {"replicas": 1.0, "mpi": 1.0 / 2, "ray": 1.0}[path]
    schedule = RUN["step"] * RUN["decay"] ** np.arange(RUN["epochs"])
    assert len(steps) == RUN["epochs"]
    np.testing.assert_allclose(counts.mean(), weight * np.sum(steps), rtol=1e-6)
    if path == "mpi":  # the linear scaling rule: twice the schedule once warmed up
        assert steps[0] < 2 * schedule[0] and steps[1:] == pytest.approx(2 * schedule[1:])
    else:
        assert steps == pytest.approx(schedule)
