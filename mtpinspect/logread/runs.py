"""Reading the logs of a run made elsewhere: llama-server stderr, vLLM and SGLang logs, saved /metrics pages.

Each file becomes one :class:`LogEvidence`: the draft figures it holds (accepted, drafted, mean
length, per position) and which of them it lacks, the formats they came from, whether MTP was in
use, why a start failed, and the settings it shows. The kind of file is recognised from its content,
not its name, through the per-engine tables of formats.py:

- the engine whose metrics lines the log holds (else whose prefixes and banners it shows) made it;
  llama-server stderr is the default for a log that names llama or shows a crash;
- a file of Prometheus samples (``llamacpp:``, ``vllm:`` or ``sglang:``, also a pasted query table)
  with no metrics lines is a saved ``/metrics`` page.

The figures come from one format, the one that carries the most of them (a log is one engine
version's; two formats in one paste are two sources, not two halves): lines add up as the format's
scope says (per-request and per-interval lines are summed, running totals take the last line). The
llama.cpp statistics lines are totals per server, never added to per-request lines; they fill in the
mean length and per-position rates only when they cover exactly the same tokens.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import accumulate
from pathlib import Path

from mtpinspect.errors import FormatError, shown
from mtpinspect.files import pasted_text, read_bounded
from mtpinspect.jsonable import json_field
from mtpinspect.logread.catalogue import Meaning, Scan, Seen, kinds_read, scan
from mtpinspect.logread.figures import LogLines, Reading, Sample, combine, read_lines, with_ratios
from mtpinspect.logread.formats import METRIC_SAMPLE, Figures, LineFormat, Scope, exposition_text
from mtpinspect.logread.run_facts import LogApp, MtpUse, RunFacts, read_run
from mtpinspect.logread.tables import TABLE_RUNS_FORMAT, names_drafting, sentence_baselines, table_samples, without_speculation
from mtpinspect.logread.voices import (
    assert_file,
    assert_program,
    engine_command,
    engine_source,
    foreign_frames,
    own_program,
    prompt_command,
    without_content,
    without_transfer_words,
)
from mtpinspect.runtime.crash import Crash, crash_in_log
from mtpinspect.runtime.logs import unused_nextn_tensors
from mtpinspect.runtime.metrics import parse_metrics
from mtpinspect.runtime.workarounds import Workaround, suggest
from mtpinspect.vocabulary import Engine, LogKind

MAX_LOG_BYTES = 256 << 20
# llama.cpp named as a program, not inside another word ("llamacpp:" of a metrics name that is not a sample).
_NAMES_LLAMA = re.compile(r"\bllama(?:\.cpp|-server|-cli|_cpp|-bench)\b|\bllama\b")
_EVIDENCE_LINES = 3
_SHOWN_MESSAGES = 24  # lines that meant something, shown in the report (the rest still count)


@dataclass
class LogEvidence:
    """What one log file says about a run (in JSON, the figures, what they lack and the failure; the rest feeds the rules)."""

    path: str
    kind: LogKind
    runtime: Engine
    drafted: int | None = None
    accepted: int | None = None
    drafts: int | None = None  # drafts (verification steps with a draft), where the log counts them
    acceptance: float | None = None
    mean_length: float | None = None
    per_position: tuple[float, ...] = ()
    formats: list[str] = field(default_factory=list)  # the formats recognised, the one the figures come from first
    missing: list[str] = field(default_factory=list)  # figures the log lacks ("mean length", "per-position", ...)
    engine_version: str | None = None
    draft_lines: list[str] = json_field(omit=True, default_factory=list)  # the lines the figures come from (evidence)
    derived: list[str] = json_field(omit=True, default_factory=list)  # how figures the lines lack were worked out
    samples: list[Sample] = json_field(omit=True, default_factory=list)  # every metrics line, as read
    statistics: list[Figures] = json_field(omit=True, default_factory=list)  # llama.cpp: last totals per implementation
    unused_nextn: list[str] = json_field(omit=True, default_factory=list)
    unused_nextn_line: str | None = json_field(omit=True, default=None)  # "line N: ..." of the first of them
    mtp_context: str | None = json_field(omit=True, default=None)  # the line that shows MTP was set up, if any
    offered_spec_types: tuple[str, ...] | None = json_field(omit=True, default=None)  # the build's --spec-type list
    failure: str | None = None
    engine_line: str | None = None  # "line N: ..." that named the engine (its own line, a figure line of its format)
    architecture: str | None = json_field(omit=True, default=None)
    n_ctx: int | None = json_field(omit=True, default=None)
    max_tokens: int | None = json_field(omit=True, default=None)  # the most tokens a slot held when a request finished
    truncated: bool = json_field(omit=True, default=False)
    quantization: str | None = json_field(omit=True, default=None)  # vLLM engine banner: None, "fp8", "compressed-tensors", ...
    model_name: str | None = json_field(omit=True, default=None)
    draft_model: str | None = json_field(omit=True, default=None)  # vLLM speculative_config model
    spec_method: str | None = json_field(omit=True, default=None)  # vLLM speculative_config method
    kv_cache_dtype: str | None = json_field(omit=True, default=None)
    spec_tokens: int | None = json_field(omit=True, default=None)
    # Lines that name a known MTP failure (sidecar width, missing layers, unknown type...), in log order.
    telling: list[str] = json_field(omit=True, default_factory=list)
    crash: Crash | None = None  # the engine crashed (signal, GGML_ASSERT, abort, exception, GPU fault)
    crash_line: str | None = json_field(omit=True, default=None)  # "line N: ..." of the crash's first line in the text
    crash_owner: str | None = json_field(omit=True, default=None)  # why the crash is another program's (crash_owner)
    mtp_use: MtpUse = MtpUse.not_shown  # whether the run had MTP on, as the log shows it (logread/run_facts.py)
    app: LogApp | None = None  # Ollama or LM Studio, when their lines are around llama-server's
    skipped_lines: int = 0  # non-empty lines no format recognised: the diagnosis rests on the others
    run: RunFacts | None = json_field(omit=True, default=None)
    # For a crash: the changes to try, most likely first, from what the crash and the log point at.
    suggested: list[Workaround] = json_field(omit=True, default_factory=list)
    # Metrics lines skipped because their figures are not numbers (the first few), named in the notes.
    unreadable: list[str] = json_field(omit=True, default_factory=list)
    # The lines that meant something (catalogue.py), with what each means and where it comes from.
    messages: list[Seen] = field(default_factory=list)
    scan: Scan | None = json_field(omit=True, default=None)
    source: str = json_field(omit=True, default="")  # the file the run was read from (several runs share one)
    # A comparison table's row: its decode speed as printed, what it names, whether it ran without speculation.
    speed: float | None = json_field(omit=True, default=None)
    speed_line: str | None = json_field(omit=True, default=None)  # "line N: ..." the speed is read from, when not a figure line
    setting: str | None = json_field(omit=True, default=None)
    baseline: bool = json_field(omit=True, default=False)
    speed_unit: str | None = json_field(omit=True, default=None)  # "x": a table's speed-up (None: tokens per second)
    group: str | None = json_field(omit=True, default=None)  # a table's key (batch size, prompt): runs compare within it

    @property
    def drafted_anything(self) -> bool:
        return bool(self.drafted)

    @property
    def separate_drafter(self) -> bool:
        """vLLM drafts with another checkpoint than the target's (its quantization is not the head's)."""
        return self.draft_model is not None and self.model_name is not None and self.draft_model != self.model_name


def read_log(path: str | Path) -> LogEvidence:
    """Parse one log or metrics file; SourceError if it cannot be read, FormatError if it holds nothing usable.
    A text with the figures of several engines' runs gives the main one here (read_runs gives each)."""
    return read_runs(path)[0]


def read_runs(path: str | Path) -> list[LogEvidence]:
    """Each run one log file holds: one per engine whose figures it shows (a vLLM run at 0% pasted above a healthy
    llama-server run is two runs, each judged), the one with the most figures first; at least one."""
    file = Path(path).expanduser()
    text = pasted_text(read_bounded(file, MAX_LOG_BYTES, "log file", "pass the part around the run"))
    if not text.strip():
        raise FormatError(f"{file}: empty log")
    # What the engines, apps, tracebacks and shell said: request bodies, prompts and chat text emptied (voices.py).
    # The run's settings are still read from the whole text (a request's "speculative.types" is a setting). "MTP" on a
    # line of the Media Transfer Protocol (a phone's libmtp, go-mtpfs, gvfsd) is blanked: no tie to a drafter.
    spoken = without_transfer_words(without_content(text))
    segments = _segments(spoken)
    if len(segments) > 1:
        runs = []
        for number, (first, piece, lines) in enumerate(segments, 1):
            found = _read_text(f"{file} (run {number}, from line {first})", piece, piece, lines, first, str(file))
            first_line = piece.lstrip("\n").split("\n", 1)[0]
            said = _WITHOUT_LABEL.match(first_line) or (label := _LABEL_LINE.match(first_line)) and without_speculation(label["label"])
            if said and found[0].drafted is None and found[0].acceptance is None \
                    and found[0].mean_length is None:
                found[0].baseline = True  # the poster's label says this run had no speculation
            runs += found
        return runs
    return _read_text(str(file), text, spoken, None, 1, str(file))


# Where a run starts: a server's build banner, the engine's command under a shell prompt, vLLM's version line,
# mtp-bench's first row after another run's figures. A start opens a new run only once the text before it showed
# figures or its requests' decode speed (a command and its banner are one start; a run without speculation timed
# before one with it are two).
_RUN_START = re.compile(
    r"^(?:[\w./-]*\s*\|\s*)?(?:\[\d+\]\s+)?(?:main: )?build(?:_info)?: \d+ \(\w+\)|"
    r"^\s*(?:[\w.-]+@[\w.-]+:\S*[$#]|\$|PS [A-Za-z]:\\[^>\n]{0,200}>|[A-Za-z]:\\[^>\n]{0,200}>)\s+\S*"
    r"(?:llama-server|llama-cli|vllm serve|sglang\.launch_server|mtp-bench)|"
    r"vLLM API server version|"
    # a poster's label line between two runs: "without mtp", "**With speculative decoding:**"
    r"^[ \t]{0,4}[#*_>-]{0,4}[ \t]{0,2}(?i:with(?:out)?|w/o|no)[ \t]{1,3}(?i:mtp|spec(?:ulative(?: decoding)?|ulation)?|"
    r"draft(?:ing| model)?|eagle\d?|ngram|n-gram)[ \t]{0,2}[*_:]{0,4}[ \t]*$", re.MULTILINE)
# Such a label saying the run had no speculation.
_WITHOUT_LABEL = re.compile(r"^[ \t]{0,4}[#*_>-]{0,4}[ \t]{0,2}(?:without|w/o|no)[ \t]", re.IGNORECASE)


# A label line set apart by banners, a heading's marks or a closing colon ("=== baseline ===", "## ngram, k=4",
# "**EAGLE-3:**"), the label alone (no "name: value" field): a run starts there when its words name a setting
# (tables/'s words: one place for them).
_LABEL_LINE = re.compile(r"^[ \t]{0,4}(?:(?P<open>[#=*_>~-]{1,8})[ \t]{0,2})?(?P<label>[^\n#*~|:]{2,80}?)[ \t]{0,2}"
                         r"(?P<close>[=*_~-]{1,8}|:[*_]{0,2})?[ \t]*$", re.MULTILINE)
_MAX_LABELS = 256  # label lines looked at; a text of thousands is no poster's runs


def _label_starts(spoken: str) -> list[int]:
    """Where a poster's decorated label line naming a setting opens a run (bare prose lines do not)."""
    starts: list[int] = []
    for found in _LABEL_LINE.finditer(spoken):
        if len(starts) >= _MAX_LABELS:
            break
        if (found["open"] or found["close"]) and (without_speculation(found["label"]) or names_drafting(found["label"])):
            starts.append(found.start())
    return starts


def _segments(spoken: str) -> list[tuple[int, str, LogLines]]:
    """The runs of a text that holds several, each with its first line number and its lines read; one entry (the
    whole text) when it holds one or none."""
    starts = sorted({*(m.start() for m in _RUN_START.finditer(spoken)), *_label_starts(spoken)})
    if len(starts) < 2:
        return []
    bounds = [0, *[s for s in starts if s > 0], len(spoken)]
    runs: list[tuple[int, str, LogLines]] = []
    begin, line, counted = 0, 1, 0
    # Each stretch between two starts is read once (whether it shows figures), each run once: linear in the text
    # however many starts it holds (a thousand label lines without figures between them).
    for start, end in zip(bounds, bounds[1:]):
        timed = read_lines(spoken[start:end].splitlines())
        if any(r.samples or r.settings.get("decode_speed") for r in timed.readings.values()) or end == len(spoken):
            piece = spoken[begin:end]
            line += spoken.count("\n", counted, begin)
            counted = begin
            runs.append((line, piece, timed if start == begin else read_lines(piece.splitlines())))
            begin = end
    if len(runs) > 1 and not any(r.samples for r in runs[-1][2].readings.values()):
        # The text after the last run's figures (its shutdown, a crash) belongs to that run.
        (first, before, _), (_, after, _) = runs[-2], runs[-1]
        runs[-2:] = [(first, before + after, read_lines((before + after).splitlines()))]
    return runs if len(runs) > 1 else []


def _read_text(name: str, text: str, spoken: str, lines: LogLines | None, first: int, source: str) -> list[LogEvidence]:
    """The runs of one text (or one run's part of it): one per engine whose figures it shows, the most figures
    first. ``first``: the text's first line number in the file (hits are numbered in the file's lines)."""
    crash = crash_in_log(spoken, prompt_command)
    hits = scan(spoken)
    if first > 1:
        hits = Scan(tuple(replace(h, number=h.number + first - 1) for h in hits.hits))
    if lines is None:
        lines = read_lines(spoken.splitlines())
    rows, owner = table_samples(spoken)
    whole = _Whole(text, spoken)  # what the whole text says, read once however many runs it holds (linear)
    compared: list[LogEvidence] = []
    engine = owner or hits.writer or Engine.llama_cpp
    if rows and not any(r.samples for r in lines.readings.values()):
        # A table of acceptance by row (a benchmark's categories): its engine's figures when no line format found any.
        if engine in lines.readings:
            lines.readings[engine].samples.extend(rows)
            lines.readings[engine].marks += owner is not None
    elif rows and _within(rows, lines):
        # Results blocks that hold the engine's own summary lines ("Accept length:" under "chain spec") and more (the
        # block without speculation, each block's speed): the blocks' runs are the text's, read once.
        main = max(lines.readings.values(), key=lambda r: len(r.samples)).engine.engine
        readings = {e: replace(r, samples=[]) for e, r in lines.readings.items()}
        readings[main] = replace(readings[main], samples=list(rows))
        lines = replace(lines, readings=readings)
    elif rows and (any(r.figures.group is not None for r in rows) or _runs_apart(rows)):
        # A table comparing runs with and without speculation, or a table of runs one a row (a backend, a build, a
        # model each: "| Vulkan | 0.7% (2/297) |" beside "HIP"), beside the engine's own figure lines: the log's run
        # is judged on its lines, the table's runs apart, after it (never added to the log's figures).
        main = max(lines.readings.values(), key=lambda r: len(r.samples)).engine.engine
        readings = {e: replace(r, samples=[]) for e, r in lines.readings.items()}
        readings[main] = replace(readings[main], samples=list(rows))
        compared = _runs_of(name, replace(lines, readings=readings), whole, hits, first, source, None, "table run")
    if not rows and any(r.samples for r in lines.readings.values()):
        # The run without speculation the poster gives in a sentence beside the engine's own lines ("without MTP I get
        # 41 t/s"): a run of its own, compared with the log's (never added to its figures).
        spoken_bases = sentence_baselines(spoken)
        if spoken_bases:
            main = max(lines.readings.values(), key=lambda r: len(r.samples)).engine.engine
            readings = {e: replace(r, samples=[]) for e, r in lines.readings.items()}
            readings[main] = replace(readings[main], samples=spoken_bases)
            compared = _runs_of(name, replace(lines, readings=readings), whole, hits, first, source, None, "run in a sentence")
    return _runs_of(name, lines, whole, hits, first, source, crash, "run") + compared


def _within(rows: list[Sample], lines: LogLines) -> bool:
    """Whether every figure line the engines' formats read lies inside the tables or blocks whose runs ``rows`` are."""
    spans = sorted(row.span for row in rows if row.span != (0, 0))
    if not spans:
        return False
    starts = [first for first, _ in spans]
    reach = list(accumulate((last for _, last in spans), max))  # the furthest line any span up to here covers
    own = (sample.number for reading in lines.readings.values() for sample in reading.samples)
    return all((at := bisect_right(starts, number) - 1) >= 0 and reach[at] >= number for number in own)  # n log n


def _runs_of(name: str, lines: LogLines, whole: _Whole, hits: Scan, first: int, source: str, crash: Crash | None,
             what: str) -> list[LogEvidence]:
    """The runs of one reading: each summary told again is a run of its own (a table's rows), else one (a table's
    runs are named as such even when there is one)."""
    runs = _summary_runs(lines)
    if len(runs) > 1 or what != "run":
        return [evidence for number, (start, part) in enumerate(runs or [(1, lines)], 1)
                for evidence in _judged(f"{name} ({what} {number}, from line {start + first - 1})", whole, part, hits,
                                        crash, first, source)]
    return _judged(name, whole, lines, hits, crash, first, source)


class _Whole:
    """A text's facts that do not depend on which of its runs is judged, each read at most once."""

    def __init__(self, text: str, spoken: str) -> None:
        self.text, self.spoken = text, spoken
        self._failures: dict[Callable[[str], str | None], str | None] = {}
        self._failures_cited: dict[str, str | None] = {}

    @cached_property
    def run(self) -> RunFacts:
        return read_run(self.text)

    @cached_property
    def unused_nextn(self) -> list[str]:
        return unused_nextn_tensors(self.spoken)

    def unused_nextn_line(self, first: int) -> str | None:
        """The first unused nextn tensor's loader line as cited, so a reading resting on it names its line."""
        if not self.unused_nextn:
            return None
        return _cited_line(self.spoken, (f"model has unused tensor {self.unused_nextn[0]}",), first)

    def crash_owner(self, crash: Crash) -> str | None:
        """Whose crash it is when another program's (crash_owner), read from the whole text once."""
        if "owner" not in self._failures_cited:
            self._failures_cited["owner"] = crash_owner(crash, self.spoken)
        return self._failures_cited["owner"]

    def crash_line(self, crash: Crash, first: int) -> str | None:
        """The crash's first line as cited (the same for every run of the text)."""
        if "crash" not in self._failures_cited:
            self._failures_cited["crash"] = _cited_line(self.spoken, crash.lines, first)
        return self._failures_cited["crash"]

    def failure_of(self, read: Callable[[str], str | None]) -> str | None:
        """An engine table's failed start in one line, read from the whole text once."""
        if read not in self._failures:
            self._failures[read] = read(self.spoken)
        return self._failures[read]


def _judged(name: str, whole: _Whole, lines: LogLines, hits: Scan, crash: Crash | None,
            first: int, source: str) -> list[LogEvidence]:
    spoken = whole.spoken
    owner = whole.crash_owner(crash) if crash is not None else None
    main = _with_reading(_parse(name, spoken, lines, crashed=crash is not None and not _python_crash(crash) and owner is None, hits=hits,
                                first=first, whole=whole), whole,
                         hits, crash, source)
    main.crash_owner = owner
    if crash is not None:  # its first line, else (a backtrace read from its frames) the frame that placed it
        frame = hits.mtp_sign or hits.first(Meaning.speculation)
        main.crash_line = whole.crash_line(crash, first) or (f"line {frame.number}: {frame.line[:300]}" if frame else None)
    others = [_with_reading(_parse(f"{name} ({engine.value} run)", spoken, lines, crashed=False, hits=hits, only=engine,
                                   first=first, whole=whole), whole, hits, None, source)
              for engine, reading in lines.readings.items() if engine is not main.runtime and reading.samples]
    return [main, *others]


def _fields(sample: Sample) -> set[tuple[str, str]]:
    """What one summary line tells, by its format: a figure told again starts another summary."""
    f = sample.figures
    names = {n for n in ("accepted", "drafted", "steps", "acceptance", "mean_length", "spec_tokens", "speed", "setting")
             if getattr(f, n) is not None}  # a named row or line is a run of its own
    if f.per_position:
        names.add(f"position {f.at}" if f.at is not None else "per-position")
    return {(sample.format.name, n) for n in names}


def _summary_runs(lines: LogLines) -> list[tuple[int, LogLines]]:
    """The runs of a text whose figures are summaries told more than once with no start line between them (two
    `vllm bench` results one after the other, a table with a run per row): (first line, its lines) per run; one
    entry or none when the figures make one run. Only where every figure line of the engine is a summary's."""
    reading = max(lines.readings.values(), key=lambda r: len(r.samples))
    if len(reading.samples) < 2 or any(s.format.scope is not Scope.summary for s in reading.samples):
        return []
    blocks: list[list[Sample]] = [[]]
    told: set[tuple[str, str]] = set()
    for sample in reading.samples:
        fields = _fields(sample)
        if fields & told:
            blocks.append([])
            told = set()
        blocks[-1].append(sample)
        told |= fields
    if len(blocks) < 2:
        return []
    runs = []
    for block in blocks:
        readings = dict(lines.readings)
        readings[reading.engine.engine] = replace(reading, samples=block)
        runs.append((block[0].number, replace(lines, readings=readings)))
    return runs


def _with_reading(evidence: LogEvidence, whole: _Whole, hits: Scan, crash: Crash | None, source: str) -> LogEvidence:
    text = whole.text
    evidence.scan, evidence.messages = hits, [h.seen() for h in hits.hits[:_SHOWN_MESSAGES]]
    evidence.engine_line = _engine_line(evidence, hits)
    evidence.source = source
    evidence.run = _with_signs(whole.run, hits)
    evidence.mtp_use, evidence.app = evidence.run.mtp, evidence.run.app or hits.app
    evidence.telling = [f"line {h.number}: {h.line}" for h in hits.of(Meaning.mtp_failure)][:4]
    evidence.crash = crash
    # llama-server changes only make sense for a llama.cpp log; other engines get their own advice (advice.py).
    evidence.suggested = suggest(crash, text) if crash and evidence.runtime is Engine.llama_cpp else []
    return evidence


def _parse(file: str, text: str, lines: LogLines, *, crashed: bool, hits: Scan, first: int, whole: _Whole,
           only: Engine | None = None) -> LogEvidence:
    readings = lines.readings
    if only is not None:
        readings = {only: readings[only]}
    if not any(r.samples for r in readings.values()) and METRIC_SAMPLE.search(text):
        return _metrics(file, text)
    reading = _engine(readings, text, crashed=crashed, writer=hits.writer)
    unreadable = [line for r in readings.values() for line in r.unreadable]
    if reading is None:
        if not hits.hits:
            skipped = f"; skipped {unreadable_note(unreadable)}" if unreadable else ""
            raise FormatError(f"{file}: no line means anything to this tool (it reads {kinds_read()})" + skipped)
        return _fragment(file, hits, lines.lines)
    evidence = LogEvidence(path=file, kind=reading.engine.kind, runtime=reading.engine.engine,
                           skipped_lines=lines.unread if lines.unread < lines.lines else 0, unreadable=unreadable)
    _set_figures(evidence, reading, first)
    if reading.engine.engine is Engine.llama_cpp:
        _llama_settings(evidence, reading, whole, first)
    else:
        _engine_settings(evidence, reading, first)
    return evidence


def unreadable_note(lines: list[str]) -> str:
    """The metrics lines skipped because their figures are not numbers, named (the first one quoted)."""
    return f"{len(lines)} metrics line(s) whose figures are not numbers, as {shown(lines[0].strip())}"


# A Python exception's line ("RuntimeError: CUDA error: out of memory", PyTorch's): a Python program's crash, not ggml's.
_PYTHON_EXCEPTION = re.compile(r"^\s*(?:\([^()\n]{1,80}\)\s*|\[[^\[\]\n]{1,80}\]:?\s*){0,2}(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):")


def other_program(crash: Crash) -> bool:
    """The shell's death line names a command that runs no engine, app or container (voices.engine_command), or a C
    library's assert names a program and source that are no engine's (voices.assert_program): another program died
    (an image script's segfault, a graph tool's assert on ``node.nextn``), whatever the text's other lines say."""
    return dying_program(crash) is not None


def dying_program(crash: Crash) -> str | None:
    """The program another than an engine that the crash's own lines say died (see other_program), None otherwise."""
    if crash.command is not None:
        return None if engine_command(crash.command) else crash.command
    return next((p for p in map(assert_program, crash.lines) if p is not None), None)


def crash_owner(crash: Crash, text: str) -> str | None:
    """Whose crash it is when it is another program's, as the words that say so: the shell's death line or a C
    library's assert naming a program no engine is (dying_program), a musl or MSVC assert naming a source file no
    engine has (voices.assert_file), a native backtrace whose frames name source files and none of an engine's
    (voices.foreign_frames: a tool's gdb session, a sanitizer's report, a Go program's panic). None: the engine's, or
    nothing says."""
    program = dying_program(crash)
    if program is not None:
        said = "the shell's line" if crash.command is not None else "its assert line"
        return f"{said} says `{program[:120]}` died, which runs no engine"
    if crash.command is not None:
        return None
    file = next((f for f in map(assert_file, crash.lines) if f is not None), None)
    if file is not None:
        return f"its assert names `{file[:120]}`, no engine's source"
    if crash.where is not None and engine_source(crash.where):
        return None
    # The prompt line just above a crash that names nothing of an engine's runs the program that died: a binary of its
    # own (a map generator's uncaught exception) is another program's.
    if not any(engine_source(line) for line in crash.lines):
        command = next((c for c in map(prompt_command, reversed(crash.lines)) if c is not None), None)
        program = own_program(command) if command is not None else None
        if program is not None:
            return f"the prompt above it runs `{program[:120]}`, which is no engine"
    frames = foreign_frames(text)
    return f"its frames are in `{frames[:120]}` and none is an engine's" if frames is not None else None


def _python_crash(crash: Crash) -> bool:
    """A crash told only by a Python exception's text (PyTorch's "RuntimeError: CUDA error: ..."): every line that holds
    its message is a Python exception's, and none is ggml's own (its GPU errors go on "current device: 0, in function
    ... at ggml-cuda.cu"): no sign of llama.cpp, which is not a Python program."""
    telling = [line for line in crash.lines if crash.message and crash.message in line]
    return bool(telling) and all(_PYTHON_EXCEPTION.match(line) for line in telling) and \
        not any("ggml" in line for line in crash.lines)


def _engine(readings: dict[Engine, Reading], text: str, *, crashed: bool, writer: Engine | None) -> Reading | None:
    """The engine whose metrics lines the log holds, else whose own lines it shows, else the one the catalogue's
    lines name (catalogue.py); llama.cpp by default for a text that names llama or crashed."""
    with_figures = [r for r in readings.values() if r.samples]
    if with_figures:
        return max(with_figures, key=lambda r: (len(r.samples), r.marks))
    marked = [r for r in readings.values() if r.marks]
    if marked:
        return max(marked, key=lambda r: (r.marks + len(r.failures)))
    # A failure line alone ("Segmentation fault", which Python's faulthandler prints too) yields to the writer the
    # catalogue's lines name (a vLLM or SGLang traceback's module paths).
    if writer is not None and writer in readings:
        return readings[writer]
    failed = [r for r in readings.values() if r.failures]
    if failed:
        return max(failed, key=lambda r: len(r.failures))
    llama = readings[Engine.llama_cpp]
    if crashed or llama.settings or unused_nextn_tensors(text) or _NAMES_LLAMA.search(text):
        return llama
    return None


def _fragment(file: str, hits: Scan, lines: int) -> LogEvidence:
    """A text no engine's log format recognises, read from the lines that mean something (a traceback's tail,
    an app's error line): whose it is when they say, else unknown."""
    runtime = hits.writer or Engine.unknown  # its lines' words weighed (catalogue.Scan.writer): unknown when none names one
    evidence = LogEvidence(path=file, kind=LogKind.fragment, runtime=runtime,
                           skipped_lines=max(lines - len({h.number for h in hits.hits}), 0))
    failing = hits.first(Meaning.mtp_failure) or hits.first(Meaning.app_refusal) or hits.first(Meaning.engine_gap) \
        or hits.first(Meaning.exception)
    evidence.failure = failing.line if failing is not None else None
    return evidence


def _engine_line(evidence: LogEvidence, hits: Scan) -> str | None:
    """The line that named the run's engine: the weightiest line of the engine the text's hits name (catalogue.Scan), else
    the first figure line of the engine's own format; None where the engine is a default (a bare table) or unknown."""
    line = hits.writer_line
    if line is not None and line.message.engine is evidence.runtime:
        return f"line {line.number}: {line.line[:200]} ({line.message.means})"
    if evidence.draft_lines and evidence.formats and evidence.runtime is not Engine.unknown and \
            not evidence.formats[0].startswith(("acceptance figures by their words", "table with", "results listed")):
        return f"{evidence.draft_lines[0][:200]} ({evidence.formats[0]})"
    return None


def _with_signs(run: RunFacts, hits: Scan) -> RunFacts:
    """The run's facts with the catalogue's signs of MTP (a fork's flag, an MTP drafter class in a traceback, an
    MTP failure line): a line that only an MTP run prints outweighs a command line that shows no known MTP flag."""
    sign = hits.mtp_sign
    if sign is None or run.mtp is MtpUse.on:
        return run
    return replace(run, mtp=MtpUse.on, evidence=sign.line[:300])


def _set_figures(evidence: LogEvidence, reading: Reading, first: int) -> None:
    stats = [s for s in reading.samples if s.format.scope is Scope.server]
    by_format: dict[LineFormat, list[Sample]] = {}
    for sample in reading.samples:
        if sample.format.scope is not Scope.server:
            by_format.setdefault(sample.format, []).append(sample)
    sources = {fmt: combine([s.figures for s in samples], fmt.scope) for fmt, samples in by_format.items()}
    if sources:
        # The richest source, then the one with more lines; the rest are named but not added.
        order = list(sources)
        chosen = max(order, key=lambda f: (-len(sources[f].missing), len(by_format[f]), -order.index(f)))
        figures = _fill_from_statistics(evidence, sources[chosen], stats)
        lines = [_cited(s, first) for s in by_format[chosen]]
        evidence.formats = [chosen.name, *(f.name for f in order if f is not chosen)]
        evidence.derived += [f"also {f.name} ({len(by_format[f])} line(s)), not added: another source of figures"
                             for f in order if f is not chosen]
    elif stats:
        figures, lines = combine([s.figures for s in stats], Scope.server), [_cited(s, first) for s in stats]
        evidence.derived.append("figures are totals since the server started (statistics lines), over every request")
    else:
        return
    if stats:
        evidence.formats.append(stats[0].format.name)
        evidence.statistics = list({s.figures.label: s.figures for s in stats}.values())
    evidence.samples = list(reading.samples)
    evidence.draft_lines = lines[:_EVIDENCE_LINES]
    _take(evidence, figures)


def _cited_line(text: str, wanted: tuple[str, ...], first: int) -> str | None:
    """"line N: TEXT" for the first of ``wanted`` the text holds (its number in the file), None when none is found."""
    for line in wanted:
        at = text.find(line.strip()) if line.strip() else -1
        if at >= 0:
            return f"line {text.count(chr(10), 0, at) + first}: {line.strip()[:300]}"
    return None


def _cited(sample: Sample, first: int) -> str:
    """A figure line as evidence: its line number in the file, then the line."""
    return f"line {sample.number + first - 1}: {sample.line}" if sample.number else sample.line


def _fill_from_statistics(evidence: LogEvidence, figures: Figures, stats: list[Sample]) -> Figures:
    """Mean length (and per-position rates) from the statistics lines, when they count exactly the same tokens."""
    total = combine([s.figures for s in stats], Scope.server)
    complete = figures.mean_length is not None and bool(figures.per_position)
    if complete or not total.steps or (total.accepted, total.drafted) != (figures.accepted, figures.drafted):
        return figures
    if figures.mean_length is None:
        evidence.derived.append(
            f"mean length {total.mean_length:.2f} = 1 + {total.accepted}/{total.steps} drafts, from the statistics line "
            "(it counts the same tokens as the acceptance lines)")
    return replace(figures, steps=total.steps, per_position=figures.per_position or total.per_position,
                   mean_length=figures.mean_length if figures.mean_length is not None else total.mean_length)


def _take(evidence: LogEvidence, figures: Figures) -> None:
    if figures.mean_length is None and figures.per_position:
        # Per-position rates are accepted-at-position / steps, so they add up to the accepted tokens per step.
        figures = replace(figures, mean_length=1 + sum(figures.per_position))
        evidence.derived.append(f"mean length {figures.mean_length:.2f} = 1 + the sum of the per-position rates")
    evidence.accepted, evidence.drafted, evidence.drafts = figures.accepted, figures.drafted, figures.steps
    evidence.acceptance, evidence.mean_length = figures.acceptance, figures.mean_length
    evidence.per_position = figures.per_position
    evidence.spec_tokens = figures.spec_tokens
    evidence.speed, evidence.setting, evidence.baseline = figures.speed, figures.setting, figures.baseline
    evidence.group, evidence.speed_unit = figures.group, figures.unit
    evidence.missing = list(figures.missing)


def _metrics(path: str, text: str) -> LogEvidence:
    # Comments and blank lines aside, a saved page must be all samples: a log that quotes one is not a page.
    page = exposition_text(text)
    try:
        metrics = parse_metrics(page)
    except FormatError as exc:
        raise FormatError(f"{path}: looks like a /metrics page but {exc}") from None
    runtime = {"llamacpp": Engine.llama_cpp}.get(metrics.source) or Engine(metrics.source)

    def counter(name: str, value: float) -> int | None:
        return int(value) if metrics.has(name) else None

    steps = counter("spec_decode_num_drafts", metrics.drafts)
    figures = with_ratios(Figures(
        accepted=counter("spec_decode_num_accepted_tokens", metrics.accepted_tokens),
        drafted=counter("spec_decode_num_draft_tokens", metrics.draft_tokens),
        steps=steps,
        acceptance=metrics.reported_acceptance,
        mean_length=metrics.reported_mean_length,
        per_position=metrics.per_position_rates() if steps else (),
    ))
    evidence = LogEvidence(path=path, kind=LogKind.metrics, runtime=runtime)
    evidence.formats = ["Prometheus query table (pasted)" if page != text else "Prometheus /metrics samples"]
    evidence.draft_lines = [f"{k} {v:g}" for k, v in metrics.raw.items() if "spec" in k][:8]
    _take(evidence, figures)
    return evidence


def _llama_settings(evidence: LogEvidence, reading: Reading, whole: _Whole, first: int) -> None:
    evidence.unused_nextn = whole.unused_nextn
    evidence.unused_nextn_line = whole.unused_nextn_line(first)
    evidence.mtp_context = reading.setting("mtp_context")
    if reading.failures and reading.engine.failure_of is not None:
        evidence.failure = whole.failure_of(reading.engine.failure_of)
    evidence.architecture = reading.setting("architecture")
    n_ctx = reading.setting("n_ctx")
    evidence.n_ctx = int(n_ctx) if n_ctx else None
    ends = [(int(v["n_tokens"]), v["truncated"] == "1") for v in reading.settings.get("request_end", [])]
    if ends:
        evidence.max_tokens = max(n for n, _ in ends)
        evidence.truncated = any(t for _, t in ends)
    offered = reading.setting("offered_spec_types")
    evidence.offered_spec_types = tuple(re.split(r"[|,]", offered)) if offered else None
    timed = [(int(v["n"]), float(v["value"])) for v in reading.settings.get("decode_speed", []) if float(v["value"]) > 0]
    run_speed = reading.settings.get("run_speed")
    if evidence.speed is None and run_speed and float(run_speed[0]["value"]) > 0:  # the example's own, of the whole run
        shown = run_speed[0]
        evidence.speed = float(shown["value"])
        evidence.speed_line = (f"line {int(shown['at']) + first - 1}: {shown['n']} tokens decoded at {shown['value']} t/s "
                               "(examples/speculative's own timing of the run)")
    elif evidence.speed is None and timed:  # the requests' tokens over their summed decode time
        evidence.speed = sum(n for n, _ in timed) / sum(n / speed for n, speed in timed) if sum(n for n, _ in timed) else None
        shown = reading.settings["decode_speed"][0]
        evidence.speed_line = (f"line {int(shown['at']) + first - 1}: eval time: {shown['n']} tokens, {shown['value']} tokens per "
                               f"second (server-timed; {len(timed)} request(s): {evidence.speed:.2f} tokens per second)")


def _engine_settings(evidence: LogEvidence, reading: Reading, first: int) -> None:
    evidence.failure = reading.failures[0] if reading.failures else None
    busy = [v for v in reading.settings.get("decode_speed", []) if float(v["value"]) > 0]  # idle intervals print 0.0
    if evidence.speed is None and busy:
        evidence.speed = sum(float(v["value"]) for v in busy) / len(busy)
        evidence.speed_line = (f"line {int(busy[0]['at']) + first - 1}: Avg generation throughput: {busy[0]['value']} tokens/s "
                               f"(server-reported per logging interval; {len(busy)} interval(s): {evidence.speed:.1f} tokens/s)")
    evidence.engine_version = reading.setting("engine_version")
    quantization = reading.setting("quantization")
    evidence.quantization = None if quantization in (None, "None") else quantization
    evidence.model_name = reading.setting("model_name")
    evidence.draft_model = reading.setting("draft_model")
    evidence.spec_method = reading.setting("spec_method")
    evidence.kv_cache_dtype = reading.setting("kv_cache_dtype")
    tokens = reading.setting("spec_tokens")
    if tokens is not None:
        evidence.spec_tokens = int(tokens)
    elif evidence.spec_tokens is None and evidence.per_position:
        evidence.spec_tokens = len(evidence.per_position)  # vLLM prints one rate per drafted position


def _runs_apart(rows: list[Sample]) -> bool:
    """Whether a table's rows are runs of their own (its first column names what changed: a backend, a build, a model)
    and one of them shows its drafts' acceptance: beside the engine's own figure lines (the run the poster compares
    them with, "HIP: 81%" above "Vulkan: 0.7%") they are other runs, judged apart, never added to the log's figures."""
    return all(row.format is TABLE_RUNS_FORMAT for row in rows) and \
        any(row.figures.acceptance is not None or row.figures.mean_length is not None for row in rows)
