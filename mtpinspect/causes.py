"""The catalogue of causes `diagnose` can name, and the Cause record it reports for each.

Every cause belongs to one mechanism, and the mechanism says how badly it hurts MTP:

- ``blocked``: MTP does not run at all (wrong flag, no head, a sidecar that does not pair, ...);
- ``zero``: MTP runs but about every draft is rejected;
- ``low``: drafts are accepted, but less than they could be (settings, kind of text);
- ``slow``: acceptance is fine, yet decoding is not faster than without MTP.

`rank.py` orders causes by mechanism weight x confidence; the catalogue order breaks ties.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mtpinspect.vocabulary import EvidenceSource, Mechanism

# Acceptance from which a head drafts well: it refutes static head warnings, and below it a class is hard.
FINE_ACCEPTANCE = 0.5
# Speed against the baseline below which MTP decodes slower (timings are noisy within 5%).
SLOWER = 0.95

MECHANISM_WEIGHT: dict[Mechanism, float] = {Mechanism.blocked: 1.0, Mechanism.zero: 0.9, Mechanism.low: 0.6, Mechanism.slow: 0.5}


@dataclass(frozen=True)
class CauseKind:
    mechanism: Mechanism
    meaning: str


# docs/diagnose.md and `diagnose --codes` print this table; its order is the tie-break of the ranking.
CAUSES: dict[str, CauseKind] = {
    "BUILD_WITHOUT_MTP": CauseKind(Mechanism.blocked, "This llama.cpp build predates MTP support (PR #22673): its --spec-type offers no `draft-mtp`, whatever the flag says"),
    "WRONG_SPEC_TYPE": CauseKind(Mechanism.blocked, "--spec-type names a type this llama-server does not know (`mtp` instead of `draft-mtp`)"),
    "NO_MTP_HEAD": CauseKind(Mechanism.blocked, "The model has no MTP head at all (its family has none)"),
    "MTP_WEIGHTS_MISSING": CauseKind(Mechanism.blocked, "The family has an MTP head but this checkpoint or GGUF lacks its weights (dropped in conversion or quantization)"),
    "SIDECAR_MISMATCH": CauseKind(Mechanism.blocked, "The mtp- sidecar comes from another model, revision or quantization (arch, n_embd, vocab, blocks differ)"),
    "SIDECAR_INCOMPLETE": CauseKind(Mechanism.blocked, "The mtp- sidecar lacks tensors llama.cpp loads a draft model with (token_embd, output_norm): llama-server stops at load"),
    "SIDECAR_NOT_PASSED": CauseKind(Mechanism.blocked, "The main GGUF has no head, an mtp- file lies beside it, and the run did not pass it with -md"),
    "NO_MTP_GRAPH": CauseKind(Mechanism.blocked, "This llama.cpp has no MTP draft graph for the architecture (the server predates its MTP support)"),
    "MTP_NOT_ENABLED": CauseKind(Mechanism.blocked, "The head is there but the run never enabled MTP (`model has unused tensor blk.N.nextn...`, no draft lines)"),
    "DRAFTER_COMBINATION": CauseKind(Mechanism.blocked, "--spec-type chains draft-mtp with another model drafter (DFlash, EAGLE) on one -md file: llama.cpp loads that file as the MTP context and stops"),
    "MTP_LOADER_BUG": CauseKind(Mechanism.blocked, "The engine's MTP weight loader skips or misnames weights the checkpoint has (vLLM \"not initialized from checkpoint\" for shared or prefixed MTP weights): an engine bug, not the checkpoint"),
    "ENGINE_LIMITATION": CauseKind(Mechanism.blocked, "The engine cannot run MTP with a setting of the run (vLLM: pipeline parallelism, the MTP drafter lacks SupportsPP)"),
    "MTP_ENGINE_CRASH": CauseKind(Mechanism.blocked, "The engine crashes with MTP on and runs without it (signal, GGML_ASSERT, abort, uncaught exception, GPU fault)"),
    "MTP_FAILED": CauseKind(Mechanism.blocked, "The MTP configuration fails to start (an error exit, not a crash) for a reason no other cause explains (the log line is the evidence)"),
    "HEAD_QUANTIZED": CauseKind(Mechanism.zero, "The MTP head is quantized or damaged (FP8/NVFP4 not excluded, very low-bit GGUF types, all-zero weights): ~0% acceptance"),
    "HEAD_DISAGREES": CauseKind(Mechanism.zero, "A head with no static defect whose drafts the model rejects: ~0% acceptance while everything loads and runs"),
    "HEAD_FOREIGN": CauseKind(Mechanism.low, "The head was trained with another trunk (a sidecar of another training run, model or revision: its embedding is not this model's): it drafts, most drafts are rejected, on easy text too"),
    "HEAD_WEAK": CauseKind(Mechanism.low, "The head drafts poorly on text any matching head drafts nearly all of (the copy probe), with no static defect: undertrained, from another fine-tune of the same base, or run wrongly"),
    "HIGH_TEMPERATURE": CauseKind(Mechanism.low, "Sampling temperature above 0: the target samples tokens the greedy draft cannot predict"),
    "HIGH_P_MIN": CauseKind(Mechanism.low, "A high --spec-draft-p-min stops the drafter early: few or no tokens are drafted"),
    "CONTEXT_NEAR_LIMIT": CauseKind(Mechanism.low, "The context is nearly full: llama-server shortens drafts to fit (n_ctx - n_tokens - 2)"),
    "PROMPT_CLASS": CauseKind(Mechanism.low, "Acceptance is low only for some kinds of text (e.g. prose vs code)"),
    "NMAX_TOO_HIGH": CauseKind(Mechanism.slow, "Per-position acceptance decays: drafting more tokens (higher n-max) costs more than it gains"),
    "SLOWER_THAN_BASELINE": CauseKind(Mechanism.slow, "Acceptance is fine but decoding is slower than without MTP on this machine (verification costs too much)"),
}


def confidence_word(confidence: float) -> str:
    """high (>= 0.8), medium (>= 0.5) or low."""
    if confidence >= 0.8:
        return "high"
    if confidence >= 0.5:
        return "medium"
    return "low"


@dataclass(frozen=True)
class Cause:
    """One explanation, with what it rests on and what to change."""

    json_properties: ClassVar[dict[str, str]] = {
        "confidence_word": "confidence_word", "mechanism": "mechanism", "score": "score",
    }

    code: str  # a key of CAUSES
    confidence: float  # 0..1
    message: str
    evidence: tuple[str, ...]
    fix: str
    sources: tuple[EvidenceSource, ...]

    def __post_init__(self) -> None:
        if self.code not in CAUSES:
            raise ValueError(f"unknown cause code {self.code!r}")

    @property
    def mechanism(self) -> Mechanism:
        return CAUSES[self.code].mechanism

    @property
    def confidence_word(self) -> str:
        return confidence_word(self.confidence)

    @property
    def score(self) -> float:
        return MECHANISM_WEIGHT[self.mechanism] * self.confidence
