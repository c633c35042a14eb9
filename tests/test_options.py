"""Each training option is declared once, in hogwild.options.TRAINING, and
TrainingConfig, the command line, the estimators' parameters and every docstring
are derived from that declaration (issue 30): an option added to the table
appears everywhere, one removed disappears everywhere."""
import argparse
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from hogwild.cli.options import add_training_flags, build_parser, in_users_words, training_fields
from hogwild.config import TrainingConfig, config_class
from hogwild.errors import HogwildError
from hogwild.estimator import Params, training_parameters
from hogwild.options import TRAINING, Option
from hogwild.problems.matrix_completion import ImplicitFactorization, MatrixFactorization
from hogwild.problems.sparse_svm import SparseSVM

ROOT = Path(__file__).resolve().parent.parent
ESTIMATORS = (SparseSVM, MatrixFactorization, ImplicitFactorization)


def problem_parser(problem):
    """The parser of 'hogwild run PROBLEM'."""
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices.values()
               if a.prog.endswith(" run"))
    return run._subparsers._group_actions[0].choices[problem]


def test_training_config_has_exactly_the_rows_of_the_table_each_declared_once():
    names = [option.name for option in TRAINING]
    assert len(names) == len(set(names))
    fields = dataclasses.fields(TrainingConfig)
    assert [field.name for field in fields] == names
    assert [field.default for field in fields] == [option.default for option in TRAINING]
    sources = {path: path.read_text() for folder in ("hogwild", "problems")
               for path in (ROOT / folder).rglob("*.py")}
    run_parsers = (ROOT / "hogwild" / "cli" / "options.py").read_text()
    for option in TRAINING:
        assert not re.search(rf'add_argument\(\s*"{option.flag}"', run_parsers), option.flag
        declared = [path.name for path, text in sources.items()
                    if re.search(rf'Option\(\s*"{option.name}"', text)]
        assert declared == ["options.py"], (option.name, declared)


@pytest.mark.parametrize("problem", ["svm", "mc", "implicit", "cuts"])
def test_every_option_is_a_flag_of_every_problem_with_the_tables_help(problem):
    parser = problem_parser(problem)
    actions = {action.dest: action for action in parser._actions}
    args = parser.parse_args([])
    for option in TRAINING:
        if option.kind == "settings":  # built from the ray and mpi backends' flags
            assert training_fields(args)[option.name] is None  # threads: none
            continue
        action = actions[option.name]
        assert option.flag in action.option_strings
        assert action.help.startswith(in_users_words(option.help).replace("%", "%%"))
    assert set(training_fields(args)) == {option.name for option in TRAINING}


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_estimators_take_every_option_and_document_it(estimator):
    parameters = inspect.signature(estimator).parameters
    defaults = estimator().get_params()
    for option in TRAINING:
        assert parameters[option.parameter].kind is inspect.Parameter.KEYWORD_ONLY
        first_line = option.doc(defaults[option.parameter], option.parameter).split("\n")[0]
        assert f"\n    {first_line}\n" in estimator.__doc__
        assert f"\n{option.doc(option.default)}" in TrainingConfig.__doc__


def test_an_estimator_checks_its_training_parameters_before_any_work():
    with pytest.raises(HogwildError, match="^hot_fraction must be a finite number in"):
        SparseSVM(hot_fraction=2.0, replication="worker").fit(None, None)
    with pytest.raises(HogwildError, match="^unknown merge 'median'; choose one of"):
        MatrixFactorization(merge="median").fit(None)


MOMENTUM = Option("momentum", "number", 0.0, "Heavy-ball momentum of each update.",
                  low=0, high=1)
EDITED = tuple(option for option in TRAINING if option.name != "memory") + (MOMENTUM,)


def test_an_option_added_or_removed_in_the_table_is_so_in_every_derived_place():
    config = config_class(EDITED)
    assert config(momentum=0.5).momentum == 0.5
    with pytest.raises(HogwildError, match=r"^momentum must be a finite number in \[0, 1\], "
                                           r"got 2$"):
        config(momentum=2)
    with pytest.raises(TypeError):
        config(memory="8GB")
    assert "momentum : float, default 0.0\n    Heavy-ball" in config.__doc__
    assert "memory :" not in config.__doc__

    @training_parameters(own={"alpha": 1.0}, table=EDITED, momentum=0.9)
    class Estimator(Params):
        """An estimator.

        Parameters
        ----------
        alpha : float, default 1.0
        {training parameters}
        """

    names = list(inspect.signature(Estimator).parameters)
    assert names[0] == "alpha" and "momentum" in names and "memory" not in names
    assert Estimator().momentum == 0.9
    assert "\n        momentum : float, default 0.9\n" in Estimator.__doc__
    assert "memory :" not in Estimator.__doc__

    parser = argparse.ArgumentParser()
    defaults = {option.name: option.default for option in EDITED} | {"momentum": 0.9}
    add_training_flags(parser, defaults, {}, EDITED)
    assert parser.parse_args(["--momentum", "0.5"]).momentum == 0.5
    with pytest.raises(SystemExit):
        parser.parse_args(["--memory", "8GB"])


@pytest.mark.parametrize("options,message", [
    (dict(distributed={"nodes": 3}), "distributed is for backend 'ray' or 'mpi'; this run "
                                     "has backend 'threads'"),
    (dict(replication="hot", hot_fraction=0), "hot_fraction must be a finite number in "
                                              "(0, 1), got 0"),
    (dict(oversubscribe=1), "oversubscribe must be True or False, got 1"),
    (dict(memory="lots"), "memory 'lots': expected a size such as 8GB, 512MB, 1.5GiB or a "
                          "number of bytes"),
    (dict(step_schedule="cosine"), "unknown step schedule 'cosine'; choose one of: constant, "
                                   "geometric, inverse, inverse_updates"),
])
def test_an_option_given_where_it_is_ignored_or_out_of_bounds_is_named(options, message):
    with pytest.raises(HogwildError) as error:
        TrainingConfig(**options)
    assert str(error.value) == message
