"""`find`: which downloads of a base model keep a working MTP head? A census of the model tree.

The Hub lists the base's derivatives (sources/hub_search.py); the most downloaded ``limit`` of them are
judged, each exactly as `check` judges a repo (the same targets, sources/resolve.py hub_targets, and the
same judge, inspection.judge: one rule set), several at a time. A GGUF repo gets a verdict per model
file (as `check --all`), a checkpoint repo one; the row shows the best of them. All requests share one
clock: one deadline for the census, and a 429's Retry-After holds back every repo's requests, not only
the one that got it. The search gives each repo's commit, and the header cache keeps each repo's listing
and headers by commit: a repeated census whose repos have not moved sends only the search. A repo that cannot
be judged (gated, gone, cut short, timed out) is a row with its error, never the end of the census;
Ctrl-C ends it with what was judged so far.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeVar

from mtpinspect.errors import MtpinspectError
from mtpinspect.inspection.engine import DEFAULT_CONTEXT
from mtpinspect.inspection.pipeline import judge
from mtpinspect.inspection.quant_audit import HIGH_PRECISION
from mtpinspect.inspection.report import CheckFailure, CheckReport
from mtpinspect.sources.filenames import quant_tag
from mtpinspect.sources.hub_search import Listed, search_derivatives
from mtpinspect.sources.policy import Clock, FetchPolicy
from mtpinspect.sources.resolve import Target, hub_targets
from mtpinspect.vocabulary import App, Engine, HeadState, Layout, Relation, RuntimeStatus
from mtpinspect.workers import run_all

T = TypeVar("T")

# Repos judged at once. Each is about 3 sequential round trips (its listing, then its files' headers in
# one or two waves), so a census of N repos waits about 3 * N / REPOS_IN_FLIGHT of them after the search
# pages: 16 judge bench/bench_find.py's 32 derivatives in two rounds (8 took four), with at most about
# 30 requests in flight, as many as 4 browser tabs open. A GGUF repo's models are read together (at most
# MODELS_IN_FLIGHT), each model's files in waves of their own.
REPOS_IN_FLIGHT = 16
MODELS_IN_FLIGHT = 8
# Judged by default: the most downloaded. A GGUF repo costs one header read (a few MB with a 150k-token
# vocabulary) per quantization, so 20 repos is what a first census reads in well under a minute.
DEFAULT_LIMIT = 20
RUNTIMES: tuple[str, ...] = (Engine.llama_cpp.value, Engine.vllm.value, Engine.sglang.value, App.ollama.value,
                             App.lm_studio.value)
ALL: Literal["all"] = "all"
RelationChoice = Relation | Literal["all"]
# From the best state of a head to the worst: a row shows the file whose head fares best.
HEAD_ORDER = (HeadState.kept, HeadState.excluded, HeadState.quantized, HeadState.low_bit, HeadState.foreign, HeadState.dropped,
              HeadState.missing)


@dataclass(frozen=True)
class FileVerdict:
    """check's verdict on one model of a derivative: a GGUF (its split set, with its mtp- sidecar) or the
    checkpoint; ``error`` when it could not be judged (then most fields are None)."""

    files: list[str]  # the GGUF files (and sidecar) judged; [] for a checkpoint
    format: str | None  # "GGUF Q4_K_M", "modelopt NVFP4", "fp8 e4m3", "safetensors BF16"
    usable: bool | None
    mtp_layers: int | None
    layout: Layout | None
    head: HeadState | None
    runtimes: dict[str, RuntimeStatus]
    size: int | None  # bytes to download for this model
    verdict: str | None  # check's one-line verdict
    findings: list[str]  # check's finding codes
    error: str | None

    def runs_on(self, engine: str | None) -> bool:
        """Usable on ``engine`` (None: on any)."""
        if engine is None:
            return bool(self.usable)
        status = self.runtimes.get(engine)
        return status is not None and status.usable


@dataclass
class Derivative:
    """One repo of the model tree: its best model's verdict (the row) and every model's (``files``)."""

    repo: str
    relation: Relation
    downloads: int | None
    revision: str | None
    usable: bool | None  # None: could not be judged (error)
    mtp_layers: int | None
    layout: Layout | None
    head: HeadState | None
    format: str | None
    runtimes: dict[str, RuntimeStatus]
    size: int | None
    best: list[str]  # the files of the model the row shows ([] for a checkpoint)
    error: str | None  # why the repo could not be judged: its listing failed, or every model failed
    files: list[FileVerdict]


@dataclass(frozen=True)
class Progress:
    """Where a census stands, for a progress bar: repos judged of ``total``, the one started last."""

    done: int
    total: int
    current: str | None
    elapsed: float

    @property
    def eta(self) -> float | None:
        return None if not self.done else self.elapsed / self.done * (self.total - self.done)


@dataclass
class Census:
    """find's result: ``base``'s derivatives as the search listed them, the judged ones in ``derivatives``
    (working downloads first, then by downloads)."""

    json_schema: ClassVar[str] = "find"

    base: str
    relation: RelationChoice
    engine: str | None  # --engine: only derivatives that run there are listed
    found: int  # derivatives the search listed
    left_out: int  # listed but not judged (past --limit)
    not_on_engine: int  # judged, but do not run on --engine (not listed)
    interrupted: bool  # Ctrl-C: the census ended early, derivatives holds what was judged
    past_deadline: int  # chosen, but not judged: --deadline had passed before their turn (no row each)
    requests: int
    bytes_read: int
    bytes_cached: int
    seconds: float
    derivatives: list[Derivative] = field(default_factory=list)


def find(
    base: str,
    *,
    relation: RelationChoice = Relation.quantized,
    engine: str | None = None,
    limit: int | None = DEFAULT_LIMIT,
    token: str | None = None,
    endpoint: str | None = None,
    verify: bool | None = None,
    context: int = DEFAULT_CONTEXT,
    policy: FetchPolicy | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Census:
    """List ``base``'s derivatives (``relation``, or ``"all"``) on the Hub and judge the ``limit`` most downloaded
    (None: all) as `check` does; ``engine`` keeps those that run on it. ``verify``, ``context`` and ``policy``
    are check's. ``progress`` is called as repos start and end. Raises MtpinspectError when the base is
    unknown or the search answers wrongly; a derivative's failure is its row's ``error``."""
    started = time.monotonic()
    if engine is not None and engine not in RUNTIMES:
        raise ValueError(f"engine {engine!r}: one of {', '.join(RUNTIMES)}")
    clock = Clock(policy)
    relations = list(Relation) if relation == ALL else [Relation(relation)]
    search = search_derivatives(base, relations, token=token, endpoint=endpoint, clock=clock)
    listed = sorted(search.derivatives, key=lambda d: (-(d.downloads or 0), d.repo_id))
    chosen = listed if limit is None else listed[:limit]

    def one(item: Listed) -> tuple[Derivative, list[Target]]:
        return _judge_repo(item, token=token, endpoint=endpoint, policy=policy, clock=clock, verify=verify,
                           context=context, engine=engine)

    judged, interrupted = _census(chosen, one, progress, started, clock)
    meters = [search.meter, *(t.tree.meter for _, targets in judged for t in targets)]
    rows = [d for d, _ in judged]
    shown = [d for d in rows if engine is None or any(f.runs_on(engine) for f in d.files)]
    return Census(
        base=base, relation=relation, engine=engine, found=len(listed), left_out=len(listed) - len(chosen),
        not_on_engine=len(rows) - len(shown), interrupted=interrupted,
        # Interrupted: the repos left were stopped by Ctrl-C, whatever the clock (Clock.stop ends it) says.
        past_deadline=0 if interrupted else len(chosen) - len(rows),
        requests=sum(m.requests for m in meters), bytes_read=sum(m.bytes_read for m in meters),
        bytes_cached=sum(m.bytes_cached for m in meters), seconds=time.monotonic() - started,
        derivatives=sorted(shown, key=lambda d: (_row_rank(d, engine), -(d.downloads or 0), d.repo)),
    )


def _census(items: Sequence[Listed], work: Callable[[Listed], T], progress: Callable[[Progress], None] | None,
            started: float, clock: Clock) -> tuple[list[T], bool]:
    """``work`` on every item, REPOS_IN_FLIGHT at once; the results so far and True when Ctrl-C ended it (the
    repos judged before it: one that ends in the moments after it was cut short by it). Items
    whose turn comes after the deadline are skipped (no result): each would only fail on the deadline,
    and 98,562 such rows were 71 MB of the same error."""
    done: list[T] = []
    lock = threading.Lock()

    def report(current: str | None) -> None:
        if progress is not None:
            progress(Progress(len(done), len(items), current, time.monotonic() - started))

    def run(item: Listed) -> T | None:
        if clock.left() <= 0:
            return None
        with lock:
            report(item.repo_id)
        result = work(item)
        with lock:
            if clock.stopped:  # ended after Ctrl-C, its reads cut short: a row would say so, not judge the repo
                return None
            done.append(result)
            report(None)
        return result

    try:
        # Ctrl-C: no repo starts any more, no request goes out (the clock stops), the repos in flight get
        # workers.STOP_WAIT seconds to end, and what was judged by then is the census.
        run_all([lambda item=item: run(item) for item in items], REPOS_IN_FLIGHT, name="find", on_stop=clock.stop)
    except KeyboardInterrupt:
        with lock:
            return list(done), True
    return done, False


def _judge_repo(item: Listed, *, token: str | None, endpoint: str | None, policy: FetchPolicy | None, clock: Clock,
                verify: bool | None, context: int, engine: str | None) -> tuple[Derivative, list[Target]]:
    """One derivative: its listing, then every model of it judged as check judges it."""
    if item.error is not None:  # not a valid repo id: nothing is asked for it
        return _derivative(item, None, [], item.error, engine), []
    try:
        targets = hub_targets(item.repo_id, token=token, endpoint=endpoint, policy=policy, clock=clock,
                              listed=item.main)
    except MtpinspectError as exc:
        return _derivative(item, None, [], str(exc), engine), []
    def one(target: Target) -> CheckReport | CheckFailure | None:
        # Between models, the deadline: a repo of 20,000 GGUF files must not judge them all after it.
        return judge(target, verify=verify, context=context) if clock.left() > 0 else None

    results = run_all([lambda t=t: one(t) for t in targets], MODELS_IN_FLIGHT, name="find-model")
    files = [_file_verdict(r, t) for r, t in zip(results, targets) if r is not None]
    if not files:
        return _derivative(item, targets[0].revision, [], f"{item.repo_id}: not judged: the {clock.policy.deadline:g} s "
                           "deadline passed before its models' turn", engine), targets
    errors = [f.error for f in files if f.error is not None]
    error = errors[0] if len(errors) == len(files) else None
    return _derivative(item, targets[0].revision, files, error, engine), targets


def _derivative(item: Listed, revision: str | None, files: list[FileVerdict], error: str | None,
                engine: str | None) -> Derivative:
    best = max(files, key=lambda f: _file_rank(f, engine)) if files and error is None else None
    return Derivative(
        repo=item.repo_id, relation=item.relation, downloads=item.downloads, revision=revision,
        usable=best.usable if best else None, mtp_layers=best.mtp_layers if best else None,
        layout=best.layout if best else None, head=best.head if best else None,
        # A repo that could not be judged still says what it holds, as far as its listing tells.
        format=best.format if best else next((f.format for f in files if f.format), None),
        runtimes=best.runtimes if best else {},
        # Unjudged: no size. What a download costs depends on the model chosen, and a failed read's listing
        # sum read as "0 B" (a gated or empty repo) as if there were nothing to download.
        size=best.size if best else None,
        best=best.files if best else [], error=error, files=files,
    )


def _file_rank(f: FileVerdict, engine: str | None) -> tuple[object, ...]:
    """Higher is better: judged; runs (on ``engine``); supported by the most engines, usable on the most; the
    head in the best state; then the smallest download."""
    statuses = [f.runtimes[e] for e in ([engine] if engine else RUNTIMES) if e in f.runtimes]
    return (
        f.error is None,
        f.runs_on(engine),
        sum(s is RuntimeStatus.supported for s in statuses),
        sum(s.usable for s in statuses),
        -HEAD_ORDER.index(f.head) if f.head is not None else -len(HEAD_ORDER),
        -(f.size or 0),
    )


def _row_rank(d: Derivative, engine: str | None) -> int:
    """Working downloads first, then the ones that do not work, then the ones that could not be judged."""
    if d.error is not None or d.usable is None:
        return 2
    return 0 if any(f.runs_on(engine) for f in d.files if f.files == d.best) else 1


def _file_verdict(result: CheckReport | CheckFailure, target: Target) -> FileVerdict:
    if isinstance(result, CheckFailure):
        files = result.files.get("gguf") or []
        return FileVerdict(files=files, format=_gguf_format(files), usable=None, mtp_layers=None, layout=None,
                           head=None, runtimes={}, size=_size(target), verdict=None, findings=[], error=result.error)
    files = [*result.files.get("gguf", []), *result.files.get("sidecar", [])]
    return FileVerdict(
        files=files, format=_format(result), usable=result.usable, mtp_layers=result.mtp_layers,
        layout=result.layout, head=head_state(result),
        runtimes={name: rv.status for name, rv in result.runtimes.items()},
        size=result.bytes_total, verdict=result.verdict, findings=result.codes(), error=None,
    )


def head_state(report: CheckReport) -> HeadState:
    """What became of the head, in check's own words (its findings and the MTP tensors' types)."""
    codes = set(report.codes())
    if codes & {"MTP_DROPPED_IN_CONVERSION", "MTP_WEIGHTS_MISSING"}:
        return HeadState.dropped
    if report.mtp_layers == 0:
        return HeadState.missing
    if "SIDECAR_FOREIGN" in codes:
        return HeadState.foreign
    if "LOW_BIT_MTP_HEAD" in codes:
        return HeadState.low_bit
    if codes & {"MTP_QUANTIZED", "MTP_PARTIALLY_EXCLUDED"}:
        return HeadState.quantized
    if "MTP_EXCLUDED" in codes:
        return HeadState.excluded
    if report.files.get("gguf") and any(t not in HIGH_PRECISION for t in report.mtp_types):
        return HeadState.quantized  # a GGUF quantizes its head with the rest unless told not to
    return HeadState.kept


def _format(report: CheckReport) -> str:
    if report.files.get("gguf"):
        return _gguf_format(report.files["gguf"]) or "GGUF"
    q = report.quantization
    if q.method:
        return q.method + (f" {q.algo}" if q.algo else "")
    # No quantization config: the MTP tensors' commonest dtype says what the checkpoint holds (BF16, F8_E4M3);
    # F32 only when there is no other (norms and block scales are F32 in every format, and many).
    dtype = max(report.mtp_types.items(), key=lambda item: (item[0] != "F32", item[1]), default=(None, 0))[0]
    return f"safetensors {dtype}" if dtype else "safetensors"


def _gguf_format(files: Iterable[str]) -> str | None:
    first = next(iter(files), None)
    if first is None:
        return None
    tag = quant_tag(first)
    return f"GGUF {tag}" if tag else "GGUF"


def _size(target: Target) -> int | None:
    names = target.gguf_files or list(target.tree.files)
    sizes = [target.tree.files[n].size for n in names if n in target.tree.files]
    return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)
