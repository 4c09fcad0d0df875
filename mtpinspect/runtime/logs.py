"""Reading llama-server's stderr log: draft acceptance lines, the reason a start failed, unused MTP tensors.

The texts come from llama.cpp's sources (common/speculative.cpp, common/arg.cpp, src/llama-model-loader.cpp,
tools/server/server-context.cpp of the pinned commit); older and newer
builds word the acceptance line differently, so every format seen in the wild is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_NUMBER = r"-?nan|-?inf|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"

# "draft acceptance = 0.75000 (   30 accepted /    40 generated)" plus "draft acceptance rate = ..." (older),
# ", mean len = 2.50" (current) or ", mean acceptance length = 2.92, acceptance rate per position = (...)"
# (PR #24536 at review). The group names say what each number is (logread/formats.py reads them).
DRAFT_LINE = re.compile(
    r"draft acceptance(?: rate)? = (?P<rate>" + _NUMBER + r")\s*\(\s*(?P<acc>\d+) accepted /\s*(?P<gen>\d+) generated\)"
    r"(?:, mean (?:len|acceptance length) =\s*(?P<len>" + _NUMBER + r"))?"
    r"(?:, acceptance rate per position = \((?P<pos>[^)]*)\))?"
)
# Each verification step with LLAMA_TRACE=1 (server-context.cpp): "accepted  1/ 3 draft tokens", and on a
# context that cannot drop a tail of tokens (recurrent, hybrid: qwen35, qwen3next) a partly rejected draft
# "accepted  1/ 3 draft tokens (restore checkpoint)": the recurrent state is restored and the accepted
# tokens verified again (a replay, logged as a step of its own).
VERIFY_LINE = re.compile(r"accepted\s+\d+/\s*\d+ draft tokens(?P<restore> \(restore checkpoint\))?")
# The TRACE line printed right after the acceptance line with -lv 4.
PER_POSITION_LINE = re.compile(r"acc per pos = \((?P<pos>[^)]*)\)")
_UNUSED_NEXTN_RE = re.compile(r"model has unused tensor (\S*nextn\S*) \(size")

# Prefixes llama.cpp puts before a message: "srv    load_model: ", "llama_model_load: ", "E ", timestamps.
_PREFIX_RE = re.compile(r"^(?:\d+\.\d+\.\d+\.\d+\s+)?(?:[EWIDT] )?(?:[a-z]{3,4}\s+)?[\w:]+:\s+")


@dataclass(frozen=True)
class DraftStats:
    """One request's draft statistics as the server logged them when the request finished."""

    acceptance: float
    accepted: int
    generated: int
    mean_length: float | None
    per_position: tuple[float, ...] | None
    raw_line: str


def _floats(text: str) -> tuple[float, ...] | None:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        return tuple(float(p) for p in parts) if parts else None
    except ValueError:
        return None


def parse_draft_lines(text: str) -> list[DraftStats]:
    """Every draft acceptance line in a log, in order; a following "acc per pos" line fills per_position."""
    found: list[DraftStats] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = DRAFT_LINE.search(line)
        if match is None:
            continue
        ratio, accepted, generated, mean_len, per_pos = match.groups()
        per_position = _floats(per_pos) if per_pos is not None else None
        if per_position is None and i + 1 < len(lines):
            following = PER_POSITION_LINE.search(lines[i + 1])
            if following is not None:
                per_position = _floats(following.group(1))
        found.append(
            DraftStats(
                acceptance=float(ratio),
                accepted=int(accepted),
                generated=int(generated),
                mean_length=float(mean_len) if mean_len is not None else None,
                per_position=per_position,
                raw_line=line.strip(),
            )
        )
    return found


@dataclass(frozen=True)
class VerifySteps:
    """The traced verification steps of a stretch of log: every step logged, and those that restored a
    recurrent-state checkpoint."""

    steps: int
    restores: int


def verify_steps(text: str) -> VerifySteps | None:
    """The LLAMA_TRACE=1 step lines of ``text``; None when it has none (the server was not traced, or
    drafted nothing)."""
    matches = [m for m in (VERIFY_LINE.search(line) for line in text.splitlines()) if m is not None]
    if not matches:
        return None
    return VerifySteps(len(matches), sum(m.group("restore") is not None for m in matches))


def unused_nextn_tensors(log_text: str) -> list[str]:
    """NextN tensors the loader skipped ("model has unused tensor blk.N.nextn... -- ignoring"), in log order."""
    return _UNUSED_NEXTN_RE.findall(log_text)


def _strip_prefix(line: str) -> str:
    return _PREFIX_RE.sub("", line.strip(), count=1).strip()


def _after(marker: str) -> Callable[[str], str]:
    """A reason taken from the text that follows a marker on the same line."""

    def pick(line: str) -> str:
        return line[line.index(marker):].strip()

    return pick


# Checked in this order: the first kind found anywhere in the log wins, so the causes come before the
# generic "failed to load model" / "exiting due to ..." lines that follow them.
_REASONS: tuple[tuple[re.Pattern[str], Callable[[str], str]], ...] = (
    (re.compile(r"error while handling (?:argument|environment variable) "), lambda line: line.strip()),
    (re.compile(r"error: invalid argument: "), _after("invalid argument: ")),
    (re.compile(r"the argument has been removed"), _after("the argument has been removed")),
    (re.compile(r"doesn't contain MTP layers"), _strip_prefix),
    (re.compile(r"failed to initialize speculative decoding context: "), _after("failed to initialize")),
    (re.compile(r"synthetic acceptance requires"), _strip_prefix),
    (re.compile(r"failed to open GGUF file|invalid magic characters"), _strip_prefix),
    (re.compile(r"error loading model: "), _after("error loading model: ")),
    (re.compile(r"GGML_ASSERT\(.*\) failed"), _after("GGML_ASSERT")),
    (re.compile(r"^\s*what\(\):\s+"), lambda line: "uncaught exception: " + line.split("what():", 1)[1].strip()),
    (re.compile(r"GGML_ABORT|ggml_abort|\bfatal error\b"), _strip_prefix),
    (re.compile(r"out of memory|failed to allocate|cudaMalloc failed"), _strip_prefix),
    (re.compile(r"couldn't bind HTTP server socket|couldn't start HTTP listener"), _strip_prefix),
    (re.compile(r"failed to create MTP context"), _strip_prefix),
    (re.compile(r"failed to load (?:draft |multimodal )?model"), _strip_prefix),
    (re.compile(r"failed to create_context"), _strip_prefix),
    (re.compile(r"error: |\berror\b.*:|failed", re.IGNORECASE), _strip_prefix),
)

# Lines that mention errors or failures but are part of a healthy start.
_BENIGN_RE = re.compile(
    r"failed to measure the memory of the extra model|no usable GPU found|Git not found|"
    r"chat template|ctx_shift is not supported|cache_reuse is not supported|--fit"
)


def failure_reason(log_text: str) -> str | None:
    """The single most telling line of a failed start or a crash, without llama.cpp's prefixes."""
    lines = [line for line in log_text.splitlines() if line.strip() and not _BENIGN_RE.search(line)]
    for pattern, pick in _REASONS:
        for line in lines:
            if pattern.search(line):
                reason = pick(line)
                return reason.rstrip(" .") or line.strip()
    return None


def last_line(log_text: str) -> str:
    """The last non-empty line of a log, or "(empty log)"."""
    for line in reversed(log_text.splitlines()):
        if line.strip():
            return line.strip()
    return "(empty log)"
