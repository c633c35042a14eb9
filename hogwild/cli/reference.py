"""The command-line reference, docs/cli.md, generated from the argparse parsers so
that it cannot go stale: ``python -m hogwild.cli.reference > docs/cli.md`` writes
it, and tests/test_cli_reference.py fails when the file differs from a fresh
rendering (an option added, removed or reworded without regenerating)."""
import argparse

from hogwild.cli.options import build_parser

HEADER = """# Command-line reference

Generated from the argparse definitions by `python -m hogwild.cli.reference >
docs/cli.md`; `tests/test_cli_reference.py` fails when this file and the parsers
differ. `hogwild COMMAND --help` prints the same text for one command."""


def commands(parser, words=("hogwild",)):
    """(words, parser) of every command that takes options, depth first, in the
    order the parsers declare them (``hogwild run svm``, ...)."""
    nested = [action for action in parser._actions
              if isinstance(action, argparse._SubParsersAction)]
    if not nested:
        yield words, parser
        return
    for action in nested:
        for name, child in action.choices.items():
            yield from commands(child, (*words, name))


def _flag(action):
    """How the option is written: its flags and its value's name."""
    if not action.option_strings:
        return action.metavar or action.dest
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    value = action.metavar or action.dest.upper()
    return ", ".join(f"{flag} {value}" for flag in action.option_strings)


def _cell(text):
    return " ".join((text or "").split()).replace("|", "\\|")


def _help(action, parser):
    """The option's help with argparse's %(default)s-style fields filled in."""
    if action.help is None:
        return ""
    fields = {**vars(action), "prog": parser.prog}
    return _cell(action.help % fields if "%" in action.help else action.help)


def render(parser=None):
    """The whole reference as Markdown."""
    parser = parser or build_parser()
    lines = [HEADER, ""]
    for words, command in commands(parser):
        lines += [f"## {' '.join(words)}", ""]
        if command.description:
            lines += [_cell(command.description), ""]
        for group in command._action_groups:
            actions = [a for a in group._group_actions
                       if not isinstance(a, argparse._HelpAction)]
            if not actions:
                continue
            lines += [f"{group.title.capitalize()}:", "", "| option | meaning |", "|---|---|"]
            lines += [f"| `{_flag(a)}` | {_help(a, command)} |" for a in actions]
            lines.append("")
    return "\n".join(lines)


def option_flags(parser=None, words=None):
    """Every long option of every command (``--data``, ...; ``--help`` too), or of
    the command ``words`` only (("hogwild", "run", "svm"))."""
    return {flag for found, command in commands(parser or build_parser())
            if words is None or found == tuple(words)
            for action in command._actions for flag in action.option_strings
            if flag.startswith("--")}


if __name__ == "__main__":
    print(render(), end="")
