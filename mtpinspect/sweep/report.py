"""The sweep report: the typed result of a sweep, its JSON document, and how the CLI shows it.

The JSON document follows ``mtpinspect/schemas/sweep.schema.json``. People get a summary table (one
row per configuration and prompt class), the per-position acceptance next to what a constant
per-token acceptance would give, the determinism check, the synthetic cost curve when one was
measured, every failure with its one-line reason, and the recommendation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mtpinspect.cli._output import Output, OutputFormat, to_jsonable
from mtpinspect.sweep.statistics import DETERMINISM_NOTE, BreakEven, GroupStats, Recommendation

SCHEMA_ID = "https://mtpinspect.invalid/schemas/sweep.schema.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ServerInfo:
    path: str
    version: str
    backend: str
    # The baseline's command; each result carries the command of its own configuration.
    command: list[str]


@dataclass(frozen=True)
class Failure:
    configuration: str
    kind: str  # "start" (server did not come up), "crashed" (died during a run), "error" (request failed)
    reason: str
    count: int


@dataclass(frozen=True)
class RunCounts:
    planned: int
    ok: int
    failed: int
    not_run: int
    # Runs found in the journal from earlier invocations (--resume) that this report includes.
    resumed: int
    # Journal lines written with other settings (model, n_predict, seed, ...) and left out.
    ignored: int
    damaged_lines: int


@dataclass(frozen=True)
class SweepFiles:
    out_dir: str
    jsonl: str
    report: str
    plot: str | None
    logs: str


@dataclass
class SweepReport:
    model: str
    tiny_model: bool
    settings: dict[str, Any]
    server: ServerInfo
    results: list[GroupStats]
    recommendation: Recommendation
    break_even: list[BreakEven] | None
    failures: list[Failure]
    runs: RunCounts
    files: SweepFiles
    determinism_note: str = DETERMINISM_NOTE
    prompt_classes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (schema ``sweep.schema.json``)."""
        results = [_result_dict(group) for group in self.results]
        return {
            "$schema": SCHEMA_ID,
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "tiny_model": self.tiny_model,
            "settings": to_jsonable(self.settings),
            "server": to_jsonable(self.server),
            "prompt_classes": list(self.prompt_classes),
            "results": results,
            "recommendation": to_jsonable(self.recommendation),
            "synthetic": None if self.break_even is None else {"break_even": to_jsonable(self.break_even)},
            "failures": to_jsonable(self.failures),
            "runs": to_jsonable(self.runs),
            "determinism_note": self.determinism_note,
            "files": to_jsonable(self.files),
        }


def _result_dict(group: GroupStats) -> dict[str, Any]:
    data = to_jsonable(group)
    # Failed configurations still have the keys, with nulls, so consumers need no special case.
    if data["tokens_per_second"] is None:
        data["tokens_per_second"] = {"median": None, "min": None, "max": None}
    return data


def render(report: SweepReport, out: Output) -> None:
    """Show a report in the sink's format (json: the document; csv: the summary rows)."""
    out.document(report.to_dict())
    if out.format is OutputFormat.csv:
        out.table(_csv_rows(report.results), primary=True)
        return
    if out.format is OutputFormat.json:
        return
    out.heading(f"MTP sweep of {report.model}")
    out.text(
        f"llama-server {report.server.version} ({report.server.backend}); n_predict {report.settings['n_predict']}, "
        f"seed {report.settings['seed']}, temperature 0, {report.settings['repeat']} round(s); "
        f"{report.runs.ok} of {report.runs.planned} runs measured"
        + (f", {report.runs.resumed} from an earlier invocation" if report.runs.resumed else "")
    )
    real = [g for g in report.results if g.synthetic is None]
    out.table(_summary_rows(real), title="Decode speed and acceptance (median [min-max] over prompts and rounds)")
    drafting = [g for g in real if g.n_max is not None and g.drafts]
    if drafting:
        out.table(_position_rows(drafting), title="Per-position acceptance (share of verification steps)")
        out.text("expected = 1 + a + ... + a^n with a = the first position's acceptance: the mean length if every "
                 "deeper draft token were accepted as often; a measured mean length below it means acceptance "
                 "decays with the draft position.")
    _render_determinism(report, real, out)
    if report.break_even is not None:
        _render_synthetic(report, out)
    if report.failures:
        out.table([to_jsonable(f) for f in report.failures], ["configuration", "kind", "count", "reason"], title="Failures")
    out.heading("Recommendation")
    for choice in report.recommendation.per_class:
        out.text(f"{choice.prompt_class}: {choice.reason}")
    out.text(f"overall: {report.recommendation.reason}")
    out.heading("Files")
    out.text(f"runs: {report.files.jsonl}\nreport: {report.files.report}"
             + (f"\nplot: {report.files.plot}" if report.files.plot else "") + f"\nserver logs: {report.files.logs}")
    if report.runs.not_run:
        out.text(f"{report.runs.not_run} planned runs did not run; `--resume` with the same --out runs them.")


def _speed(group: GroupStats) -> str | None:
    tps = group.tokens_per_second
    return None if tps is None else f"{tps.median:.1f} [{tps.min:.1f}-{tps.max:.1f}]"


def _mib(value: int | None) -> str | None:
    return None if value is None else f"{value / 2**20:,.0f} MiB"


def _summary_rows(groups: Sequence[GroupStats]) -> list[dict[str, Any]]:
    rows = []
    for g in groups:
        speedup = None
        if g.speedup is not None:
            speedup = f"{g.speedup:.2f}x" + (" (noise)" if g.within_noise else "")
        rows.append({
            "class": g.prompt_class,
            "config": g.label,
            "tok/s": _speed(g) if g.runs else f"failed: {g.error}",
            "speedup": speedup,
            "acceptance": g.acceptance,
            "mean len": g.mean_length,
            "expected": g.expected_length,
            "peak RSS": _mib(g.rss_peak_bytes),
            "same text": g.identical_to_baseline if g.n_max is not None else g.repeats_identical,
            "runs": f"{g.runs}" + (f" (+{g.failed} failed)" if g.failed else ""),
        })
    return rows


def _position_rows(groups: Sequence[GroupStats]) -> list[dict[str, Any]]:
    return [
        {
            "class": g.prompt_class,
            "config": g.label,
            "per position": ", ".join(f"{rate:.2f}" for rate in g.per_position),
            "mean len": g.mean_length,
            "expected": g.expected_length,
            "log agrees": g.log_agrees,
        }
        for g in groups
    ]


def _csv_rows(groups: Sequence[GroupStats]) -> list[dict[str, Any]]:
    rows = []
    for g in groups:
        tps = g.tokens_per_second
        rows.append({
            "prompt_class": g.prompt_class,
            "configuration": g.configuration,
            "n_max": g.n_max,
            "synthetic": g.synthetic,
            "runs": g.runs,
            "failed": g.failed,
            "tokens_per_second_median": tps.median if tps else None,
            "tokens_per_second_min": tps.min if tps else None,
            "tokens_per_second_max": tps.max if tps else None,
            "speedup": g.speedup,
            "within_noise": g.within_noise,
            "acceptance": g.acceptance,
            "mean_length": g.mean_length,
            "first_position_acceptance": g.first_position_acceptance,
            "expected_length": g.expected_length,
            "per_position": ";".join(f"{rate:.6g}" for rate in g.per_position),
            "rss_peak_bytes": g.rss_peak_bytes,
            "identical_to_baseline": g.identical_to_baseline,
            "first_divergence": g.first_divergence,
            "error": g.error,
        })
    return rows


def _render_determinism(report: SweepReport, groups: Sequence[GroupStats], out: Output) -> None:
    out.heading("Determinism at temperature 0")
    lines = []
    for g in groups:
        if g.n_max is None and g.repeats_identical is not None:
            lines.append(f"{g.prompt_class}: baseline repeats {'identical' if g.repeats_identical else 'DIFFER'}")
        elif g.identical_to_baseline is False:
            lines.append(f"{g.prompt_class}: {g.label} differs from the baseline from character {g.first_divergence}")
    same = [g for g in groups if g.identical_to_baseline]
    if same:
        lines.append(f"{len(same)} MTP configuration/class pairs produced exactly the baseline text")
    out.text("\n".join(lines) if lines else "(no text to compare)")
    out.text(report.determinism_note)


def _render_synthetic(report: SweepReport, out: Output) -> None:
    assert report.break_even is not None
    rows = [
        {
            "n-max": curve.n_max,
            "forced p": point.target,
            "acceptance": point.acceptance,
            "speedup": None if point.speedup is None else f"{point.speedup:.2f}x",
        }
        for curve in report.break_even
        for point in curve.points
    ]
    out.table(rows, title="Synthetic cost curve (--spec-synth-rates: acceptance forced, drafting work real)")
    for curve in report.break_even:
        out.text(f"n-max {curve.n_max}: {curve.note}")
