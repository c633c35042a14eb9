"""Step-size schedules, evaluated once per epoch (epoch counts from 0).

constant:   step
geometric:  step * decay**epoch          (the Hogwild! paper's gamma <- beta * gamma)
inverse:    step / (1 + decay * epoch)   (1/t-style decay)
"""
import math
from dataclasses import dataclass

from hogwild.errors import HogwildError, choose

STEP_SCHEDULES = ("constant", "geometric", "inverse")


@dataclass(frozen=True)
class StepSchedule:
    kind: str
    step: float
    decay: float

    def __post_init__(self):
        choose(STEP_SCHEDULES, self.kind, "step schedule")
        if not (isinstance(self.step, (int, float)) and math.isfinite(self.step)
                and self.step > 0):
            raise HogwildError(f"step must be a finite number > 0, got {self.step!r}")
        if not (isinstance(self.decay, (int, float)) and not isinstance(self.decay, bool)
                and math.isfinite(self.decay)):
            raise HogwildError(f"decay must be a finite number, got {self.decay!r}")
        if self.kind == "geometric" and not 0 < self.decay <= 1:
            raise HogwildError(f"decay must be in (0, 1] for the geometric schedule, "
                               f"got {self.decay!r}")
        if self.kind == "constant" and self.decay != 1:
            raise HogwildError(f"decay={self.decay!r} has no effect with the constant schedule; "
                               "use the geometric or inverse schedule")
        if self.kind == "inverse" and not self.decay >= 0:
            raise HogwildError(f"decay must be >= 0 for the inverse schedule, got {self.decay!r}")

    def __call__(self, epoch):
        if self.kind == "geometric":
            return self.step * self.decay ** epoch
        if self.kind == "inverse":
            return self.step / (1.0 + self.decay * epoch)
        return self.step
