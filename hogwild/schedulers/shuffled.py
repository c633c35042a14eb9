"""hogwild, locked and serial: a fresh random order of runs each epoch."""
import numpy as np

from hogwild.schedulers.plan import EpochPlan, even_spans, shuffled_runs


class ShuffledScheduler:
    """A fresh random order of runs each epoch, cut into one span per worker
    (under one lock for the plan kind "locked")."""

    needs = ()

    def __init__(self, name, kind, single_worker):
        self.name = name
        self.kind = kind
        self.single_worker = single_worker

    def prepare(self, objective, workers):
        return self.planner(objective.n_samples, workers)

    def planner(self, n_samples, workers):
        """Plans for n_samples samples and ``workers`` workers (one for serial)."""
        return _ShuffledPlanner(n_samples, 1 if self.single_worker else workers, self.kind)


class _ShuffledPlanner:
    setup_seconds = 0.0

    def __init__(self, n_samples, workers, kind):
        self.n_samples, self.workers, self.kind = n_samples, workers, kind

    def plan(self, rng, run_length=1):
        return self.plan_pieces(rng, run_length, 1)[0]

    def plan_pieces(self, rng, run_length, pieces, first=0):
        """One epoch's random order of runs cut into ``pieces`` consecutive plans
        (a parameter-server node's clocks), each split between the workers; the
        samples are first .. first + n_samples - 1."""
        runs = shuffled_runs(self.n_samples, run_length, rng) + first
        limit = first + self.n_samples
        plans = []
        for a, b in even_spans(runs.size, pieces):
            phase = tuple(np.array([(lo, hi, limit)], np.int64)
                          for lo, hi in even_spans(b - a, self.workers))
            plans.append(EpochPlan(self.kind, runs[a:b], run_length, (phase,)))
        return plans
