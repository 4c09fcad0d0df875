"""One engine's vocabulary as data (:class:`EngineSpec`): which options switch speculative decoding on, how
a draft length is said, where acceptance is read. Kept apart from the servers of base.py, so what reads
only the vocabulary (a diagnosis saying a fix in the engine's words) imports no server machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mtpinspect.vocabulary import Engine


@dataclass(frozen=True)
class MeanLength:
    """Acceptance an engine reports as a running average, not as counters (SGLang)."""

    mean_length: float
    acceptance: float | None


@dataclass(frozen=True)
class EngineSpec:
    """One engine's vocabulary: the options of speculative decoding, its draft length, its readings."""

    engine: Engine
    versions: str  # the releases whose flags, metric names and log lines this reads
    # Options the baseline leaves out of a --serve template (each with its value); a prefix ends in "-".
    spec_options: tuple[str, ...]
    # Options the measurement needs on the command line (appended when missing): /metrics switched on.
    required: tuple[str, ...]
    owned_by: tuple[str, ...]  # what its /v1/models says owns the model
    setting: Callable[[int], str]  # the draft length N as the engine's own options
    off: str  # what leaving speculative decoding off means in its options
    # Mean acceptance length from the server's log text of one request (SGLang), None when none.
    log_reading: Callable[[str], MeanLength | None] | None = None
    # It logs a ``draft acceptance`` line per request to cross-check the counters with (llama-server).
    draft_lines: bool = False

    def baseline_tokens(self, tokens: list[str]) -> list[str]:
        """The template's tokens without the options that switch speculative decoding on."""
        kept: list[str] = []
        skip = False
        for token in tokens:
            if skip:
                skip = False
                continue
            name = token.partition("=")[0]
            if self._is_spec(name):
                # "--flag value" drops the value too; "--flag=value" and a boolean flag do not.
                skip = "=" not in token and not self._is_boolean(name)
                continue
            kept.append(token)
        return kept

    def _is_spec(self, name: str) -> bool:
        return any(name == o or (o.endswith("-") and name.startswith(o)) or name.startswith(o + ".")
                   for o in self.spec_options)

    @staticmethod
    def _is_boolean(name: str) -> bool:
        # The speculative options these engines take without a value.
        return name in BOOLEAN_SPEC_OPTIONS


# llama.cpp's `--spec-draft-backend-sampling` (common/arg.cpp) is the only valueless one of the three engines'.
BOOLEAN_SPEC_OPTIONS = frozenset({"--spec-draft-backend-sampling"})
