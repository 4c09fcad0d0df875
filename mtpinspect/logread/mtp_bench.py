"""mtp-bench output given to ``diagnose --log``: its rows and Aggregate JSON (or its --out file) as log evidence.

mtp-bench.py runs against llama-server's chat endpoint, so the run is llama.cpp's with MTP asked for; its
per-request ``draft_n`` / ``draft_n_accepted`` are the server's own counts. The aggregate's totals are the
evidence the rules judge (zero acceptance, low acceptance), with each category's acceptance beside them:
acceptance that is fine on code and near zero on prose points at the text, not at a broken head.
What it lacks (the mean acceptance length, per-position rates, the server's settings) is said, as for a log.
"""

from __future__ import annotations

from pathlib import Path

from mtpinspect.errors import SourceError
from mtpinspect.files import pasted_text, read_bounded
from mtpinspect.formats import mtp_bench
from mtpinspect.formats.mtp_bench import BenchRun
from mtpinspect.logread.run_facts import MtpUse, RunFacts
from mtpinspect.logread.runs import LogEvidence, read_runs
from mtpinspect.vocabulary import Engine, LogKind

# mtp-bench's output is a few kilobytes (nine rows, an aggregate); a larger file is a log, read as one.
MAX_BENCH_BYTES = 4 << 20
_LACKS = ["mean length", "per-position"]  # its rows count tokens, not verification steps


def read_log_or_bench(path: str | Path) -> tuple[list[LogEvidence], list[str]]:
    """The evidence of one --log file (mtp-bench's output, each of its runs, else each run of a log read_runs reads)
    and, for mtp-bench, the notes with each category's acceptance."""
    file = Path(path).expanduser()
    try:
        small = file.is_file() and file.stat().st_size <= MAX_BENCH_BYTES
    except OSError:
        small = False
    if small:
        try:
            text = pasted_text(read_bounded(file, MAX_BENCH_BYTES, "log file"))
        except SourceError:
            text = ""  # read_log names what is wrong with the file
        if text.strip() and mtp_bench.looks_like(text):
            pieces = [(first, piece) for first, piece in mtp_bench.runs_in(text) if mtp_bench.looks_like(piece)] or [(1, text)]
            names = [f"{file} (run {n}, from line {first})" if len(pieces) > 1 else str(file)
                     for n, (first, _) in enumerate(pieces, 1)]
            runs = [mtp_bench.parse(piece, name) for name, (_, piece) in zip(names, pieces)]
            evidence = [bench_evidence(name, run) for name, run in zip(names, runs)]
            for one, (first, _) in zip(evidence, pieces):
                one.source = str(file)
                if one.speed is not None:
                    one.speed_line = f"line {first}: mtp-bench's rows from here, {one.speed:.1f} tok/s over their tokens"
            return (evidence,
                    [note for name, run in zip(names, runs) for note in category_notes(name, run)])
    return read_runs(file), []


def bench_evidence(path: str, run: BenchRun) -> LogEvidence:
    """The log evidence of one mtp-bench run: its totals, and the category lines the figures come from."""
    drafted, accepted = run.totals()
    shown = "its --out JSON" if run.source == "json" else "its Aggregate JSON" if run.aggregate else "its rows (no Aggregate)"
    evidence = LogEvidence(
        path=path, kind=LogKind.mtp_bench, runtime=Engine.llama_cpp, drafted=drafted, accepted=accepted,
        acceptance=accepted / drafted if drafted else None, formats=[f"mtp-bench: {shown}"], missing=list(_LACKS),
        draft_lines=[_category_line(name, d, a) for name, (d, a) in run.by_category().items()],
    )
    failed = [r for r in run.results if r.error]
    if failed and len(failed) == len(run.results):
        evidence.failure = f"every request failed; the first: {failed[0].error}"
    # mtp-bench is only run to measure drafting: whether the server drafted is what its counts say.
    evidence.mtp_use = MtpUse.on if drafted else MtpUse.not_shown
    evidence.speed = run.decode_speed()
    evidence.run = RunFacts(evidence.mtp_use, f"mtp-bench counted {drafted} drafted tokens")
    return evidence


def category_notes(path: str, run: BenchRun) -> list[str]:
    """One note: each category's acceptance, and the aggregate they make up."""
    drafted, accepted = run.totals()
    skipped = [f"{path}: skipped mtp-bench {why}" for why in run.skipped[:8]]
    if len(run.skipped) > 8:
        skipped.append(f"{path}: skipped {len(run.skipped) - 8} more mtp-bench row(s)")
    if not drafted:
        return [f"{path}: mtp-bench counted no drafted tokens in any category: was the server started with "
                "--spec-type draft-mtp (and a model with an MTP head)?", *skipped]
    parts = [_category_line(name, d, a) for name, (d, a) in run.by_category().items()]
    return [f"{path}: mtp-bench acceptance per category: {'; '.join(parts)}; "
            f"aggregate {accepted} of {drafted} ({accepted / drafted:.1%})", *skipped]


def _category_line(name: str, drafted: int, accepted: int) -> str:
    rate = f"{accepted / drafted:.1%}" if drafted else "nothing drafted"
    return f"{name}: {accepted} accepted of {drafted} drafted ({rate})"
