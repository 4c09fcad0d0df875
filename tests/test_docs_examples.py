"""The console examples of README.md and docs/ are what the tool prints: each one is defined in
docs/examples.py, run here as a user runs it, and must exit as shown with the shown lines in its output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs"))

import examples  # noqa: E402  (docs/examples.py)

SHOWN = list(examples.shown_blocks())


def test_every_console_block_is_a_marked_example() -> None:
    """No console output in the pages that the script does not write and this test does not check."""
    assert examples.unmarked_console_blocks() == []
    assert sorted({s.name for s in SHOWN} - set(examples.BY_NAME)) == []  # markers name defined examples
    assert sorted(set(examples.BY_NAME) - {s.name for s in SHOWN}) == []  # every example is shown somewhere
    for shown in SHOWN:
        assert shown.command == examples.BY_NAME[shown.name].command, (shown.page, shown.name)
        assert shown.lines and shown.extra == [], (shown.page, shown.name, "run python docs/examples.py")


def test_comparison_finds_a_changed_line_and_masks_only_what_is_volatile() -> None:
    find = examples.BY_NAME["find-glm"]
    actual = ["zai-org/GLM-4.7: 32 quantized derivative(s)", "41 Hub request(s), 24.6 MiB read, in 0.8 s"]
    assert examples.missing_lines(find, ["zai-org/GLM-4.7: 32 quantized derivative(s)", "...",
                                         "41 Hub request(s), 25.0 MiB read, in 1.5 s"], actual) == []
    assert examples.missing_lines(find, ["zai-org/GLM-4.7: 31 quantized derivative(s)"], actual) != []
    assert examples.missing_lines(find, ["42 Hub request(s), 24.6 MiB read, in 0.8 s"], actual) != []
    # Order counts: a shown line must come after the one shown before it.
    assert examples.missing_lines(find, list(reversed(actual)), actual) != []


def test_a_section_printed_only_when_measured_is_compared_only_when_printed() -> None:
    # drift prints where texts part only when a trigger changed a text; batching's does depending on how the
    # requests met the server (a loaded machine sends them apart). Printed, its header is compared as always.
    drift = examples.BY_NAME["drift-code"]
    part = ["Where the texts part (the baseline's two best candidates at that token)", "-" * 20,
            "trigger                  prompt     char", "-----------------------  ---------  ------", "x  code  1"]
    shown = ["Triggers", "--------", "", *part, "", "Answer", "------", "text"]
    assert examples.missing_lines(drift, shown, ["Triggers", "--------", "", "Answer", "------", "other"]) == []
    printed = ["Triggers", "--------", "", part[0], part[1], "trigger   prompt", "", "Answer", "------", "other"]
    assert examples.missing_lines(drift, shown, printed) == [part[2]]
    assert examples.missing_lines(drift, shown, ["Triggers", "--------", "", "other"]) == ["Answer"]


def test_excerpts_keep_the_verdict_and_the_named_sections() -> None:
    lines = ["verdict", "source", "", "Summary", "-------", "a", "", "Runtimes", "--------", "r1", "r2", "", "Commands",
             "--------", "c"]
    assert examples.sections("Runtimes")(lines) == ["verdict", "source", "...", "Runtimes", "--------", "r1", "r2", "..."]
    with pytest.raises(ValueError, match="no section 'Files'"):
        examples.sections("Files")(lines)


def _params() -> list[object]:
    params = []
    for name, example in examples.BY_NAME.items():
        marks = [pytest.mark.server] if example.server else []
        params.append(pytest.param(example, id=name, marks=marks))
    return params


@pytest.mark.parametrize("example", _params())
def test_example_runs_as_shown(example: examples.Example) -> None:
    if (reason := example.needs()) is not None:
        pytest.skip(reason)
    result = examples.run(example)
    assert result.exit == example.exit, "\n".join(result.lines[-30:])
    for shown in (s for s in SHOWN if s.name == example.name):
        assert shown.exit == result.exit, (shown.page, "exit status shown")
        missing = examples.missing_lines(example, shown.lines, result.lines)
        assert missing == [], (f"{shown.page}: lines not in the output of `{example.command}` "
                               f"(python docs/examples.py --only {example.name} rewrites them)", missing,
                               result.lines)
        if example.oracle and "-t" in example.args:
            # The figures a page shows that do not change between runs (acceptance and mean length of one
            # greedy request, with the thread count pinned: it changes the bits on CPU) against this run's
            # runs.jsonl, within examples.FIGURE_TOLERANCE.
            assert examples.check_figures(shown.lines, result.oracle, reproducible_only=True) == [], shown.page
    if example.oracle:
        # Every figure of the printed table against the runs in runs.jsonl (not the report it was drawn from).
        assert result.oracle and result.problems == [], result.problems


def test_the_figure_oracle_catches_a_table_that_is_not_its_runs() -> None:
    """A table's figures are checked against runs.jsonl within a stated tolerance: a figure off by more than
    half its last printed digit, a row without runs and a log that disagrees with the counts are named."""
    lines = ["Decode speed and acceptance (median [min-max] over prompts and rounds)", "-" * 40,
             "class    config                   tok/s            acceptance    mean len    TTFT",
             "-------  -----------------------  ---------------  ------------  ----------  ------",
             "code     baseline                 12.7 [7.3-16.3]  -             -           78 ms",
             "code     n-max 2 (4 concurrent,   7.2 [4.5-10.4]   0.658         2.3         898 ms",
             "         temperature 0)", "independent rounds and requests: every setting: ..."]
    base = {"concurrency": 1, "temperature": 0.0, "log acceptance": None}
    oracle = {("code", "baseline"): {**base, "tok/s": (12.71, 7.3, 16.3), "acceptance": None, "mean len": None,
                                     "TTFT": 78.2},
              ("code", "n-max 2 (4 concurrent, temperature 0)"): {**base, "concurrency": 4, "tok/s": (7.2, 4.5, 10.4),
                                                                   "acceptance": 0.658, "mean len": 2.3, "TTFT": 898.0,
                                                                   "log acceptance": 0.658}}
    assert examples.check_figures(lines, oracle) == []
    off = {**oracle, ("code", "baseline"): {**oracle[("code", "baseline")], "tok/s": (12.8, 7.3, 16.3), "TTFT": 79.0}}
    problems = examples.check_figures(lines, off)
    assert len(problems) == 2 and "tok/s" in problems[0] and "TTFT" in problems[1]
    wrong_log = {**oracle, ("code", "n-max 2 (4 concurrent, temperature 0)"): {
        **oracle[("code", "n-max 2 (4 concurrent, temperature 0)")], "log acceptance": 0.5}}
    assert "server log" in examples.check_figures(lines, wrong_log)[0]
    assert "without runs" in examples.check_figures(lines, {("code", "baseline"): oracle[("code", "baseline")]})[0]


def test_relative_links_of_the_pages_lead_to_files() -> None:
    import re

    broken = []
    for page in examples.PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert broken == []


def test_a_tables_header_row_is_compared_even_among_measurements() -> None:
    """The sweep examples compare only their stable lines (the speeds change from run to run), so a column the
    tool added (TTFT) was missing from README's and docs/sweep.md's examples unnoticed. A header row is
    always compared."""
    sweep = examples.BY_NAME["sweep-default"]
    actual = ["class   config    tok/s    speedup    TTFT    runs", "------  --------  -------  ---------  ------  ------",
              "code    baseline  1000.0   -          12 ms   9"]
    shown_old = ["class   config    tok/s    speedup    runs", "------  --------  -------  ---------  ------",
                 "code    baseline  999.0    -          9"]
    assert examples.missing_lines(sweep, shown_old, actual) == [shown_old[0]]
    assert examples.missing_lines(sweep, [actual[0], actual[1], "code    baseline  999.0   -   13 ms   9"], actual) == []


def test_ci_runs_the_readmes_commands_as_written() -> None:
    """.ci/run does what the README's Quick start and test section say, line for line, in their order."""
    import re

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    start = readme[readme.index("## Quick start"):readme.index("## `mtpinspect sweep`")]
    blocks = re.findall(r"^```sh\n(.*?)^```", start, re.S | re.M)
    commands = [line for block in (blocks[0], blocks[2]) for line in block.splitlines()]
    assert commands[0] == "python3 -m venv .venv && . .venv/bin/activate"
    at = 0
    for command in commands:
        found = [i for i, line in enumerate(ci.splitlines()) if command in line and not line.lstrip().startswith("#")]
        assert found and found[-1] >= at, (command, "not run by .ci/run in the README's order")
        at = found[-1]
