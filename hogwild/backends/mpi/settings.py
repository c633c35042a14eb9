"""AllreduceSettings: how the ranks of backend "mpi" reconcile (see
hogwild.backends.mpi), and the linear scaling rule's step factor."""
from dataclasses import dataclass
from typing import Optional

from hogwild.collectives import ALGORITHMS
from hogwild.errors import HogwildError, check_int, choose
from hogwild.limits import MAX_EPOCHS

LOCAL_SCHEDULERS = ("hogwild", "locked", "serial")
ALGORITHM_CHOICES = ("auto", *ALGORITHMS, "hierarchical")  # hierarchical: by node
EXCHANGES = ("auto", "dense", "sparse")
STEP_SCALINGS = ("linear", "none")
SAMPLES = ("whole", "own")


@dataclass(frozen=True)
class AllreduceSettings:
    """How the ranks synchronise (see the module docstring); the ranks themselves are
    the MPI job's."""

    sync_every: Optional[int] = None  # local updates of a rank between syncs; None: an epoch
    algorithm: str = "auto"           # Open MPI's allreduce algorithm, or hierarchical (by
    #                                   node); auto: the model's pick
    exchange: str = "auto"            # dense allreduce, sparse allgather, or the smaller
    step_scaling: str = "linear"      # the step times the ranks (Goyal et al.), or "none"
    warmup_epochs: float = 0.0        # with "linear": reach it linearly over these epochs
    summation_servers: int = 0        # the job's last ranks that take no samples and only
    #                                   add (BytePS's summation service); 0: none
    samples: str = "whole"            # whole: every rank holds all the samples and trains
    #                                   on its share; own: each holds only its own (part
    #                                   files read per host) and trains on them all

    def checked(self):
        """These settings validated, or a HogwildError naming the field."""
        if self.sync_every is not None:
            check_int("sync_every", self.sync_every, 1)
        choose(ALGORITHM_CHOICES, self.algorithm, "allreduce algorithm")
        choose(EXCHANGES, self.exchange, "exchange")
        choose(STEP_SCALINGS, self.step_scaling, "step_scaling")
        check_int("summation_servers", self.summation_servers, 0)
        choose(SAMPLES, self.samples, "samples")
        if self.samples == "own" and self.summation_servers:
            raise HogwildError("summation servers hold no samples; ranks that each hold their "
                               "own samples (part files read per host) cannot have them")
        if self.summation_servers and self.algorithm != "auto":
            raise HogwildError(f"summation servers sum the changes themselves; allreduce "
                               f"algorithm {self.algorithm!r} would not run: leave it 'auto'")
        warmup = self.warmup_epochs
        if not (isinstance(warmup, (int, float)) and not isinstance(warmup, bool)
                and 0 <= warmup <= MAX_EPOCHS):
            raise HogwildError(f"warmup_epochs must be a number from 0 to {MAX_EPOCHS:,}, got "
                               f"{warmup!r}")
        if warmup and self.step_scaling == "none":
            raise HogwildError("warmup_epochs ramps the step up to the linear scaling rule's; "
                               "it needs step_scaling='linear'")
        return self


def check_summation_servers(servers, ranks):
    """``servers`` summation servers in a job of ``ranks`` ranks, or a HogwildError:
    they add the changes of at least 2 ranks that train, and are at most as many."""
    trainers = ranks - servers
    if servers and trainers < 2:
        raise HogwildError(f"{servers} summation server{'s' * (servers > 1)} in a job of "
                           f"{ranks} ranks: the servers add the changes of at least 2 ranks "
                           "that train")
    if servers > trainers:
        raise HogwildError(f"{servers} summation servers for {trainers} ranks that train: at "
                           "most as many servers as those (BytePS's traffic falls no further)")


def step_factor(settings, ranks, syncs_done, syncs_per_epoch):
    """The factor of the schedule's step for the next piece of work: 1, or with the
    linear scaling rule ``ranks``, reached linearly over the warm-up epochs."""
    if settings.step_scaling == "none" or ranks == 1:
        return 1.0
    warmup = settings.warmup_epochs * syncs_per_epoch
    progress = 1.0 if syncs_done >= warmup else syncs_done / warmup
    return 1.0 + (ranks - 1) * progress
