"""Early stopping on held-out samples (scikit-learn's early_stopping, Vowpal
Wabbit's holdout): after each epoch the engine scores the objective's
``validation`` Metric (lower is better) where the parameters live; the run stops
once ``patience`` epochs in a row have not improved on the best score, and the
best epoch's parameters are the ones returned.

The best parameters are kept as a host copy (one more copy of the parameters,
taken only in epochs that improve). A resumed run starts watching afresh from the
checkpoint's parameters: the checkpoint holds the last epoch's, not the best's.
"""
import math

import numpy as np


class EarlyStopping:
    """The watch over one run: the best score, its epoch and its parameters."""

    def __init__(self, patience):
        self.patience = patience
        self.best_value, self.best_epoch, self.best_params = math.inf, None, None
        self.since_best = 0

    def after_epoch(self, epoch, value, host_params):
        """Record epoch ``epoch``'s held-out ``value`` (NaN: no improvement);
        ``host_params()``: the parameters as the host reads them (copied when best).
        Returns whether the run should stop now."""
        if value < self.best_value:  # False for NaN
            self.best_value, self.best_epoch, self.since_best = value, epoch, 0
            self.best_params = tuple(np.array(p, copy=True) for p in host_params())
        else:
            self.since_best += 1
        return self.since_best >= self.patience

    def restore(self, exported, last_epoch):
        """The best epoch's parameters written into ``exported`` (the run's final
        host arrays) where a later epoch ran; returns the epoch they are from."""
        if self.best_params is None:
            return last_epoch
        if self.best_epoch != last_epoch:
            for out, best in zip(exported, self.best_params):
                np.copyto(out, best)
        return self.best_epoch
