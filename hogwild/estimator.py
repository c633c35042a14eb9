"""The parameter half of scikit-learn's estimator API (get_params, set_params,
repr), shared by the problems' estimators without depending on scikit-learn."""
import inspect

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

    def __repr__(self):
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k]]
        return f"{type(self).__name__}({', '.join(changed)})"
