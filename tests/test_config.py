"""The training configuration: declared once, validated once, with one default each."""
import dataclasses

import numpy as np
import pytest

from hogwild.config import RUN_CONTROLS, TRAINING_OPTIONS, RunControls, TrainingConfig, settle
from hogwild.engine import fit
from hogwild.errors import HogwildError
from hogwild.objective import Objective
from hogwild.problems.matrix_completion import MatrixFactorization
from hogwild.problems.sparse_svm import SparseSVM


@pytest.mark.parametrize("fields,message", [
    ({"epochs": 0}, "epochs must be an integer from 1 to 1,000,000, got 0"),
    ({"step": -1.0}, "step must be a finite number > 0, got -1.0"),
    ({"workers": 0}, "workers must be an integer >= 1, got 0"),
    ({"scheduler": "fast"}, "unknown scheduler 'fast'; choose one of: hogwild, locked, serial, "
                            "blocked, fpsgd, colored, cyclades"),
    ({"backend": "tcp"}, "unknown backend 'tcp'; choose one of: threads, processes, gpu, ray, "
                         "mpi"),
    ({"shuffle_block": 0}, "shuffle_block must be an integer from 1 to 2,147,483,647, got 0"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"oversubscribe": "yes"}, "oversubscribe must be True or False, got 'yes'"),
    ({"distributed": {"nodes": 2}}, "distributed is for backend 'ray' or 'mpi'; this run has "
                                    "backend 'threads'"),
    ({"backend": "ray", "distributed": 3}, "distributed must be a hogwild.backends.ray."
                                           "SSPSettings or a dict, got int"),
])
def test_a_bad_training_option_is_named_when_the_config_is_built(fields, message):
    with pytest.raises(HogwildError) as error:
        TrainingConfig(**fields)
    assert str(error.value) == message


def test_configs_are_frozen_and_replace_validates_again():
    config = TrainingConfig(epochs=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.epochs = 4
    with pytest.raises(HogwildError, match="epochs must be"):
        dataclasses.replace(config, epochs=-1)
    ray = TrainingConfig(backend="ray", distributed={"nodes": 3, "staleness": float("inf")})
    assert ray.distributed.nodes == 3 and ray.distributed.staleness is None


def test_run_controls_have_one_default_each():
    assert RunControls().checkpoint_every == 1  # the engine's and the estimators' alike
    with pytest.raises(HogwildError, match="checkpoint_every must be an integer >= 1, got 0"):
        RunControls(checkpoint_every=0)
    with pytest.raises(HogwildError, match="callback must be a callable or None, got int"):
        RunControls(callback=3)


def test_fit_takes_the_objects_or_their_fields_and_names_an_unknown_option():
    config, controls = settle(TrainingConfig(epochs=2), None, step=0.5, checkpoint_every=None)
    assert (config.epochs, config.step, controls.checkpoint_every) == (2, 0.5, None)
    assert set(TRAINING_OPTIONS).isdisjoint(RUN_CONTROLS)
    with pytest.raises(TypeError, match="unknown option 'epoch'; training options: epochs, "):
        settle(epoch=3)
    objective = Objective(_count, _zero, params=np.zeros(1, np.int64),
                          integer_params=True, data=np.zeros(1),
                          n_samples=10)
    result = fit(objective, TrainingConfig(epochs=3, scheduler="serial"), workers=1)
    assert int(result.params[0][0]) == 30 and len(result.history) == 3


def _count(e, params, data, step):
    params[0][0] += 1


def _zero(e, params, data):
    return 0.0


def test_estimators_build_the_config_from_their_own_parameters():
    model = SparseSVM(epochs=4, decay=0.8, workers=2, scheduler="locked", random_state=3,
                      shuffle_block=8)
    config = model.training_config(step=0.25)
    assert (config.epochs, config.step, config.decay, config.workers, config.scheduler,
            config.seed, config.shuffle_block) == (4, 0.25, 0.8, 2, "locked", 3, 8)
    assert MatrixFactorization(epochs=5).training_config(step=0.03).shuffle_block == 256
    with pytest.raises(TypeError, match="fit\\(\\) got an unknown option 'evaluate'; run "
                                        "controls: callback, progress, checkpoint, "
                                        "checkpoint_every, resume, objective_every "
                                        "\\(test data goes in eval_set\\)"):
        SparseSVM(epochs=1).fit(np.eye(4), [0, 1, 0, 1], evaluate=lambda params: {})
