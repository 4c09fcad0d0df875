"""The lines each engine prints about speculative decoding, as tables: what a line looks like, what it yields.

One table per engine (:data:`LLAMA_CPP`, :data:`VLLM`, :data:`SGLANG`), each an :class:`EngineLog`:

- ``marks``: lines that only this engine prints (its log prefix, its banner), to tell whose log it is;
- ``figures``: its metrics lines (:class:`LineFormat`). Each is a small pattern whose named groups say
  what the numbers are (:meth:`Figures.of` is the one place that gives them meaning): ``acc`` accepted
  draft tokens, ``gen`` drafted tokens, ``steps`` drafts (verification steps with a draft), ``rate``
  acceptance as a fraction and ``pct`` in percent, ``len`` mean acceptance length (tokens per step,
  the target's own included), ``pos`` / ``pos_pct`` per-position acceptance as a list (``pos_any``:
  either, told by its values), ``at`` with ``at_rate`` / ``at_pct`` one position of it, ``k`` draft tokens per step, ``label`` the drafting
  implementation. Its :class:`Scope` says how lines add up (per request, per logging interval,
  running totals, per-server totals, fields of one summary);
- ``settings``: lines that show how the run was set up (engine version, drafting method, draft
  model, quantization, KV cache type, the build's ``--spec-type`` list, context size, ...);
- ``failures``: lines that say the MTP configuration did not start.

The formats are the ones users paste, collected in cases/logs/ (its README's "Formats" section gives
each one with an example, per engine and version); every file there is a test. Lines are matched
after the prefixes around them are removed (:data:`LINE_PREFIXES`), and a pattern is tried only on
lines that hold one of its ``keys`` literally, so a large log costs a few substring tests per line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

from mtpinspect.logread.run_facts import LM_STUDIO_LINE, OLLAMA_LINE
from mtpinspect.runtime.logs import DRAFT_LINE, PER_POSITION_LINE, failure_reason
from mtpinspect.vocabulary import Engine, LogKind, Word

# The figures a diagnosis reads, in the words reports use when one is missing.
FIGURE_NAMES = ("accepted", "drafted", "acceptance", "mean length", "per-position")


class Scope(Word):
    """What the figures of one line cover, and so how lines add up."""

    request = "request"  # one request, printed when it ends (llama.cpp): summed over requests
    interval = "interval"  # one logging interval (vLLM V1, SGLang): summed over intervals
    running = "running"  # totals since the server started (vLLM V0): the last line is the total
    server = "server"  # totals since start per drafting implementation (llama.cpp statistics): kept apart
    summary = "summary"  # one field of a summary block (vllm bench serve, spec_decode.py): fields merge
    addendum = "addendum"  # completes the line before it (llama.cpp's per-position TRACE line at -lv 4)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _has_key(line: str, keys: tuple[str, ...]) -> bool:
    # A loop, not any(<genexpr>): this runs for every line of a log of hundreds of MB.
    for key in keys:
        if key in line:
            return True
    return False


def _floats(text: str, scale: float = 1.0) -> tuple[float, ...]:
    return tuple(float(p) / scale for p in re.split(r"[,\s]+", text.strip()) if p)


@dataclass(frozen=True, slots=True)
class Figures:
    """What one line (or lines added up) says about drafting; None where it says nothing."""

    accepted: int | None = None
    drafted: int | None = None
    steps: int | None = None  # drafts: verification steps that carried a draft
    acceptance: float | None = None  # accepted / drafted, as printed or computed
    mean_length: float | None = None  # tokens per verification step, the target's own included
    per_position: tuple[float, ...] = ()  # share of steps that accepted the draft token at each position
    at: int | None = None  # the position a one-position line is about
    spec_tokens: int | None = None
    label: str | None = None  # the drafting implementation (llama.cpp statistics)
    speed: float | None = None  # decode tokens per second as the paste prints it (a comparison table's row)
    setting: str | None = None  # what a comparison table's row names (its first cell: a configuration, a backend)
    baseline: bool = False  # that row runs without speculative decoding
    unit: str | None = None  # the speed's unit where it is not tokens per second ("x": a speed-up, the baseline 1)
    group: str | None = None  # what the runs compared with this one must share (a table's batch size, prompt); None: one

    @classmethod
    def of(cls, groups: Mapping[str, str]) -> Figures:
        """What a match's named groups mean (see the module docstring for the names)."""
        number = {name: int(groups[name]) for name in ("acc", "gen", "steps", "k", "at") if name in groups}
        rate = float(groups["rate"]) if "rate" in groups else float(groups["pct"]) / 100 if "pct" in groups else None
        positions: tuple[float, ...] = ()
        if "pos" in groups:
            positions = _floats(groups["pos"])
        elif "pos_pct" in groups:
            positions = _floats(groups["pos_pct"], 100)
        elif "pos_any" in groups:  # fractions, or percents where one is above 1 (a share of steps never is)
            positions = _floats(groups["pos_any"])
            positions = _floats(groups["pos_any"], 100) if positions and max(positions) > 1 else positions
        elif "at_rate" in groups:
            positions = (float(groups["at_rate"]),)
        elif "at_pct" in groups:
            positions = (float(groups["at_pct"]) / 100,)
        return cls(
            accepted=number.get("acc"), drafted=number.get("gen"), steps=number.get("steps"), acceptance=rate,
            mean_length=float(groups["len"]) if "len" in groups else None, per_position=positions,
            at=number.get("at"), spec_tokens=number.get("k"), label=groups.get("label"),
        )

    @property
    def missing(self) -> tuple[str, ...]:
        """The FIGURE_NAMES these figures lack."""
        present = (self.accepted, self.drafted, self.acceptance, self.mean_length, self.per_position or None)
        return tuple(name for name, value in zip(FIGURE_NAMES, present) if value is None)


@dataclass(frozen=True)
class LineFormat:
    """One kind of metrics line: it is of this format when ``pattern`` matches; ``fields`` (when given)
    are searched one by one, for lines users paste in part."""

    name: str
    scope: Scope
    keys: tuple[str, ...]
    pattern: re.Pattern[str]
    fields: tuple[re.Pattern[str], ...] = ()

    def read(self, line: str) -> Figures | None:
        if not _has_key(line, self.keys):
            return None
        match = self.pattern.search(line)
        if match is None:
            return None
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        for pattern in self.fields:
            found = pattern.search(line)
            if found is not None:
                groups.update((k, v) for k, v in found.groupdict().items() if v is not None)
        return Figures.of(groups) if groups else None


@dataclass(frozen=True)
class Setting:
    """A line that shows one setting of the run; the named groups are its value(s). The first such line
    counts, unless ``every`` (e.g. each request's end)."""

    name: str
    keys: tuple[str, ...]
    pattern: re.Pattern[str]
    every: bool = False

    def read(self, line: str) -> dict[str, str] | None:
        if not _has_key(line, self.keys):
            return None
        match = self.pattern.search(line)
        return None if match is None else {k: v for k, v in match.groupdict().items() if v is not None}


@dataclass(frozen=True)
class Mark:
    """A line only one engine prints (or, among failures, a line that says a start failed)."""

    keys: tuple[str, ...]
    pattern: re.Pattern[str]

    def search(self, line: str) -> re.Match[str] | None:
        return self.pattern.search(line) if _has_key(line, self.keys) else None


@dataclass(frozen=True)
class EngineLog:
    engine: Engine
    kind: LogKind
    marks: tuple[Mark, ...]
    figures: tuple[LineFormat, ...]
    settings: tuple[Setting, ...]
    failures: tuple[Mark, ...]
    # The failed start in one line, from the whole text, once a failure line was seen (None: the line itself).
    failure_of: Callable[[str], str | None] | None = None

    @cached_property
    def keys(self) -> re.Pattern[str]:
        """Any key of the figures, settings and failures: a line without one is none of them."""
        keys = {k for item in (*self.figures, *self.settings, *self.failures) for k in item.keys}
        return re.compile("|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)))


# Removed from the front of each line, in any combination, before formats are matched.
LINE_PREFIXES = re.compile(
    r"^(?:"
    r"[\w.-]+\s+\|\s"  # docker compose service: "llama-cpp       | "
    r"|>\s"  # a Markdown quote around the paste: "> Jun 05 ..."
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+\[\d+\]:\s"  # journald: "Jun 11 10:21:39 ws llama-server[239570]: "
    r"|(?:Loading model\.\.\. )?[|\\/-](?=\d+\.\d{2}\.\d{3}\.\d{3}\s)"  # llama-cli's spinner before a timestamp
    r"|\[\d+\]\s"  # llama-server router child: "[53409] "
    r"|\[rank\d+\]:\s"  # torch.distributed's worker prefix: "[rank0]: AssertionError: ..."
    r"|\d+\.\d{2}\.\d{3}\.\d{3}\s(?:[IWEDT]\s)?"  # llama.cpp timestamp (+ level): "0.06.895.980 I "
    r"|[IWEDT]\s(?=\S)"  # llama.cpp level letter alone: "I slot ..."
    r"|\(\w+(?: rank=\d+)? pid=\d+\)\s"  # vLLM process: "(APIServer pid=1) "
    r"|\"(?=(?:INFO|WARNING|ERROR|DEBUG)\s)"  # a log viewer's CSV export: each line in quotes ("ERROR 07-02 ...")
    r"|(?:INFO|WARNING|ERROR|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d\s+\[?[\w./-]+:\d+\]\s?"  # vLLM logger
    r"|\[[\w./-]+\.py:\d+\]\s"  # vLLM logger cut by the user: " [metrics.py:96] "
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\]\s"  # SGLang: "[2025-10-22 10:27:57 TP0] "
    r"|\[(?:DP\d{1,4} )?TP\d{1,4}(?: EP\d{1,4})?(?: PP\d{1,4})?\]\s"  # SGLang's rank tag, its time cut: "[TP0] ", "[DP1 TP0] "
    # DJL Serving's Python engine forwards its worker's output under "LEVEL  PyProcess W-PID-MODEL-stdout: " (engines/python
    # .../PyProcess.java, its ReaderThread named "W-" + pid + "-" + model + "-stdout"): a wrapper's tag, the line is vLLM's.
    r"|(?:[A-Z]{1,8}\s+)?PyProcess\s+W-\d{1,9}-[\w.@-]{1,120}-std(?:out|err):\s"
    r")"
)


def strip_prefixes(line: str) -> str:
    line = line.strip()
    for _ in range(6):  # compose + pid + timestamp + level at most, in practice
        bare = LINE_PREFIXES.sub("", line, count=1).lstrip()
        if bare == line:
            break
        line = bare
    return line


# -- llama.cpp (llama-server, llama-cli, llama-speculative-simple) ---------------------------------------

LLAMA_CPP = EngineLog(
    engine=Engine.llama_cpp,
    kind=LogKind.llama_server,
    marks=(
        Mark(("slot ", "srv ", "llama_", "print_info", "load_tensors", "ggml_", "common_"),
             _rx(r"^(?:slot\s+\w+: id\s+\d+ \||srv\s+\w+:|llama_\w+:|print_info:|load_tensors:|ggml_\w+:|common_\w+:)")),
        # Ollama (Go slog around llama-server's lines, which it starts with --no-log-prefix --no-log-timestamps:
        # llm/llama_server.go) and LM Studio (its llama-server build's LMSTUDIO_STARTUP_ERROR) run llama.cpp.
        Mark(("time=", ".go:", "ollama"), OLLAMA_LINE),
        Mark(("LMSTUDIO", "Engine protocol", "lmstudio"), LM_STUDIO_LINE),
    ),
    figures=(
        # L1-L4: "draft acceptance rate = 0.69953 (  149 accepted /   213 generated)" (PR #22673 era),
        # "draft acceptance = ... (...)" alone (about June 2026), with ", mean acceptance length = 2.92,
        # acceptance rate per position = (...)" (PR #24536 at review) or ", mean len =  4.30" (current).
        LineFormat("llama.cpp draft acceptance (per request)", Scope.request, ("draft acceptance",), DRAFT_LINE),
        LineFormat("llama.cpp acc per pos (-lv 4)", Scope.addendum, ("acc per pos",), PER_POSITION_LINE),
        # L5: cumulative per server and implementation ("mtp" on the pre-upstream branch, "draft-mtp",
        # "ngram-mod", ...); newer builds add the mean length and per-position rates.
        LineFormat(
            "llama.cpp statistics (per server and implementation)", Scope.server, ("#calls(b,g,a)",),
            _rx(r"statistics\s+(?P<label>[\w-]+):\s*#calls\(b,g,a\)\s*=\s*\d+\s+\d+\s+\d+,\s*#gen drafts\s*=\s*(?P<steps>\d+),"
                r"\s*#acc drafts\s*=\s*\d+,\s*#gen tokens\s*=\s*(?P<gen>\d+),\s*#acc tokens\s*=\s*(?P<acc>\d+)"
                r"(?:,\s*#mean acc len\s*=\s*(?P<len>[\d.]+))?(?:,\s*#acc rate/pos\s*=\s*\((?P<pos>[^)]*)\))?"),
        ),
        # examples/speculative's summary (llama-speculative, ./speculative before the rename): one field a line.
        LineFormat("llama.cpp speculative example summary", Scope.summary, ("n_drafted", "n_accept", "accept "),
                   _rx(r"^(?:n_drafted\s*=\s*(?P<gen>\d{1,15})|n_accept\s*=\s*(?P<acc>\d{1,15})|"
                       r"accept\s*=\s*(?P<pct>\d{1,3}(?:\.\d{1,12})?)%)\s*$")),
    ),
    settings=(
        Setting("architecture", ("arch",), _rx(r"(?:print_info: arch\s*=\s*|general\.architecture\s+str\s*=\s*)(?P<value>\S+)")),
        Setting("n_ctx", ("n_ctx_slot",), _rx(r"n_ctx_slot\s*=\s*(?P<value>\d+)")),
        # Each request's decode speed, server-timed: "eval time = 9840.04 ms / 200 tokens (..., 20.33 tokens per second)".
        Setting("decode_speed", ("eval time",),
                _rx(r"(?<!prompt )\beval time\s*=\s*\d{1,12}(?:\.\d{1,6})? ms /\s*(?P<n>\d{1,12}) (?:tokens|runs)\s*\("
                    r"\s*\d{1,12}(?:\.\d{1,6})? ms per token,\s*(?P<value>\d{1,9}(?:\.\d{1,6})?) tokens per second\)"),
                every=True),
        # examples/speculative's own timing of the whole decode (speculative.cpp:639 "decoded %4d tokens in %8.3f seconds,
        # speed: %8.3f t/s"; "generated" in 2023): the run's speed, where its llama_print_timings time draft and target apart.
        Setting("run_speed", ("seconds, speed:",),
                _rx(r"^(?:decoded|generated)\s+(?P<n>\d{1,12}) tokens in\s+\d{1,12}(?:\.\d{1,6})? seconds, speed:\s+"
                    r"(?P<value>\d{1,9}(?:\.\d{1,6})?) t/s")),
        Setting("request_end", ("stop processing",), _rx(r"stop processing: n_tokens = (?P<n_tokens>\d+), truncated = (?P<truncated>\d)"),
                every=True),
        Setting("mtp_context", ("MTP draft context", "loading draft model", "adding speculative implementation"),
                _rx(r"(?P<value>creating MTP draft context|loading draft model '[^']*'|adding speculative implementation 'draft-mtp')")),
        # The usage text printed after a rejected argument lists the build's types: "[none|ngram-cache|...]"
        # before MTP support (PR #22673), "none,draft-simple,draft-eagle3,draft-mtp,..." since.
        # A listing names several types; "--spec-type mtp" alone is a command's flag, not the build's list.
        Setting("offered_spec_types", ("--spec-type",),
                _rx(r"^--spec-type\s+\[?(?P<value>[a-z0-9][a-z0-9-]*(?:[|,][a-z0-9-]+)+)\]?(?:\s|$)")),
    ),
    failures=(
        Mark(("exiting due to", "GGML_ASSERT", "error while handling", "failed to", "terminate called", "GGML_ABORT",
              "Segmentation fault", "error: invalid argument", "the argument has been removed"),
             _rx(r"exiting due to|GGML_ASSERT|error while handling argument|failed to load model|failed to create MTP context|"
                 r"terminate called|GGML_ABORT|Segmentation fault|error: invalid argument|the argument has been removed")),
        # src/llama-context.cpp: a Gemma 4 assistant drafter's context needs the target's (ctx_other);
        # the loader's std::out_of_range (src/llama-model.cpp) while loading a draft or MTP head.
        Mark(("ctx_other", "invalid vector subscript", "failed to load MTP head"),
             _rx(r"Gemma4Assistant requires ctx_other to be set|error loading model: invalid vector subscript|"
                 r"failed to load MTP head from '[^']*'")),
    ),
    failure_of=failure_reason,
)

# -- vLLM ---------------------------------------------------------------------------------------------

_V1_FIELDS = (
    _rx(r"Draft acceptance rate: (?P<pct>[\d.]+)%"),  # also "Avg Draft acceptance rate: 0.7%"
    _rx(r"Mean acceptance length: (?P<len>[\d.]+)"),
    _rx(r"Accepted: (?P<acc>\d+) tokens"),
    _rx(r"Drafted: (?P<gen>\d+) tokens"),
    _rx(r"Per-position acceptance rate: (?P<pos>\d[\d.]*(?:,\s*\d[\d.]*)*)"),
)
_V0_FIELDS = (
    _rx(r"Draft acceptance rate: (?P<rate>[\d.]+),"),
    _rx(r"Number of speculative tokens: (?P<k>\d+)"),
    _rx(r"Number of accepted tokens: (?P<acc>\d+)"),
    _rx(r"Number of draft tokens(?: tokens)?: (?P<gen>\d+)"),  # vLLM 0.5.x printed "tokens tokens"
)

VLLM = EngineLog(
    engine=Engine.vllm,
    kind=LogKind.vllm,
    marks=(
        Mark((" pid=",), _rx(r"\((?:APIServer|EngineCore\w*|Worker\w*|VllmWorker rank=\d+) pid=\d+\) (?:INFO|WARNING|ERROR|DEBUG)")),
        Mark((".py:",), _rx(r"(?:INFO|WARNING|ERROR|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d\s+\[?[\w./-]+\.py:\d+\]")),
        Mark(("LLM engine", "vLLM API server"), _rx(r"Initializing a V\d LLM engine|vLLM API server version")),
        Mark(("Speculative Decoding",), _rx(r"^-+Speculative Decoding-+$")),
        Mark(("vllm serve",), _rx(r"\bvllm serve\b")),
        # benchmarks/benchmark_serving.py's (and `vllm bench serve`'s) result banner; SGLang's bench_serving prints the
        # same banner over its "Backend:" and "Traffic request rate:" lines, two marks of its own (below).
        Mark(("Serving Benchmark Result",), _rx(r"^=+ Serving Benchmark Result =+$")),
        # vllm/model_executor/model_loader/default_loader.py raises this after loading; vllm/config/model.py
        # (verify_with_parallel_config) the other, for a model class without SupportsPP.
        Mark(("not initialized from checkpoint",), _rx(r"Following weights were not initialized from checkpoint")),
        Mark(("Pipeline parallelism",), _rx(r"Pipeline parallelism is not supported for this model")),
    ),
    figures=(
        # V0 engine (e.g. 0.6.3): running totals, acceptance as a fraction.
        LineFormat("vLLM V0 Speculative metrics (running totals)", Scope.running, ("System efficiency",),
                   _rx(r"Speculative metrics: .*System efficiency"), _V0_FIELDS),
        # Early V1 (before PR #15902, April 2025): per interval, fraction, trailing comma.
        LineFormat("vLLM V1 Speculative metrics (before PR #15902)", Scope.interval, ("Speculative metrics:",),
                   _rx(r"Speculative metrics: Draft acceptance rate"), _V0_FIELDS),
        # V1 after PR #15902, in every field order since (rate first with throughputs, PR #24127; mean length
        # first with "Avg Draft acceptance rate" last), and the fields pasted on their own lines.
        LineFormat("vLLM V1 SpecDecoding metrics", Scope.interval,
                   ("SpecDecoding metrics", "Mean acceptance length:", "Per-position acceptance rate:", "Avg Draft acceptance rate:"),
                   _rx(r"SpecDecoding metrics:|^Mean acceptance length: |^Per-position acceptance rate: |^Avg Draft acceptance rate: "),
                   _V1_FIELDS),
        # `vllm bench serve` (client side): one field per line under "----Speculative Decoding----".
        LineFormat("vllm bench serve summary", Scope.summary,
                   ("Acceptance rate (%):", "Acceptance length:", "Drafts:", "Draft tokens:", "Accepted tokens:", "Position "),
                   _rx(r"^(?:Acceptance rate \(%\):\s+(?P<pct>[\d.]+)|Acceptance length:\s+(?P<len>[\d.]+)|Drafts:\s+(?P<steps>\d+)|"
                       r"Draft tokens:\s+(?P<gen>\d+)|Accepted tokens:\s+(?P<acc>\d+)|Position (?P<at>\d+):\s+(?P<at_pct>[\d.]+))$")),
        # `vllm bench serve --save-result` JSON (one line), the same keys pasted as a block, a table or Markdown
        # bullets: read by their names wherever they stand (vllm/benchmarks/serve.py: the rate in percent, as
        # its "Acceptance rate (%):" line, the per-position rates as fractions, as vLLM's own test of the result
        # writes them ([1.0, 0.6, 0.2] beside a rate of 50.0), or in percent as its text block prints them: a rate
        # above 1 says which; the counts decide the acceptance where they are there).
        LineFormat("vllm bench spec_decode_* fields", Scope.summary, ("spec_decode_",),
                   _rx(r"\bspec_decode_(?:acceptance_rate|acceptance_length|num_drafts|draft_tokens|accepted_tokens|"
                       r"per_position_acceptance_rates)\b"),
                   tuple(_rx(rf"\bspec_decode_{name}\b[\"'`*]*\s*[:=|]\s*{value}") for name, value in (
                       ("acceptance_rate", r"(?P<pct>\d{1,3}(?:\.\d{1,12})?)\b"),
                       ("acceptance_length", r"(?P<len>\d{1,3}(?:\.\d{1,12})?)\b"),
                       ("num_drafts", r"(?P<steps>\d{1,15})\b"),
                       ("draft_tokens", r"(?P<gen>\d{1,15})\b"),
                       ("accepted_tokens", r"(?P<acc>\d{1,15})\b"),
                       ("per_position_acceptance_rates", r"\[(?P<pos_any>\s*\d[\d.]{0,20}(?:\s*,\s*\d[\d.]{0,20}){0,63})\s*\]"),
                   ))),
        # examples/offline_inference/spec_decode.py's summary (and test scripts that print its keys with acc_rate).
        LineFormat("vLLM spec_decode.py summary", Scope.summary,
                   ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "mean acceptance len", "acceptance at token",
                    "acc_rate:", "Pos ", "@pos"),
                   # The same keys as a script pads them into a column ("num_drafts          : 6590"), and its one position a
                   # line ("Pos 3: 0.266", "accept@pos 0 : 0.622  (4098)": a share of steps, its count after it): one list.
                   _rx(r"^(?:num_drafts\s{0,24}: (?P<steps>\d+)|num_draft_tokens\s{0,24}: (?P<gen>\d+)|"
                       r"num_accepted_tokens\s{0,24}: (?P<acc>\d+)|mean acceptance len(?:gth)?\s{0,24}: (?P<len>[\d.]+)|"
                       r"(?:acceptance at token |Pos\.? |accept(?:ance)?@pos ?)(?P<at>\d{1,2})\s{0,24}: "
                       r"(?P<at_rate>0(?:\.\d{1,12})?|1(?:\.0{1,12})?|\.\d{1,12})(?:\s{1,8}\(\d{1,12}\))?|"
                       r"acc_rate: (?P<rate>0(?:\.\d{1,20})?|1(?:\.0{1,20})?))$")),
    ),
    settings=(
        Setting("engine_version", ("LLM engine (",), _rx(r"LLM engine \(v?(?P<value>[^)\s]+)\)")),
        Setting("engine_version", ("vLLM API server version",), _rx(r"vLLM API server version v?(?P<value>\S+)")),
        # "speculative_config=SpeculativeConfig(method='mtp', model='...', num_spec_tokens=4)" (banner) or
        # "'speculative_config': {'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}" (non-default args).
        Setting("spec_method", ("speculative_config",), _rx(r"speculative_config[^)}]*?\bmethod['\"]?\s*[=:]\s*['\"](?P<value>[\w-]+)")),
        Setting("draft_model", ("speculative_config",), _rx(r"speculative_config[^)}]*?\bmodel['\"]?\s*[=:]\s*['\"](?P<value>[^'\"]+)")),
        Setting("spec_tokens", ("num_spec",), _rx(r"num_spec(?:ulative)?_tokens['\"]?\s*[=:]\s*(?P<value>\d+)")),
        Setting("model_name", ("with config: model=",), _rx(r"with config: model='(?P<value>[^']+)'")),
        Setting("model_name", ("'model': ",), _rx(r"'model': '(?P<value>[^']+)'")),
        Setting("quantization", ("quantization=",), _rx(r"\bquantization=(?P<value>[\w-]+)")),
        Setting("kv_cache_dtype", ("kv_cache_dtype=",), _rx(r"\bkv_cache_dtype=(?P<value>[\w-]+)")),
        # The engine's own decode throughput per logging interval (vllm/v1/metrics/loggers.py LoggingStatLogger):
        # server-reported, over the interval, all requests together.
        Setting("decode_speed", ("Avg generation throughput:",),
                _rx(r"Avg generation throughput: (?P<value>\d{1,9}(?:\.\d{1,6})?) tokens/s"), every=True),
    ),
    failures=(
        # Since PR #35548 the loader refuses a checkpoint without the MTP layer's weights.
        Mark(("weights missing from checkpoint",),
             _rx(r"(?:\w+Error: )?MTP speculative decoding layer \d+ weights missing from checkpoint\.")),
        # A load-time quantization check (nightlies after PR #52501) that refuses a layer it never loaded.
        Mark(("was never loaded",), _rx(r"(?:\w+Error: )?\w+ weight_scale for layer '[^']+' was never loaded \(still NaN\)\.?")),
        Mark(("not initialized from checkpoint",),
             _rx(r"(?:\w+Error: )?\**Following weights were not initialized from checkpoint\**:?\s*\{[^}\n]*\}?\.?")),
        Mark(("Pipeline parallelism",), _rx(r"(?:NotImplementedError: )?Pipeline parallelism is not supported for this model\.?")),
    ),
)

# -- SGLang -------------------------------------------------------------------------------------------

SGLANG = EngineLog(
    engine=Engine.sglang,
    kind=LogKind.sglang,
    marks=(Mark((" batch",), _rx(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] (?:Decode|Prefill) batch[.,] #")),
           # bench_serving's block names its backend; the scheduler's exception line (srt/managers/scheduler.py).
           Mark(("Backend:", "sglang."), _rx(r"^Backend:\s+sglang\b|\bsglang\.(?:bench_serving|launch_server)\b")),
           # bench_serving's rate line (vLLM's benchmark prints "Request rate configured (RPS):" instead).
           Mark(("Traffic request rate:",), _rx(r"^Traffic request rate:\s")),
           Mark(("Scheduler hit an exception",), _rx(r"Scheduler hit an exception")),
           # Its log prefix with the tensor-parallel rank: "[2025-10-22 10:27:57 TP0] " (vLLM writes "INFO mm-dd").
           Mark((" TP",), _rx(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: DP\d+)? TP\d+(?: EP\d+)?\] ")),
           # The same tag where the poster cut the time: "[TP0] ", "[DP1 TP0] " (srt/managers/scheduler.py builds the
           # logger's prefix from the ranks: " DP{dp_rank}", " TP{tp_rank}", " EP{moe_ep_rank}", " PP{pp_rank}").
           Mark(("TP",), _rx(r"^\[(?:DP\d{1,4} )?TP\d{1,4}(?: EP\d{1,4})?(?: PP\d{1,4})?\] "))),
    figures=(
        # The scheduler's decode line per logging interval: "accept len" (mean length) and, in newer
        # versions, "accept rate"; no token counts and no per-position figures.
        LineFormat("SGLang decode batch (accept len)", Scope.interval, ("accept len:",),
                   _rx(r"Decode batch[.,] .*accept len: (?P<len>[\d.]+)(?:, accept rate: (?P<rate>[\d.]+))?")),
        # The same figures where the Decode batch line was wrapped or they are quoted alone ("accept len: 3.21,
        # accept rate: 0.74" on a line of their own): read by their words.
        LineFormat("SGLang accept len (wrapped or quoted alone)", Scope.interval, ("accept len:",),
                   _rx(r"(?:^|[\s,(`'\"])accept len: (?P<len>\d{1,3}(?:\.\d{1,12})?)\b(?:,\s*accept rate: (?P<rate>[01](?:\.\d{1,12})?)\b)?")),
        # A request's meta_info (SGLang's /generate response, its sglext_spec since PR #33518), as JSON or pasted
        # keys: spec_accept_rate (accepted / proposed draft tokens), spec_accept_length (tokens per verify step, the
        # target's own included), spec_verify_ct (verify steps), spec_num_correct_drafts / spec_num_proposed_drafts
        # (accepted / drafted tokens; spec_accept_token_num / spec_draft_token_num in older versions).
        LineFormat("SGLang meta_info spec_* fields", Scope.summary, ("spec_accept_", "spec_num_", "spec_verify_ct",
                                                                      "spec_draft_token_num"),
                   _rx(r"\bspec_(?:accept_rate|accept_length|verify_ct|num_correct_drafts|num_proposed_drafts|accept_token_num|"
                       r"draft_token_num)\b"),
                   tuple(_rx(rf"\bspec_{name}\b[\"'`*]*\s*[:=|]\s*{value}") for name, value in (
                       ("accept_rate", r"(?P<rate>[01](?:\.\d{1,20})?)\b"),
                       ("accept_length", r"(?P<len>\d{1,3}(?:\.\d{1,20})?)\b"),
                       ("verify_ct", r"(?P<steps>\d{1,15})\b"),
                       ("num_correct_drafts", r"(?P<acc>\d{1,15})\b"),
                       ("num_proposed_drafts", r"(?P<gen>\d{1,15})\b"),
                       ("accept_token_num", r"(?P<acc>\d{1,15})\b"),
                       ("draft_token_num", r"(?P<gen>\d{1,15})\b"),
                   ))),
        # SGLang's benchmark/bench_speculative.py result JSON: {"batch_size", "steps", "topk", "num_draft_tokens",
        # "metrics": [{"latency", "output_throughput", "accept_length", ...}]}, one object per configuration.
        LineFormat("SGLang bench_speculative JSON", Scope.summary, ('"accept_length"',),
                   _rx(r"\"accept_length\"\s*:\s*(?P<len>\d{1,3}(?:\.\d{1,20})?)\b")),
        # sglang.bench_serving's result block: "Accept length:  2.52" (client side, the run's mean).
        LineFormat("SGLang bench_serving summary", Scope.summary, ("Accept length:",),
                   _rx(r"^Accept length:\s+(?P<len>\d{1,3}(?:\.\d{1,12})?)\s*$")),
    ),
    settings=(),
    failures=(),
)

ENGINES: tuple[EngineLog, ...] = (LLAMA_CPP, VLLM, SGLANG)

# Prometheus samples ("name{labels} value"), also as a query UI's table ("name{labels} | value", "-- | --").
# The name ends where a label set, a blank or a table's bar starts: with "\w+ ... \S+" free to split a long word
# anywhere, a 64 KB line that starts like a sample and is not one took a minute (quadratic); this is linear.
METRIC_SAMPLE = re.compile(r"^(?:llamacpp|vllm|sglang):\w+(?:\{[^}\n]*\})?(?:[ \t]+|[ \t]*\|[ \t]*)[^\s|]+[ \t]*$",
                           re.MULTILINE)
_TABLE_ROW = re.compile(r"^(?P<sample>(?:llamacpp|vllm|sglang):\w+(?:\{[^}]*\})?)\s*\|\s*(?P<value>\S+)\s*$")
_TABLE_RULE = re.compile(r"^\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+$")


def exposition_text(text: str) -> str:
    """A pasted query table as Prometheus text: "name | value" rows become "name value", rules go."""
    lines = []
    for line in text.splitlines():
        row = _TABLE_ROW.match(line.strip())
        if row is not None:
            lines.append(f"{row['sample']} {row['value']}")
        elif not _TABLE_RULE.match(line):
            lines.append(line)
    return "\n".join(lines)
