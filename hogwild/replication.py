"""Model replication's modes, merge rules, defaults and the "auto" policy: one
place, below the configuration and the backends (which build the copies and
merge them: hogwild.backends.replicas).

    shared  Hogwild!: every worker writes the one parameter copy
    worker  each worker its own copy of every parameter array (DimmWitted's
            per-core replication, Zhang and Re, VLDB 2014)
    hot     each worker its own copies of the hot rows alone: rows whose id is in
            more than ``hot_fraction`` of the samples, found from the objective's
            IdArrays; the rest shared (HogWild++'s idea, Zhang, Hsieh and Akella,
            ICDM 2016, at row granularity)
    auto    the CPU backends choose (see choose), and say why in
            FitResult.replicated

Copies merge every ``merge_every`` updates of a worker (default: once an epoch
for "worker", every HOT_MERGE_EVERY updates for "hot") and at each epoch's end,
by the ``merge`` rule: "mean" or "sum" of the workers' changes on a coordinate
several changed, or "mixed" (the mean on hot rows, the sum on the rest).
"""
import statistics
from dataclasses import dataclass
from typing import Optional

import numpy as np

from hogwild.disk_arrays import occurrences
from hogwild.errors import HogwildError
from hogwild.limits import available_memory, size_text

REPLICATION_MODES = ("shared", "worker", "hot", "auto")
MERGE_RULES = ("mean", "sum", "mixed")
# replication="hot" merges this often by default: its merges pass over only the
# hot rows, so they can be frequent (fresher hot coordinates) and still cheap.
HOT_MERGE_EVERY = 4096

# replication="auto" replicates only when the probe measures it at least this much
# faster than sharing: below, the difference is within the probe's noise here.
AUTO_MARGIN = 1.1
PROBE_SAMPLES = 32_768  # per worker and probe epoch
PROBE_ROUNDS = 3  # timed probe epochs per visit of a mode; the median counts
PROBE_VISITS = 2  # visits of each mode, alternating
HOT_SHARE_WORTH_PROBING = 0.05  # of the ids: fewer on hot rows, sharing is cheap
# "auto"'s guard measures the objective on the first this many samples (the rows are
# in random order: an estimate of the whole objective, the same samples every epoch)
GUARD_SAMPLES = 1 << 16
GUARD_MEMORY_SHARE = 0.25  # the most of the available memory its copy may take
# "auto" probes only when the probe's updates are at most this share of the run's;
# a shorter run stays shared (see choose): on imdb's 20 epochs the probe would be
# three times the training
PROBE_SHARE = 0.1
# "hot" gives each worker its own copy of the id arrays (their ids of hot rows made
# its replicas'): "auto" leaves a run shared where those copies would take more than
# this share of the memory available (a click log's nonzeros, once per worker)
HOT_COPIES_MEMORY_SHARE = 0.125


def check(replication, scheduler_name, scheduler_kind):
    """The rule between replication and the scheduler: copies are for lock-free
    plans (a scheduler whose plans are spans: hogwild, serial)."""
    if replication not in ("shared", "auto") and scheduler_kind != "spans":
        raise HogwildError(f"replication={replication!r} runs lock-free plans "
                           f"(scheduler hogwild or serial); scheduler "
                           f"{scheduler_name!r} keeps its workers apart already")


@dataclass(frozen=True)
class ReplicationSettings:
    """A run's replication as the CPU backends keep it: TrainingConfig's, with
    "auto" resolved to ``mode`` (``chosen`` says how) and the objective's id
    arrays."""

    mode: str = "shared"
    merge_every: Optional[int] = None
    merge: str = "mean"
    hot_fraction: float = 0.01
    id_arrays: tuple = ()
    chosen: Optional[dict] = None

    @classmethod
    def for_run(cls, config, objective, mode, chosen=None, merge=None):
        """The settings of a run in ``mode``, merging by ``merge`` (None: the
        config's), or a HogwildError where the objective lacks what the mode or
        merge rule needs."""
        merge = merge or config.merge
        if merge == "mixed" and mode != "shared" and not objective.id_arrays:
            raise HogwildError(f"merge 'mixed' needs the objective's id arrays to tell hot "
                               f"rows from cold ones, and objective '{objective.name}' "
                               "declares none (Objective.id_arrays); use merge 'mean' or 'sum'")
        if mode == "hot" and not objective.id_arrays:
            raise HogwildError(f"replication 'hot' needs the objective's id arrays, and "
                               f"objective '{objective.name}' declares none "
                               "(Objective.id_arrays); use replication 'worker'")
        return cls(mode, config.merge_every, merge, config.hot_fraction,
                   objective.id_arrays, chosen)

    def interval(self, n_samples):
        """Updates of a worker between merges."""
        return self.merge_every or (HOT_MERGE_EVERY if self.mode == "hot" else n_samples)

    def report(self, replicas, n_samples, fell_back=None):
        """FitResult.replicated: what was copied and how it merged, and what "auto"
        chose (None: nothing copied, nothing chosen) and, where its Guard found an
        epoch on copies worse than the one before, when and why it went on shared."""
        auto = {} if self.chosen is None else {
            "auto": {**self.chosen, **({"fell_back": fell_back} if fell_back else {})}}
        if replicas is None:
            return auto or None
        return {**replicas.describe(self.merge, self.interval(n_samples)), **auto}


def resolve(config, objective, workers, scheduler_kind, measure):
    """The ReplicationSettings of a run on a CPU backend, "auto" decided by choose."""
    mode, chosen, merge = config.replication, None, None
    if mode == "auto":
        mode, merge, chosen = choose(objective, workers, config, scheduler_kind, measure)
    return ReplicationSettings.for_run(config, objective, mode, chosen, merge)


# "auto"'s candidates: (mode, merge rule; None: the config's). With id arrays,
# "hot" (frequent merges of the hot rows only keep shared's statistics). Whole
# copies merged "mixed" were one too until issue 42: their probe rate was up to 1.2x
# shared's on imdb, but averaging the hot rows' changes once a share costs progress
# that a rate does not show (see choose). Without id arrays, "worker" merged by
# the config's rule.
AUTO_CANDIDATES = {"hot": ("hot", None)}


def candidates(objective):
    """{name: (mode, merge)} that replication="auto" probes against "shared"."""
    return dict(AUTO_CANDIDATES) if objective.id_arrays else {"worker": ("worker", None)}


def choose(objective, workers, config, scheduler_kind, measure):
    """replication="auto": (mode, merge rule or None, why). "shared" with one
    worker, with a scheduler that keeps workers apart, in a run too short for a
    probe (PROBE_SHARE), or when under HOT_SHARE_WORTH_PROBING of the ids fall on
    hot rows; else ``measure(candidates)``
    (the backend's probe: {name: [updates/s of each timed probe epoch]} of "shared"
    and each candidate, PROBE_VISITS alternating visits, PROBE_ROUNDS epochs of
    PROBE_SAMPLES samples per worker each) and the fastest by median, replication
    needing AUTO_MARGIN over "shared". (With fixed steps, imdb's SVM at 2 workers
    ran "worker" merged "mixed" at 1.6-1.8x the shared rate, "hot" at 1.2-1.5x.)

    A run too short for a probe stays shared: copies must earn their place by
    measurement. Whole copies merged "mixed" (the short run's rule from issue 31 to
    42) lose progress that no rate shows: each merge averages the hot rows'
    changes. At 2 workers here with AdaGrad steps, 20 epochs, interleaved rounds:
    imdb's copies ran 1.2x the shared update rate, but the objective after epoch 1
    was 0.445 against 0.329 and came within 0.2% of one worker's final in 1 round of
    5 (shared in every round, as soon as one worker did); news20 at the same rate,
    0.363 against 0.191, in no round; a 10^6-row click log 0.630 against 0.496 after
    epoch 1, and at 4 workers on 16 cores 22.53% test error after 5 epochs against
    one worker's 22.26%. "hot" stayed within 0.25% of shared's final objective."""
    if workers == 1:
        return "shared", None, {"chose": "shared", "why": "one worker"}
    if scheduler_kind != "spans":
        return "shared", None, {"chose": "shared", "why": f"scheduler {config.scheduler!r} "
                                                         "keeps its workers apart"}
    options = candidates(objective)
    probe_updates = PROBE_SAMPLES * workers * (PROBE_ROUNDS + 1) * PROBE_VISITS \
        * (1 + len(options))
    if probe_updates > PROBE_SHARE * objective.n_samples * config.epochs:
        # decided before hot_share's pass over every id, which it would not use
        return "shared", None, {"chose": "shared", "why": "a short run: shared, copies "
                                                         "need a probe"}
    why = {}
    if objective.id_arrays:
        copies, memory = workers * id_bytes(objective), available_memory()
        if memory is not None and copies > HOT_COPIES_MEMORY_SHARE * memory:
            return "shared", None, {"chose": "shared", "why": f"copies of the ids for each "
                                    f"worker would take {size_text(copies)} of the "
                                    f"{size_text(memory)} of memory available"}
        share = hot_share(objective, config.hot_fraction)
        why["ids_on_hot_rows"] = round(share, 4)
        if share < HOT_SHARE_WORTH_PROBING:
            return "shared", None, {"chose": "shared", "why": f"{share:.1%} of the ids are on "
                                                             "hot rows: sharing costs little",
                                    **why}
    rates = {name: statistics.median(values) for name, values in measure(options).items()}
    best = max(options, key=rates.get)
    chosen = best if rates[best] >= AUTO_MARGIN * rates["shared"] else "shared"
    ratio = rates[best] / rates["shared"] if rates["shared"] > 0 else float("inf")
    verdict = f"{best} {ratio:.2f}x shared's rate" if chosen == best else \
        f"none {AUTO_MARGIN}x shared's rate (best {best} {ratio:.2f}x)"
    mode, merge = options.get(chosen, ("shared", None))
    return mode, merge, {"chose": mode, **({"merge": merge} if merge else {}),
                         "why": f"probe: {verdict}",
                         "probe_updates_per_s": {k: round(v) for k, v in rates.items()},
                         **why}


class Guard:
    """replication="auto"'s promise that copies never make a run worse than sharing
    would: after each epoch on copies the objective on the first ``samples``
    samples must not have risen. If it has (merged copies can overshoot: on a
    power-law click log "worker" merged "mixed" took the objective from 1.04 to 1.29
    in 10 epochs, summing two workers' pushes on features both saw), the engine
    restores the parameters from before the epoch and runs it again shared, and the
    rest of the run stays shared; the reason goes to FitResult.replicated["auto"]
    ["fell_back"]. The engine keeps a copy of the parameters for that, where they
    take at most GUARD_MEMORY_SHARE of the memory available (``keeps``); a larger
    model goes on shared from the epoch's result instead."""

    def __init__(self, samples, value, params, keeps=True):
        self.samples, self.last = samples, value
        self.saved = tuple(np.empty_like(p) for p in params) if keeps else None
        self.fell_back = None

    def keep(self, params):
        """The parameters at an epoch's start, to go back to (where it keeps them)."""
        for saved, p in zip(self.saved or (), params):
            np.copyto(saved, p)

    def rose(self, value, epoch):
        """Whether the objective ``value`` after ``epoch`` (1-based) rose; if so, the
        reason is kept in fell_back and the parameters should be restored."""
        if value <= self.last:
            self.last = value
            return False
        again = "the epoch ran again shared" if self.saved is not None else \
            "shared from the next epoch (the model is too large to keep a copy)"
        self.fell_back = {"epoch": epoch, "why": f"the objective on {self.samples:,} samples "
                                                 f"rose from {self.last:.6g} to {value:.6g} "
                                                 f"on copies: {again}"}
        return True

    def restore(self, params):
        """Back to the epoch's start; False where no copy was kept."""
        for saved, p in zip(self.saved or (), params):
            np.copyto(p, saved)
        return self.saved is not None


def row_counts(group, params, data):
    """How often each row of a group's arrays is named by its id arrays (checked:
    the arrays one id indexes have as many rows, and the ids are in range)."""
    members = sorted({p for ids in group for p in ids.params})
    rows = params[members[0]].shape[0] if params[members[0]].ndim else 0
    for kind, arrays, indices in (("params", params, members),
                                  ("data", data, sorted({d for ids in group
                                                         for d in ids.data}))):
        for i in indices:
            if arrays[i].ndim == 0 or arrays[i].shape[0] != rows:
                raise HogwildError(f"{kind}[{i}] has {arrays[i].shape[:1]} rows; the "
                                   f"arrays one id indexes need {rows}")
    counts = np.zeros(rows, np.int64)
    for ids in group:  # in 0..rows-1: checked when the Objective was made
        counts += occurrences(data[ids.ids], rows)
    return counts


def hot_rows(counts, hot_fraction, n_samples):
    """Which rows are hot: named by more than ``hot_fraction`` of the samples (counts
    from row_counts)."""
    return counts > hot_fraction * n_samples


def id_bytes(objective):
    """The bytes of the objective's id arrays (each counted once)."""
    return sum(objective.data[i].nbytes for i in {ids.ids for ids in objective.id_arrays})


def probe_data(objective, count):
    """The objective's data with each id array cut to the ids its first ``count``
    samples name (a probe visits no other, and "hot" copies the id arrays for each
    worker: a click log's whole nonzeros where a probe needs a few MB). An id
    array is cut where it is surely per sample or, with sample_offsets, surely per
    nonzero; one that could be either stays whole."""
    data, n = list(objective.data), objective.n_samples
    offsets = objective.sample_offsets
    total = int(data[offsets][-1]) if offsets is not None else None
    for i in {ids.ids for ids in objective.id_arrays}:
        length = data[i].shape[0] if data[i].ndim else None
        if offsets is not None and length == total != n:
            data[i] = data[i][:int(data[offsets][count])]
        elif offsets is None and length == n:
            data[i] = data[i][:count]
    return tuple(data)


def hot_share(objective, hot_fraction):
    """The fraction of the ids in the objective's id arrays that fall on hot rows
    (rows whose id is in more than hot_fraction of the samples): how much of its
    writing replication="hot" would take off the shared rows."""
    on_hot = total = 0
    for group in id_groups(objective.id_arrays, len(objective.params)):
        counts = row_counts(group, objective.params, objective.data)
        on_hot += int(counts[hot_rows(counts, hot_fraction, objective.n_samples)].sum())
        total += int(counts.sum())
    return on_hot / total if total else 0.0


def id_groups(id_arrays, n_params):
    """The IdArrays grouped by the parameter arrays they index (ids indexing one
    array must map to the same rows)."""
    if not id_arrays:
        return []
    owner = list(range(n_params))

    def root(p):
        while owner[p] != p:
            p = owner[p]
        return p

    for ids in id_arrays:
        for p in ids.params[1:]:
            owner[root(p)] = root(ids.params[0])
    groups = {}
    for ids in id_arrays:
        groups.setdefault(root(ids.params[0]), []).append(ids)
    return list(groups.values())
