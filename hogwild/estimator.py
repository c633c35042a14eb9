"""The parameter half of scikit-learn's estimator API (get_params, set_params,
repr), shared by the problems' estimators without depending on scikit-learn, and
how an estimator's parameters become the engine's TrainingConfig and RunControls."""
import inspect

from hogwild.config import RUN_CONTROLS, TRAINING_OPTIONS, RunControls, TrainingConfig
from hogwild.errors import HogwildError


class Params:
    """For classes whose __init__ takes keyword parameters only and stores each
    unchanged under its own name (scikit-learn's convention)."""

    @classmethod
    def _param_names(cls):
        return tuple(name for name in inspect.signature(cls.__init__).parameters
                     if name != "self")

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise HogwildError(f"unknown parameter {name!r} for {type(self).__name__}; "
                                   f"valid: {', '.join(names)}")
            setattr(self, name, value)
        return self

    def training_config(self, **resolved):
        """The TrainingConfig of this estimator's parameters of the same names, with
        ``resolved`` values (an automatic step, a derived seed) in their place."""
        names = set(self._param_names())
        return TrainingConfig(**{**{name: getattr(self, name) for name in TRAINING_OPTIONS
                                    if name in names}, **resolved})

    def __repr__(self):
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k]]
        return f"{type(self).__name__}({', '.join(changed)})"


def run_controls(evaluate, controls):
    """RunControls of an estimator's fit: its own ``evaluate`` (from eval_set) and
    the caller's ``controls`` (callback, progress, checkpoint, checkpoint_every,
    resume)."""
    allowed = [name for name in RUN_CONTROLS if name != "evaluate"]
    for name in controls:
        if name not in allowed:
            raise TypeError(f"fit() got an unknown option {name!r}; run controls: "
                            f"{', '.join(allowed)} (test data goes in eval_set)")
    return RunControls(evaluate=evaluate, **controls)
