"""The changes that get a crashing MTP configuration of llama-server to run, one suspect at a time.

MTP crashes reported against llama.cpp cluster around a few features: a batch too small for the
sampled token plus the draft, tensor-parallel split mode, a quantized draft KV cache, CPU weight
repacking (extra buffer types such as AMX take quantized weights), flash attention, threading, long
drafts, and the head's weights on a GPU. Each :class:`Workaround` is one change that avoids one of
them. :func:`suggest` ranks them for a crash seen in a log; workaround_search.py tries them on the real
server, and a :class:`WorkaroundSearch` is what it found. Kept apart from that search, so a diagnosis of
logs reads the catalogue without importing the server machinery.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import ClassVar

from mtpinspect.runtime.crash import Crash, CrashKind
from mtpinspect.runtime.flags import (
    BATCH,
    DRAFT_CACHE_TYPE_K,
    DRAFT_CACHE_TYPE_V,
    DRAFT_GPU_LAYERS,
    DRAFT_MODEL,
    FLASH_ATTN,
    GPU_LAYERS,
    N_MAX,
    NO_REPACK,
    OVERRIDE_TENSOR,
    SPLIT_MODE,
    THREADS,
    UBATCH,
    Flag,
    ServerArgs,
)


class Workaround(str, enum.Enum):
    """One change to a llama-server command line; the value is how users see it."""

    DEFAULT_BATCH = "without -b/-ub"
    NO_TENSOR_SPLIT = "without -sm tensor"
    DRAFT_CACHE_F16 = "without --spec-draft-type-k/v"
    NO_REPACK = "--no-repack"
    FLASH_ATTN_OFF = "-fa off"
    ONE_THREAD = "-t 1"
    N_MAX_1 = "--spec-draft-n-max 1"
    HEAD_ON_CPU = "MTP head on the CPU"

    @property
    def reason(self) -> str:
        return _REASONS[self]

    @property
    def phrase(self) -> str:
        """How the change reads after a verb: "with --no-repack", "without -b/-ub"."""
        return self.value if self.value.startswith("without") else f"with {self.value}"

    def apply(self, args: ServerArgs, mtp_block: int | None = None) -> ServerArgs | None:
        """``args`` with this change made, or None when the change does not apply to them."""
        if self is Workaround.DEFAULT_BATCH:
            return args.without(BATCH, UBATCH) if args.has(BATCH, UBATCH) else None
        if self is Workaround.NO_TENSOR_SPLIT:
            return args.without(SPLIT_MODE) if args.value(SPLIT_MODE) == "tensor" else None
        if self is Workaround.DRAFT_CACHE_F16:
            draft_cache = (DRAFT_CACHE_TYPE_K, DRAFT_CACHE_TYPE_V)
            return args.without(*draft_cache) if args.has(*draft_cache) else None
        if self is Workaround.NO_REPACK:
            return None if args.has(NO_REPACK) else args.added(*NO_REPACK.spelled())
        if self is Workaround.FLASH_ATTN_OFF:
            return _set(args, FLASH_ATTN, "off")
        if self is Workaround.ONE_THREAD:
            return _set(args, THREADS, "1")
        if self is Workaround.N_MAX_1:
            return _set(args, N_MAX, "1")
        return _head_on_cpu(args, mtp_block)


def _set(args: ServerArgs, flag: Flag, value: str) -> ServerArgs | None:
    return None if args.value(flag) == value else args.without(flag).added(*flag.spelled(value))


_REASONS = {
    Workaround.DEFAULT_BATCH: "a batch must hold the sampled token and the whole draft (1 + n-max tokens)",
    Workaround.NO_TENSOR_SPLIT: "tensor-parallel split mode and the MTP context crash together in several builds",
    Workaround.DRAFT_CACHE_F16: "a quantized draft KV cache is a frequent MTP crash",
    Workaround.NO_REPACK: "CPU weight repacking (extra buffer types such as AMX) hands the MTP graph weights in a layout it cannot use",
    Workaround.FLASH_ATTN_OFF: "flash-attention kernels and the MTP graph's shapes crash together in some builds",
    Workaround.ONE_THREAD: "a threading race in the draft path goes away with one thread",
    Workaround.N_MAX_1: "shorter drafts avoid buffers sized for one draft token",
    Workaround.HEAD_ON_CPU: "keeping the MTP weights off the GPU avoids GPU faults in the head's kernels",
}


def _head_on_cpu(args: ServerArgs, mtp_block: int | None) -> ServerArgs | None:
    if args.has(DRAFT_MODEL):
        return _set(args, DRAFT_GPU_LAYERS, "0")
    if args.value(GPU_LAYERS) in (None, "0") or args.has(OVERRIDE_TENSOR):
        return None  # nothing on a GPU, or the user already places tensors: leave that to them
    pattern = rf"blk\.{mtp_block}\.=CPU" if mtp_block is not None else r"\.nextn\.=CPU"
    return args.added(*OVERRIDE_TENSOR.spelled(pattern))


# What a crash seen in a log points at: (pattern over the crash and the log, the changes it suggests).
_SIGNS: tuple[tuple[re.Pattern[str], tuple[Workaround, ...]], ...] = (
    (re.compile(r"batch must be large enough"), (Workaround.DEFAULT_BATCH, Workaround.N_MAX_1)),
    (re.compile(r"split[-_ ]mode\W+tensor|-sm tensor|backend-meta|\bmeta\b.*backend", re.IGNORECASE), (Workaround.NO_TENSOR_SPLIT,)),
    (re.compile(r"-ctkd|-ctvd|spec-draft-type-[kv]|cache-type-[kv]-draft|type_[kv]_draft"), (Workaround.DRAFT_CACHE_F16,)),
    (re.compile(r"fattn|flash[-_ ]?attn", re.IGNORECASE), (Workaround.FLASH_ATTN_OFF,)),
    (re.compile(r"CPU_REPACK|\bAMX\b|repack", re.IGNORECASE), (Workaround.NO_REPACK,)),
)


def suggest(crash: Crash, log_text: str = "") -> list[Workaround]:
    """The changes to try, most likely first, for a crash seen in a log (no experiment possible): what the
    crash text and the log point at, then GPU faults' usual suspects, then the rest of the catalogue."""
    text = "\n".join([crash.message, crash.where or "", *crash.lines, log_text])
    ranked: list[Workaround] = [w for pattern, changes in _SIGNS if pattern.search(text) for w in changes]
    if crash.kind is CrashKind.GPU_FAULT:
        ranked += [Workaround.HEAD_ON_CPU, Workaround.FLASH_ATTN_OFF, Workaround.NO_TENSOR_SPLIT]
    return list(dict.fromkeys([*ranked, *Workaround]))


@dataclass(frozen=True)
class Trial:
    """One change, tried: the arguments it ran with and what happened."""

    workaround: Workaround
    args: ServerArgs
    ok: bool
    outcome: str  # "starts and decodes", or the crash / failure in one line


@dataclass(frozen=True)
class WorkaroundSearch:
    json_properties: ClassVar[dict[str, str]] = {"fix": "fix", "summary": "summary"}

    crash: Crash | None  # the crash being worked around, as first seen
    trials: tuple[Trial, ...]

    @property
    def fix(self) -> Trial | None:
        """The first change that made MTP start and decode; None when none did."""
        return next((t for t in self.trials if t.ok), None)

    @property
    def summary(self) -> str:
        fix = self.fix
        if fix is not None:
            return f"verified: starts and decodes {fix.workaround.phrase}"
        tried = ", ".join(t.workaround.value for t in self.trials) or "no change applies to these arguments"
        return f"no single change made it start and decode (tried: {tried})"
