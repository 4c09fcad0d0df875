"""mtp-bench's output: the per-prompt rows it prints, its ``Aggregate: {...}`` JSON and its ``--out`` file.

mtp-bench.py (written during llama.cpp's MTP pull request #22673, copied into many forks) sends nine
prompts, one per category, to ``/v1/chat/completions`` and prints one row per prompt::

      code_python        pred= 192 draft= 150 acc= 120 rate=0.800 tok/s=45.3
      code_cpp           ERROR: <urlopen error ...>

(``name xN`` when it repeated each prompt N times), then ``Aggregate:`` followed by an indented JSON
object. ``--out`` writes ``{"results": [...], "aggregate": {...}}``; a result has ``name``, ``wall_s``,
``predicted_n``, ``predicted_per_second``, ``draft_n``, ``draft_n_accepted``, ``accept_rate`` (and
``error`` when the request failed). Early copies have no ``concurrency``, ``batch_wall_s``,
``aggregate_throughput_tok_s`` in the aggregate, so those are optional here.

This module is the one place that knows those names: the sweep writes them (sweep/mtp_bench.py) and
``diagnose --log`` reads them (logread/mtp_bench.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mtpinspect.errors import FormatError

RESULT_KEYS = ("name", "wall_s", "predicted_n", "predicted_per_second", "draft_n", "draft_n_accepted", "accept_rate")
AGGREGATE_KEYS = ("total_draft", "total_draft_accepted", "aggregate_accept_rate", "wall_s_total")
CONCURRENCY_KEYS = ("concurrency", "batch_wall_s", "aggregate_throughput_tok_s")

# "  code_python x3      pred= 576 draft= 450 acc= 360 rate=0.800 tok/s=45.3". Counts of up to 15 digits and
# plain decimals only: "tok/s=1.2.3" or a 5,000-digit draft= is a malformed row, skipped and named (_ROW_LIKE).
_ROW = re.compile(
    r"^\s*(?P<name>[A-Za-z_][\w.-]{0,200})(?:\s+x(?P<times>\d{1,9}))?\s+pred=\s*(?P<pred>\d{1,15})\s+"
    r"draft=\s*(?P<draft>\d{1,15})\s+acc=\s*(?P<acc>\d{1,15})"
    r"\s+rate=(?P<rate>n/a|\d{1,15}(?:\.\d{1,20})?)\s+tok/s=(?P<toks>\d{1,15}(?:\.\d{1,20})?)(?![\d.])"
)
# A line with the row's words that _ROW refuses: named in the notes, never read as figures.
_ROW_LIKE = re.compile(r"\bpred=.{0,200}?\bdraft=")
# JSON numbers: finite, and integers of at most 18 digits (a count, a duration); 100k-deep arrays raise RecursionError.
_MAX_INT_DIGITS = 18
_ERROR_ROW = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.-]*)(?:\s+x\d+)?\s+ERROR:\s*(?P<error>.*)$")
_AGGREGATE = re.compile(r"^\s*Aggregate:\s*(?P<rest>.*)$")


@dataclass(frozen=True)
class BenchResult:
    """One prompt's request (or, from printed rows of a repeated run, its requests summed)."""

    name: str  # the category: code_python, code_cpp, explain_concept, ...
    predicted_n: int
    draft_n: int
    draft_n_accepted: int
    predicted_per_second: float
    wall_s: float | None = None  # printed rows do not show it
    error: str | None = None
    requests: int = 1  # "name x3": three requests summed in one printed row

    @property
    def accept_rate(self) -> float | None:
        return self.draft_n_accepted / self.draft_n if self.draft_n else None


@dataclass(frozen=True)
class BenchAggregate:
    total_draft: int
    total_draft_accepted: int
    aggregate_accept_rate: float | None
    wall_s_total: float | None
    total_predicted: int | None = None
    concurrency: int | None = None  # absent in early copies
    batch_wall_s: float | None = None
    aggregate_throughput_tok_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # other keys, kept as read


@dataclass(frozen=True)
class BenchRun:
    """What one mtp-bench run reported."""

    results: list[BenchResult]
    aggregate: BenchAggregate | None  # None when only the rows were pasted
    source: str  # "rows", "rows+aggregate" or "json"
    skipped: tuple[str, ...] = ()  # rows left out, each with why (malformed, acc above draft)

    def by_category(self) -> dict[str, tuple[int, int]]:
        """Category -> (drafted, accepted), failed requests left out."""
        out: dict[str, tuple[int, int]] = {}
        for result in self.results:
            if result.error is None:
                drafted, accepted = out.get(result.name, (0, 0))
                out[result.name] = (drafted + result.draft_n, accepted + result.draft_n_accepted)
        return out

    def decode_speed(self) -> float | None:
        """Tokens per second over the rows that predicted (their tokens over their summed time), None without rows."""
        timed = [r for r in self.results if r.error is None and r.predicted_n and r.predicted_per_second > 0]
        seconds = sum(r.predicted_n / r.predicted_per_second for r in timed)
        return sum(r.predicted_n for r in timed) / seconds if seconds else None

    def totals(self) -> tuple[int, int]:
        """(drafted, accepted) over the whole run: the aggregate's, else the rows' sums."""
        if self.aggregate is not None:
            return self.aggregate.total_draft, self.aggregate.total_draft_accepted
        pairs = self.by_category().values()
        return sum(d for d, _ in pairs), sum(a for _, a in pairs)


def looks_like(text: str) -> bool:
    """Whether text is mtp-bench's output or its JSON (cheap: used to route a --log file): its JSON document,
    its ``Aggregate: {...}`` with the draft totals, or two of its rows. One row quoted in other text (a page
    that documents the format) is not a run."""
    if text.lstrip().startswith("{"):
        return '"aggregate"' in text and '"results"' in text
    if re.search(r"^\s*Aggregate:\s*\{", text, re.M) and "total_draft" in text:
        return True
    return sum(1 for line in text.splitlines() if _ROW.match(line)) >= 2


def runs_in(text: str) -> list[tuple[int, str]]:
    """The runs of a printed text, each with its first line number: mtp-bench prints each category once (xN for
    repeats) and then its Aggregate, so rows after an Aggregate, or a category printed again, start another run.
    One entry (the whole text) for one run or for its --out JSON."""
    if text.lstrip().startswith("{"):
        return [(1, text)]
    lines = text.splitlines(keepends=True)
    starts = [0]
    seen: set[str] = set()
    aggregated = False
    for index, line in enumerate(lines):
        if (row := _ROW.match(line)) is not None or (row := _ERROR_ROW.match(line)) is not None:
            if aggregated or row["name"] in seen:
                starts.append(index)
                seen, aggregated = set(), False
            seen.add(row["name"])
        elif _AGGREGATE.match(line) is not None and seen:
            aggregated = True
    bounds = [*starts, len(lines)]
    return [(start + 1, "".join(lines[start:end])) for start, end in zip(bounds, bounds[1:])]


def parse(text: str, where: str = "mtp-bench output") -> BenchRun:
    """mtp-bench's printed output (rows, Aggregate JSON) or its --out JSON; FormatError if it is neither."""
    if text.lstrip().startswith("{"):
        return from_json(_decode(text, where, whole=True)[0], where)
    results: list[BenchResult] = []
    skipped: list[str] = []
    aggregate: BenchAggregate | None = None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if (row := _ROW.match(line)) is not None:
            drafted, accepted = int(row["draft"]), int(row["acc"])
            if accepted > drafted:
                skipped.append(f"line {index + 1}: acc={accepted} above draft={drafted}: {line.strip()[:120]}")
                continue
            results.append(BenchResult(
                name=row["name"], predicted_n=int(row["pred"]), draft_n=drafted,
                draft_n_accepted=accepted, predicted_per_second=float(row["toks"]),
                requests=int(row["times"] or 1)))
        elif (failed := _ERROR_ROW.match(line)) is not None:
            results.append(BenchResult(failed["name"][:200], 0, 0, 0, 0.0, error=failed["error"].strip()[:300]))
        elif (start := _AGGREGATE.match(line)) is not None:
            aggregate = _aggregate(_json_after(start["rest"], lines[index + 1:], where), where)
        elif _ROW_LIKE.search(line[:2000]):
            skipped.append(f"line {index + 1}: not a row mtp-bench prints (a count or rate that is not a plain "
                           f"number): {line.strip()[:120]}")
    if not results and aggregate is None:
        raise FormatError(f"{where}: no mtp-bench rows (pred= draft= acc= rate= tok/s=) and no Aggregate JSON"
                          + (f"; skipped {skipped[0]}" if skipped else ""))
    return BenchRun(results, aggregate, "rows+aggregate" if aggregate is not None else "rows", tuple(skipped))


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number mtp-bench writes")


def _float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int)


def _decode(text: str, where: str, *, whole: bool) -> tuple[Any, int]:
    """JSON with finite numbers only (no NaN, Infinity, 1e400, huge integers) and bounded nesting; FormatError else."""
    try:
        if whole:
            return _DECODER.decode(text), len(text)
        return _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:  # from the number hooks
        raise FormatError(f"{where}: a number in the JSON is not one mtp-bench writes ({exc})") from None
    except RecursionError:
        raise FormatError(f"{where}: the JSON is nested too deeply to be mtp-bench's") from None


def from_json(doc: Any, where: str) -> BenchRun:
    """An mtp-bench --out document ({"results": [...], "aggregate": {...}})."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list) or not isinstance(doc.get("aggregate"), dict):
        raise FormatError(f'{where}: not an mtp-bench JSON (expected an object with "results" and "aggregate")')
    results = [_result(item, f"{where}: results[{i}]") for i, item in enumerate(doc["results"])]
    return BenchRun(results, _aggregate(doc["aggregate"], where), "json")


def to_json(run: BenchRun) -> dict[str, Any]:
    """The --out document, with mtp-bench's keys (rounded as it rounds them)."""
    results = []
    for r in run.results:
        item: dict[str, Any] = {
            "name": r.name, "wall_s": None if r.wall_s is None else round(r.wall_s, 3), "predicted_n": r.predicted_n,
            "predicted_per_second": round(r.predicted_per_second, 2), "draft_n": r.draft_n,
            "draft_n_accepted": r.draft_n_accepted,
            "accept_rate": None if r.accept_rate is None else round(r.accept_rate, 4),
        }
        if r.error is not None:
            item["error"] = r.error
        results.append(item)
    agg = run.aggregate
    aggregate: dict[str, Any] = dict(agg.extra) if agg else {}
    if agg is not None:
        aggregate.update({
            "total_predicted": agg.total_predicted, "total_draft": agg.total_draft,
            "total_draft_accepted": agg.total_draft_accepted,
            "aggregate_accept_rate": None if agg.aggregate_accept_rate is None else round(agg.aggregate_accept_rate, 4),
            "wall_s_total": None if agg.wall_s_total is None else round(agg.wall_s_total, 2),
            "concurrency": agg.concurrency,
            "batch_wall_s": None if agg.batch_wall_s is None else round(agg.batch_wall_s, 2),
            "aggregate_throughput_tok_s": None if agg.aggregate_throughput_tok_s is None
            else round(agg.aggregate_throughput_tok_s, 2),
        })
    return {"results": results, "aggregate": aggregate}


def aggregate_of(results: list[BenchResult], concurrency: int, batch_wall_s: float) -> BenchAggregate:
    """The aggregate mtp-bench computes from its results (failed requests count in n_failed only)."""
    ok = [r for r in results if r.error is None]
    drafted = sum(r.draft_n for r in ok)
    accepted = sum(r.draft_n_accepted for r in ok)
    predicted = sum(r.predicted_n for r in ok)
    rates = [r.predicted_per_second for r in ok]
    return BenchAggregate(
        total_draft=drafted, total_draft_accepted=accepted,
        aggregate_accept_rate=accepted / drafted if drafted else None,
        wall_s_total=sum(r.wall_s or 0.0 for r in results), total_predicted=predicted, concurrency=concurrency,
        batch_wall_s=batch_wall_s, aggregate_throughput_tok_s=predicted / batch_wall_s if batch_wall_s > 0 else 0.0,
        extra={"n_requests": len(results), "n_failed": len(results) - len(ok),
               "mean_request_tok_s": round(sum(rates) / len(rates), 2) if rates else 0.0},
    )


def _json_after(rest: str, following: list[str], where: str) -> Any:
    """The JSON object that starts on the Aggregate: line (one line, or indented over the next ones)."""
    text = "\n".join([rest, *following])
    return _decode(text.lstrip(), f"{where}: the Aggregate: line is not followed by a JSON object:", whole=False)[0]


def _number(doc: dict, key: str, where: str, kind: type, required: bool) -> Any:
    value = doc.get(key)
    if value is None:
        if required:
            raise FormatError(f'{where}: "{key}" is missing')
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (
            float("inf"), float("-inf")) or (kind is int and value != int(value)):
        raise FormatError(f'{where}: "{key}" is {value!r}, not a {"whole " if kind is int else ""}number')
    if value < 0:
        raise FormatError(f'{where}: "{key}" is {value}, below 0')
    return kind(value)


def _aggregate(doc: Any, where: str) -> BenchAggregate:
    where = f"{where}: aggregate"
    if not isinstance(doc, dict):
        raise FormatError(f"{where}: not a JSON object")
    drafted = _number(doc, "total_draft", where, int, True)
    accepted = _number(doc, "total_draft_accepted", where, int, True)
    if accepted > drafted:
        raise FormatError(f"{where}: total_draft_accepted {accepted} exceeds total_draft {drafted}")
    rate = _number(doc, "aggregate_accept_rate", where, float, False)
    if rate is not None and rate > 1:
        raise FormatError(f"{where}: aggregate_accept_rate {rate:g} is above 1 (acceptance is a share of drafted tokens)")
    known = {*AGGREGATE_KEYS, *CONCURRENCY_KEYS, "total_predicted"}
    return BenchAggregate(
        total_draft=drafted, total_draft_accepted=accepted,
        aggregate_accept_rate=rate,
        wall_s_total=_number(doc, "wall_s_total", where, float, False),
        total_predicted=_number(doc, "total_predicted", where, int, False),
        concurrency=_number(doc, "concurrency", where, int, False),
        batch_wall_s=_number(doc, "batch_wall_s", where, float, False),
        aggregate_throughput_tok_s=_number(doc, "aggregate_throughput_tok_s", where, float, False),
        extra={k: v for k, v in doc.items() if k not in known},
    )


def _result(item: Any, where: str) -> BenchResult:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise FormatError(f'{where}: expected an object with a "name" string')
    error = item.get("error")
    drafted = _number(item, "draft_n", where, int, False) or 0
    accepted = _number(item, "draft_n_accepted", where, int, False) or 0
    if accepted > drafted:
        raise FormatError(f"{where}: draft_n_accepted {accepted} exceeds draft_n {drafted}")
    return BenchResult(
        name=item["name"], predicted_n=_number(item, "predicted_n", where, int, False) or 0, draft_n=drafted,
        draft_n_accepted=accepted, predicted_per_second=_number(item, "predicted_per_second", where, float, False) or 0.0,
        wall_s=_number(item, "wall_s", where, float, False), error=str(error) if error else None,
    )
