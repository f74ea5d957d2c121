"""Command-line options come from the declared parameters (management/commands/_declared.py): one
option per parameter with the declared type, choices, default and bounds in its help, and a
refused value names the option, as the API names the field."""
from __future__ import annotations

import argparse

import pytest
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.analysis.params import REQUIRED, Param
from annotation.management.commands._declared import (add_declared_arguments, declared_clean, declared_given,
                                                      option_name)
from annotation.services.judging.operations import SOURCE_PARAMS
from annotation.services.judging.simulation import SIMULATION_PARAMS
from annotation.services.pools.operations import BUILD_PARAMS
from annotation.services.releases.operations import PARAMS as RELEASE_PARAMS
from tests.factories import make_pool_with_runs

SPECS = {
    "depth": Param(int, 10, "k: top-k", 1, 1000),
    "rate": Param(float, 0.3, "share", 0, 1, open_low=True),
    "strategy": Param(str, "a", "order", choices=("a", "b")),
    "flag": Param(bool, False, "a flag"),
    "shares": Param(list, [0.5], "checkpoints", 0, 1, items=float, unique_sorted=False),
    "name": Param(str, REQUIRED, "the name", max_length=5),
}


def _parse(*argv: str) -> dict:
    parser = argparse.ArgumentParser()
    add_declared_arguments(parser, SPECS)
    return vars(parser.parse_args(list(argv)))


def test_each_declared_parameter_is_one_typed_option_that_defaults_to_not_given():
    opts = _parse("--name", "x", "--depth", "7", "--rate", "0.5", "--strategy", "b", "--flag", "--shares", "0.1,0.2",
                  "0.3")
    assert opts == {"depth": 7, "rate": 0.5, "strategy": "b", "flag": True, "shares": ["0.1,0.2", "0.3"], "name": "x"}
    assert declared_given(opts, SPECS) == {"depth": 7, "rate": 0.5, "strategy": "b", "flag": True,
                                           "shares": [0.1, 0.2, 0.3], "name": "x"}
    bare = _parse("--name", "x")
    assert declared_given(bare, SPECS) == {"name": "x"}  # nothing else given: the declarations' defaults apply
    assert declared_clean(SPECS, declared_given(bare, SPECS)) == {"depth": 10, "rate": 0.3, "strategy": "a",
                                                                  "flag": False, "shares": [0.5], "name": "x"}
    assert declared_given(_parse("--name", "x", "--no-flag"), SPECS)["flag"] is False


def test_argparse_refuses_a_wrong_type_or_choice_and_a_missing_required_option():
    for argv in (["--name", "x", "--depth", "7.5"], ["--name", "x", "--strategy", "c"], []):
        with pytest.raises(SystemExit):
            _parse(*argv)


@pytest.mark.parametrize(("argv", "message"), [
    (["--depth", "0"], "--depth must be between 1 and 1000, got 0"),
    (["--rate", "0"], "--rate must be in (0, 1], got 0.0"),
    (["--rate", "nan"], "--rate must be finite"),
    (["--shares", "0.5,2"], "--shares must be between 0 and 1, got 2.0"),
    (["--shares", "0.5,half"], "--shares must be numbers (separated by commas or spaces), got 'half'"),
    (["--name", "toolong"], "--name must be at most 5 characters"),
])
def test_a_refused_value_names_the_option(argv, message):
    argv = ["--name", "x", *argv] if "--name" not in argv else argv
    with pytest.raises(CommandError) as refused:
        declared_clean(SPECS, declared_given(_parse(*argv), SPECS))
    assert message in str(refused.value)


def test_help_states_the_declared_default_and_bounds():
    parser = argparse.ArgumentParser()
    add_declared_arguments(parser, SPECS)
    text = " ".join(parser.format_help().split())
    assert "k: top-k (default 10; between 1 and 1000)" in text
    assert "share (default 0.3; in (0, 1])" in text


def _options(command: str, subcommand: str | None = None) -> dict[str, argparse.Action]:
    parser = load_command_class("annotation", command).create_parser("manage.py", command)
    if subcommand:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[subcommand]
    return {option: action for action in parser._actions for option in action.option_strings}


@pytest.mark.parametrize(("command", "subcommand", "params", "names"), [
    ("build_pool", None, BUILD_PARAMS, ("depth", "redundancy", "include_original_positives", "gold_rate",
                                        "training_pass_mark", "lease_seconds", "broken_reports_limit")),
    ("build_pool", None, JUDGING_PARAMS, tuple(JUDGING_PARAMS)),
    ("simulate_judging", None, SIMULATION_PARAMS, tuple(SIMULATION_PARAMS)),
    ("simulate_judging", None, SOURCE_PARAMS, ("depth", "with_originals")),
    ("release", "create", RELEASE_PARAMS, ("name", "title", "licence", "allow_unresolved")),
])
def test_the_commands_take_the_operations_declared_parameters(command, subcommand, params, names):
    options = _options(command, subcommand)
    for name in names:
        action = options[option_name(name)]
        spec = params[name]
        assert action.dest == name
        assert spec.description.rstrip(".") in action.help
        if spec.choices is not None and spec.type is str:
            assert tuple(action.choices) == tuple(spec.choices)
        if spec.type in (int, float):
            assert action.type is spec.type


@pytest.mark.django_db
def test_build_pool_refuses_a_setting_out_of_bounds_by_its_option_and_builds_nothing():
    reference, runs = make_pool_with_runs(depth=3)
    base = ["build_pool", "--dataset", reference.dataset.name, "--name", "new", "--run", runs[0].name]
    for option, value, bounds in (("--depth", "0", "between 1 and 1000"), ("--sample-rate", "0", "between 0.001 and 1"),
                                  ("--warmup-depth", "1001", "between 0 and 1000"),
                                  ("--stop-remaining-below", "0", "in (0, 1000000]")):
        with pytest.raises(CommandError) as refused:
            call_command(*base, option, value)
        assert option in str(refused.value) and bounds in str(refused.value)
    assert not reference.dataset.pools.filter(name="new").exists()
