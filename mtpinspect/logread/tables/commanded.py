"""Runs read from lines rather than tables: a script's timed output under the command that made it (with a drafter's
flag or without), and a line of speeds before and after a drafter ("MTP: 22.7 → 40.6 tok/s")."""

from __future__ import annotations

import re

from mtpinspect.logread.tables.cut import _FIELD
from mtpinspect.logread.tables.record import _Run
from mtpinspect.logread.tables.words import _ARROW, _words, names_drafting, without_speculation

# -- runs under the commands that made them ------------------------------------------------------------------------

# A command as pasted under a shell prompt or on its own: a script, an engine, a benchmark (environment settings first).
_COMMAND = re.compile(r"^\s{0,4}(?:[$#>]\s{1,4})?(?:[A-Z_][A-Z0-9_]{0,40}=\S{0,80}\s+){0,4}(?P<program>(?:python3?(?:\.\d+)?|uv run|"
                      r"torchrun|accelerate launch)\s+(?:-m\s+)?[\w./-]{1,120}|\./[\w./-]{1,120}|[\w./-]{0,80}(?:llama-[\w-]{1,40}|"
                      r"vllm(?:\s+(?:serve|bench\s+\w+))?|sglang\.\w+))(?=\s|$)")
# A flag that turns a drafter on ("--with_speculation True", "--speculative-model ...", "--spec-type draft-mtp", "-md
# f.gguf"), and the values that turn it off ("--num-speculative-tokens 0", "--use-mtp false").
# A bare "draft" is a blog's too ("--with-draft-posts"): only the drafter's own flags (--draft-max, --model-draft).
_COMMAND_DRAFTING = re.compile(r"\s--?(?P<flag>[\w-]{0,30}(?<![a-z])(?:spec(?:ulati\w{0,8})?|mtp|eagle\d?|ngram|nextn|medusa|lookahead)"
                               r"(?![a-z])[\w-]{0,30}|(?:model[-_])?draft(?:[-_](?:max|min|n|p|model|tokens?)[\w-]{0,20})?|md)"
                               r"(?:[ =](?P<value>[^\s-]\S{0,200})|(?=\s|$))", re.IGNORECASE)
_OFF_VALUES = frozenset({"0", "false", "no", "none", "off", "disabled", "0.0"})
# A line's decode speed as a script or engine prints it under its command: the output's or the decode's tokens per
# second ("est. speed input: 40.85 toks/s, output: 305.54 toks/s", "eval rate: 41.2 tokens/s"); a unit cut at the
# line's end ("toks/") still says tokens per second.
_OUTPUT_SPEED = re.compile(r"(?i)\b(?:output|decode|decoding|generation|gen|eval rate)\b[^\n\d]{0,12}?(?P<value>\d{1,6}(?:\.\d{1,6})?)\s?"
                           r"(?:tok(?:en)?s?\s?/\s?s(?:ec)?\b|tok(?:en)?s?/$|t/s\b|tps\b|tokens per second)")
_MAX_COMMANDS = 64  # commands pasted one under another in a thread; more are a log's own lines


def _command_runs(text: str) -> list[_Run]:
    """Runs under the commands that made them: the lines of a command's output that time its decoding (a benchmark
    script's progress bars, one a batch), the command's flags its setting. A command with a drafter's flag beside the
    same program's command without one: the second ran without speculation; each one's k-th timed line is compared with
    the other's k-th (the same batch of the same script). Commands of different programs say nothing of each other."""
    commands: list[tuple[str, bool, list[tuple[int, str, float]]]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if len(raw) > 2000:
            continue
        command = _COMMAND.match(raw)
        if command is not None and len(commands) < _MAX_COMMANDS:
            drafting = any((m["value"] or "").strip("'\"").lower() not in _OFF_VALUES for m in _COMMAND_DRAFTING.finditer(raw))
            commands.append((" ".join(command["program"].split()), drafting, []))
            continue
        speed = _OUTPUT_SPEED.search(raw) if commands and not _FIELD.match(raw) else None
        if speed is not None:
            commands[-1][2].append((number, raw.strip()[:300], float(speed["value"])))
    programs = {(program, drafting) for program, drafting, timed in commands if timed}
    runs: list[_Run] = []
    for program, drafting, timed in commands:
        if (program, not drafting) not in programs:
            continue  # no run of the same program on the other side: nothing to compare with
        for at, (number, line, value) in enumerate(timed, 1):
            runs.append(_Run(f"{program} ({'with' if drafting else 'without'} a drafter's flag)", not drafting,
                             f"timed line {at} under its command", line, number, {"speed": value},
                             span=(timed[0][0], timed[-1][0])))
    return runs


# A line of speeds before and after a drafter was turned on, outside a table ("MTP: 22.7 → 40.6 tok/s", "decode 41 t/s
# -> 33 t/s with n-gram"): the unit after the second speed says they are decode speeds.
_ARROW_LINE = re.compile(_ARROW.pattern + r"\s{0,4}(?:t/s|tok/s|toks/s|tokens?/s|tps)\b", re.IGNORECASE)
_ARROWS = re.compile(r"→|->|=>|⇒")


def _arrow_runs(text: str) -> list[_Run]:
    """Runs a line gives as its speed before and after speculation ("MTP: 22.7 → 40.6 tok/s"): the line must name a
    drafter; an arrow between two settings ("n-max 2 -> 4: 40 -> 35 t/s") is a run without speculation only where its
    left side names none ("no spec -> MTP: 41 -> 33 t/s")."""
    runs: list[_Run] = []
    for number, raw in enumerate(text.splitlines(), 1):
        whole = raw.strip()
        if len(whole) > 300 or "|" in whole or not names_drafting(whole):
            continue
        # Several conditions in one line ("batch=1: 41 -> 58 tok/s (MTP), batch=32: 900 -> 610 tok/s (MTP)"): each its own.
        clauses = _CLAUSES.split(whole) if len(_ARROW_LINE.findall(whole)) > 1 else [whole]
        for clause in clauses:
            runs += _arrow_run(clause, number)
    return runs


_CLAUSES = re.compile(r"[;,]\s+(?=\D)")


def _arrow_run(line: str, number: int) -> list[_Run]:
    """The two runs one clause gives as its speeds before and after a drafter; none where it names no drafter or its
    arrow is between two settings."""
    arrow = _ARROW_LINE.search(line)
    if arrow is None or not names_drafting(line):
        return []
    label = line[:arrow.start()] + " " + line[arrow.end():]
    sides = _ARROWS.split(label, maxsplit=1)
    if len(sides) > 1 and not without_speculation(sides[0]):
        return []  # one setting against another ("n-max 2 -> 4"): no run without speculation here
    key = " ".join(re.sub(r"[^\w.=]+", " ", _words(label)).split())[:60] or f"line {number}"
    name = label.strip(" :-*_`")[:100]
    return [_Run(f"{name} (before)", True, key, line, number, {"speed": float(arrow["before"])}, span=(number, number)),
            _Run(f"{name} (after)", False, key, line, number, {"speed": float(arrow["after"])}, span=(number, number))]
