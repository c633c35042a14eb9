"""Early stopping on held-out samples (scikit-learn's early_stopping, Vowpal
Wabbit's holdout): after each epoch the engine scores the objective's
``validation`` Metric (lower is better) where the parameters live; the run stops
once ``patience`` epochs in a row have not improved on the best epoch's score, and
the best epoch's parameters are the ones returned. The start (epoch 0: the
parameters before training) is scored too: where no epoch beat it, the start is
returned, never a model worse than where the run began. It does not count
towards the patience, so a run whose first epochs climb out of a random start
(a saddle) is not stopped for that.

The best parameters and the start are kept as host copies (one copy of the
parameters each, the best's taken only in epochs that improve). A resumed run
starts watching afresh from the checkpoint's parameters (its start): the
checkpoint holds the last epoch's, not the best's.
"""
import math

import numpy as np


def _host_copy(host_params):
    return tuple(np.array(p, copy=True) for p in host_params())


class EarlyStopping:
    """The watch over one run: the start's score and parameters, and the best
    epoch's."""

    def __init__(self, patience):
        self.patience = patience
        self.best_value, self.best_epoch, self.best_params = math.inf, None, None
        self.start_value, self.start_params = math.nan, None
        self.since_best = 0

    def at_start(self, value, host_params):
        """Record the start's held-out ``value``; ``host_params()``: the parameters
        as the host reads them (copied)."""
        self.start_value, self.start_params = value, _host_copy(host_params)

    def after_epoch(self, epoch, value, host_params):
        """Record epoch ``epoch``'s held-out ``value`` (NaN: no improvement), its
        parameters copied where best. Returns whether the run should stop now."""
        if value < self.best_value:  # False for NaN
            self.best_value, self.best_epoch, self.since_best = value, epoch, 0
            self.best_params = _host_copy(host_params)
        else:
            self.since_best += 1
        return self.since_best >= self.patience

    def restore(self, exported, last_epoch):
        """The kept parameters (the best epoch's, or the start's where it scored
        better than every epoch) written into ``exported`` (the run's final host
        arrays) where they are not the last epoch's; returns their epoch."""
        if self.start_params is not None and self.start_value < self.best_value:
            epoch, params = 0, self.start_params
        elif self.best_params is not None:
            epoch, params = self.best_epoch, self.best_params
        else:
            return last_epoch
        if epoch != last_epoch:
            for out, kept in zip(exported, params):
                np.copyto(out, kept)
        return epoch
