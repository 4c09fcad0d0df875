"""Ask the pinned llama.cpp itself whether llama-server would start a GGUF with its MTP head, and what
it would allocate, without reading a weight: run the mtpinspect-verify helper (built next to
llama-server, helper/mtpinspect-verify.cpp) on llama-server's own arguments.

The helper loads the models with ``no_alloc`` ("only load metadata and simulate memory allocations")
and repeats llama-server's load_model steps: target, draft model (-md), MTP draft context, draft-mtp
driver. Its verdict is llama.cpp's own message; its memory figures are the buffers llama.cpp would
allocate (weights, KV cache, compute), with and without MTP. It is bounded like every other read:
a time limit, a cap on what it may print, and it reports its own peak resident memory. The memory
estimate is check's JSON ``memory`` as it stands (mtpinspect.jsonable).

Not every byte a context holds is in llama.cpp's buffer breakdown: each context also keeps host-side
graph metadata (the node table of its graph, ``llm_graph_result::buf_compute_meta``, and its scheduler's
hash tables), sized by ``llama_context::graph_max_nodes``. For most architectures that is a few hundred
kB; for the hybrid ones (qwen35, qwen3next, ...) it is 40 nodes per micro-batch token, 8.7 MiB per graph
at ``-ub 512``, and the MTP draft context brings its own (a sidecar also its own vocabulary). The
metadata-only load builds these too, so the helper is run a second time without MTP and the difference
of its two peak RSS is what MTP adds outside the buffers (``MemoryEstimate.mtp_host``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar

from mtpinspect.errors import ServerError
from mtpinspect.jsonable import json_field
from mtpinspect.runtime.flags import DRAFT_MODEL, MODEL, SPEC_TYPE, ServerArgs

TIMEOUT_S = 120.0
MAX_STDOUT = 1 << 20  # the JSON document: a few kB, plus at most 200 log lines
MAX_STDERR_TAIL = 4096


class VerifyError(ServerError):
    """The helper did not give a verdict (it crashed, hung, or printed something else)."""


@dataclass(frozen=True)
class Allocation:
    """The buffers of one llama.cpp context, summed over devices: weights, KV cache (and recurrent
    state), compute."""

    weights: int = json_field(name="weights_bytes")
    kv: int = json_field(name="kv_bytes")
    compute: int = json_field(name="compute_bytes")

    @property
    def total(self) -> int:
        return self.weights + self.kv + self.compute

    def __add__(self, other: Allocation) -> Allocation:
        return Allocation(self.weights + other.weights, self.kv + other.kv, self.compute + other.compute)

    def __sub__(self, other: Allocation) -> Allocation:
        return Allocation(self.weights - other.weights, self.kv - other.kv, self.compute - other.compute)


@dataclass(frozen=True)
class MemoryEstimate:
    """What llama-server would hold with these arguments: the buffers llama.cpp allocates, plus the
    process itself (the helper's own peak RSS: the same libraries holding the same model metadata and
    vocabulary). Compute buffers are sized for a full micro-batch, so this is the peak with a prompt of
    at least -ub tokens (512 by default); short prompts touch less of them."""

    json_properties: ClassVar[dict[str, str]] = {
        "total_bytes": "total_bytes", "without_mtp_bytes": "without_mtp_bytes", "mtp_bytes": "mtp_bytes", "mtp": "mtp",
    }

    context: int  # n_ctx as llama.cpp set it (-c 0: the model's training context)
    by: str  # "llama.cpp <commit>"
    llama_server_args: ServerArgs  # the arguments estimated, besides the model files (-m, -md)
    without_mtp: Allocation
    with_mtp: Allocation | None = json_field(omit=True)  # None when llama.cpp refused the MTP draft context
    # bytes; 0 where the helper cannot measure its RSS (neither Linux nor macOS)
    process: int = json_field(name="process_bytes")  # the helper's peak RSS without MTP
    # What the MTP draft context and driver hold outside llama.cpp's buffers (graph and scheduler
    # metadata; a sidecar's own vocabulary and metadata): the helper's peak RSS with MTP minus without;
    # 0 where unknown.
    mtp_host: int = json_field(name="mtp_host_bytes", default=0)

    @property
    def without_mtp_bytes(self) -> int:
        return self.process + self.without_mtp.total

    @property
    def total_bytes(self) -> int | None:
        return None if self.with_mtp is None else self.process + self.mtp_host + self.with_mtp.total

    @property
    def mtp(self) -> Allocation | None:
        return None if self.with_mtp is None else self.with_mtp - self.without_mtp

    @property
    def mtp_bytes(self) -> int | None:
        return None if self.mtp is None else self.mtp.total + self.mtp_host


@dataclass(frozen=True)
class Verification:
    """llama.cpp's verdict on a model with its MTP head, as llama-server would start it."""

    ok: bool
    by: str  # "llama.cpp <commit>"
    step: str | None  # the load step that failed: "target", "draft model", "MTP context", "draft-mtp"
    error: str | None  # llama.cpp's own message
    args: ServerArgs  # the llama-server arguments that were verified
    memory: MemoryEstimate | None  # None when not even the model alone loads
    seconds: float
    peak_rss: int | None  # the helper's own peak RSS in bytes, as it reports it; None where unknown


def verify(helper: Path, args: ServerArgs | Sequence[str], *, timeout: float = TIMEOUT_S) -> Verification:
    """Run the helper on llama-server arguments (``-m MAIN [-md MTP] --spec-type draft-mtp -c N ...``);
    when it creates the MTP draft context, once more without ``--spec-type`` for the process memory of the
    plain server (module docstring)."""
    args = args if isinstance(args, ServerArgs) else ServerArgs.of(args)
    started = time.monotonic()
    doc = _run(helper, args, timeout)
    plain_rss = None
    if doc.get("ok") and _rss(doc) is not None:
        try:
            plain_rss = _rss(_run(helper, args.without(SPEC_TYPE), timeout))
        except VerifyError:
            plain_rss = None  # the estimate keeps the one figure it has: the process with MTP
    return _verification(doc, args, time.monotonic() - started, plain_rss)


def _rss(doc: dict[str, Any]) -> int | None:
    rss = doc.get("peak_rss")
    return rss if isinstance(rss, int) and rss >= 0 else None


def _run(helper: Path, args: ServerArgs, timeout: float) -> dict[str, Any]:
    """One run of the helper: its JSON document."""
    try:
        proc = subprocess.Popen(
            [str(helper), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=os.name != "nt",
        )
    except OSError as exc:
        raise VerifyError(f"{helper}: cannot run it: {exc.strerror or exc}") from None
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Drain(proc.stdout, MAX_STDOUT, proc), _Drain(proc.stderr, MAX_STDERR_TAIL, None)
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        _kill(proc)

    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        status = proc.wait()
    finally:
        timer.cancel()
        _kill(proc)
        out.join()
        err.join()
    said = err.tail().strip().splitlines()
    last = said[-1][:300] if said else "no output on stderr"
    if timed_out.is_set():
        raise VerifyError(f"{helper.name}: no verdict within {timeout:g} s (killed)")
    if out.overflow:
        raise VerifyError(f"{helper.name}: printed more than {MAX_STDOUT} bytes (killed)")
    if status < 0:
        raise VerifyError(f"{helper.name}: killed by {signal.Signals(-status).name} ({last})")
    try:
        doc = json.loads(out.data)
    except ValueError:
        raise VerifyError(f"{helper.name}: exit {status} without a verdict ({last})") from None
    if not isinstance(doc, dict):
        raise VerifyError(f"{helper.name}: exit {status} without a verdict ({last})")
    return doc


def _verification(doc: dict[str, Any], args: ServerArgs, seconds: float, plain_rss: int | None = None) -> Verification:
    memory = doc.get("memory") or {}
    peak_rss = _rss(doc)

    def allocation(name: str) -> Allocation | None:
        m = memory.get(name)
        return None if m is None else Allocation(int(m["model"]), int(m["context"]), int(m["compute"]))

    plain, target, mtp = allocation("without_mtp"), allocation("target"), allocation("mtp")
    by = f"llama.cpp {doc.get('llama_cpp_commit') or 'unknown'}"
    estimate = None
    if plain is not None:
        with_mtp = None
        if doc["ok"] and target is not None and mtp is not None:
            # A bundled head's draft context runs on the target's weights: they count once.
            shared = "draft" not in (doc.get("models") or {})
            with_mtp = target + (Allocation(0, mtp.kv, mtp.compute) if shared else mtp)
        process = peak_rss or 0
        mtp_host = 0
        if with_mtp is not None and peak_rss is not None and plain_rss is not None:
            process, mtp_host = min(plain_rss, peak_rss), max(0, peak_rss - plain_rss)
        estimate = MemoryEstimate(int(memory["without_mtp"]["n_ctx"]), by, args.without(MODEL, DRAFT_MODEL), plain,
                                  with_mtp, process, mtp_host)
    return Verification(
        ok=bool(doc["ok"]),
        by=by,
        step=doc.get("step"),
        error=doc.get("error"),
        args=args,
        memory=estimate,
        seconds=seconds,
        peak_rss=peak_rss,
    )


class _Drain(threading.Thread):
    """Reads a pipe to its end: keeps the first ``limit`` bytes (stdout: killing the helper past that)
    or the last ``limit`` bytes (stderr), so a chatty child never blocks on a full pipe."""

    def __init__(self, pipe: IO[bytes], limit: int, kill_past: subprocess.Popen[bytes] | None) -> None:
        super().__init__(daemon=True)
        self.pipe, self.limit, self.kill_past = pipe, limit, kill_past
        self.data = b""
        self.overflow = False
        self.start()

    def run(self) -> None:
        with self.pipe:
            while chunk := self.pipe.read1(65536):  # type: ignore[attr-defined]
                self.data += chunk
                if len(self.data) > self.limit:
                    if self.kill_past is not None:
                        self.overflow = True
                        _kill(self.kill_past)
                        self.data = self.data[: self.limit]
                    else:
                        self.data = self.data[-self.limit :]

    def tail(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
