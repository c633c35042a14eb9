"""The command-line reference cannot go stale: docs/cli.md is what
hogwild.cli.reference renders from the parsers, and every option the README and
docs/command_line.md name exists."""
import re
from pathlib import Path

from hogwild.cli.options import build_parser
from hogwild.cli.reference import commands, option_flags, render

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "regenerate it: python -m hogwild.cli.reference > docs/cli.md"


def flags_named(text):
    """The --options a text names in backquotes or code blocks."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


def test_the_reference_is_the_parsers_rendering():
    assert (ROOT / "docs" / "cli.md").read_text() == render(), REGENERATE


def test_every_option_is_in_the_reference_and_every_option_there_exists():
    reference = (ROOT / "docs" / "cli.md").read_text()
    assert flags_named(reference) == option_flags(), REGENERATE
    for words, _ in commands(build_parser()):
        assert f"## {' '.join(words)}\n" in reference, words


def test_an_option_added_to_a_parser_is_missing_from_the_reference():
    parser = build_parser()
    for words, command in commands(parser):
        if words == ("hogwild", "run", "svm"):
            command.add_argument("--momentum", type=float, help="heavy-ball momentum")
    assert render(parser) != render()
    assert "| `--momentum MOMENTUM` | heavy-ball momentum |" in render(parser)
    assert "--momentum" in option_flags(parser) and "--momentum" not in option_flags()


COMMAND = re.compile(r"\bhogwild ((?:run )?[a-z-]+(?:\|[a-z-]+)*)([^`\n]*)")


def stale_options(text, parser):
    """[(the command as shown, its options the parser lacks)] for each `hogwild
    COMMAND ...` in text (``run svm|mc|...`` alternatives: each of them), and how
    many commands were checked."""
    names = {" ".join(words[1:]) for words, _ in commands(parser)}
    stale, checked = [], 0
    for match in COMMAND.finditer(text):
        command, rest = match.groups()
        variants = [f"run {p}" for p in command[4:].split("|")] \
            if command.startswith("run ") else [command]
        for name in (n for n in variants if n in names):  # others: prose, not commands
            unknown = flags_named(rest) - option_flags(parser, ("hogwild", *name.split()))
            if unknown:
                stale.append((match.group(0), sorted(unknown)))
            checked += 1
    return stale, checked


def test_the_readme_and_the_command_line_guide_give_commands_only_options_they_have():
    parser = build_parser()
    for page in ("README.md", "docs/command_line.md"):
        stale, checked = stale_options((ROOT / page).read_text(), parser)
        assert stale == [] and checked >= 5, (page, stale, checked)


def test_a_stale_option_in_a_page_is_found():
    text = "`hogwild run svm|mc --workers 2 --momentum 0.9` and `hogwild stats svm --json`"
    stale, checked = stale_options(text, build_parser())
    assert checked == 3 and [options for _, options in stale] == [["--momentum"]] * 2
