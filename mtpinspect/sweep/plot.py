"""The sweep's PNG: acceptance, mean length and decode speed against n-max, per prompt class.

The baseline is drawn as a band (its min-max over runs, median dashed) on the speed panel, so a point
inside the band is visibly "within noise". With ``--synthetic`` a fourth panel shows the cost curve:
speedup against forced acceptance, one line per n-max, with the break-even marked.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mtpinspect.sweep.report import SweepReport
from mtpinspect.sweep.statistics import GroupStats

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def write_plot(report: SweepReport, path: Path) -> Path:
    """Draw the report into a PNG file and return its path."""
    # matplotlib costs half a second to import: only a sweep that writes its plot pays it.
    import matplotlib
    from matplotlib.figure import Figure

    real = [g for g in report.results if g.synthetic is None]
    panels = 4 if report.synthetic and report.synthetic.break_even else 3
    # A bare Figure renders with Agg and leaves pyplot's global backend alone (no display needed).
    fig = Figure(figsize=(5 * panels, 4.2))
    axes = fig.subplots(1, panels)
    # Fixed margins: an automatic layout engine costs about as much as drawing the whole figure.
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.13, top=0.86, wspace=0.3)
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    n_values = sorted({g.n_max for g in real if g.n_max is not None})
    # One line per prompt class, and per condition and method when the sweep had those axes.
    series = list(dict.fromkeys((g.prompt_class, g.concurrency, g.temperature, g.method) for g in real
                                if g.n_max is not None))
    for index, (prompt_class, concurrency, temperature, method) in enumerate(series):
        colour = colours[index % len(colours)]
        label = _series_label(prompt_class, concurrency, temperature, method)
        mine = sorted((g for g in real if (g.prompt_class, g.concurrency, g.temperature, g.method)
                       == (prompt_class, concurrency, temperature, method)), key=_n)
        _acceptance(axes[0], mine, colour, label)
        _mean_length(axes[1], mine, colour, label)
        baseline = next((g for g in real if (g.prompt_class, g.concurrency, g.temperature) ==
                         (prompt_class, concurrency, temperature) and g.n_max is None), None)
        _speed(axes[2], mine, baseline, colour, label)
    for ax, title, ylabel in (
        (axes[0], "Draft acceptance", "accepted / drafted"),
        (axes[1], "Mean acceptance length", "tokens per verification step"),
        (axes[2], "Decode speed (band: baseline min-max)", "tokens/s"),
    ):
        ax.set_title(title)
        ax.set_xlabel("--spec-draft-n-max")
        ax.set_ylabel(ylabel)
        ax.set_xticks(n_values)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(-0.05, 1.05)
    for ax in axes[:3]:
        if ax.get_legend_handles_labels()[0]:  # a sweep where every MTP server failed has no lines
            ax.legend(fontsize="small")
    if report.synthetic and report.synthetic.break_even:
        _cost_curve(axes[3], report)
    fig.suptitle(f"mtpinspect sweep: {Path(report.model).name} (llama-server {report.server.version})", fontsize="medium")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, format="png")
    return path


def _series_label(prompt_class: str, concurrency: int, temperature: float, method: str | None) -> str:
    """The class, with what differs from a plain sweep: "code ngram-mod c4 t0.8"."""
    parts = [prompt_class] + ([method] if method not in (None, "draft-mtp") else [])
    parts += ([f"c{concurrency}"] if concurrency != 1 else []) + ([f"t{temperature:g}"] if temperature else [])
    return " ".join(str(p) for p in parts)


def _n(group: GroupStats) -> int:
    return group.n_max or 0


def _acceptance(ax: Axes, groups: list[GroupStats], colour: str, label: str) -> None:
    points = [(g.n_max, g.acceptance) for g in groups if g.acceptance is not None]
    if points:
        ax.plot(*zip(*points), "o-", color=colour, label=label)


def _mean_length(ax: Axes, groups: list[GroupStats], colour: str, label: str) -> None:
    measured = [(g.n_max, g.mean_length) for g in groups if g.mean_length is not None]
    expected = [(g.n_max, g.expected_length) for g in groups if g.expected_length is not None]
    if measured:
        ax.plot(*zip(*measured), "o-", color=colour, label=f"{label} measured")
    if expected:
        ax.plot(*zip(*expected), ":", color=colour, label=f"{label} 1+a+..+a^n")


def _speed(ax: Axes, groups: list[GroupStats], baseline: GroupStats | None, colour: str, label: str) -> None:
    if baseline is not None and baseline.tokens_per_second is not None:
        band = baseline.tokens_per_second
        ax.axhspan(band.min, band.max, color=colour, alpha=0.15, linewidth=0)
        ax.axhline(band.median, color=colour, linestyle="--", linewidth=1)
    measured = [g for g in groups if g.tokens_per_second is not None]
    if measured:
        medians = [g.tokens_per_second.median for g in measured if g.tokens_per_second]
        errors = [
            [g.tokens_per_second.median - g.tokens_per_second.min for g in measured if g.tokens_per_second],
            [g.tokens_per_second.max - g.tokens_per_second.median for g in measured if g.tokens_per_second],
        ]
        ax.errorbar([g.n_max for g in measured], medians, yerr=errors, fmt="o-", color=colour, capsize=3, label=label)


def _cost_curve(ax: Axes, report: SweepReport) -> None:
    assert report.synthetic is not None
    for curve in report.synthetic.break_even:
        points = sorted(
            (p.acceptance, p.speedup) for p in curve.points if p.acceptance is not None and p.speedup is not None
        )
        if points:
            ax.plot(*zip(*points), "o-", label=f"n-max {curve.n_max}")
        if curve.acceptance is not None:
            ax.axvline(curve.acceptance, linestyle=":", color="grey")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_title("Cost curve (synthetic acceptance)")
    ax.set_xlabel("forced draft acceptance")
    ax.set_ylabel("speedup vs baseline")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
