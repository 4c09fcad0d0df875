"""The result of `check`: a verdict, findings with evidence, per-runtime status and commands.

A CheckReport is check's JSON document as it stands (mtpinspect/schemas/check.schema.json, through
mtpinspect.jsonable); the finding codes are a fixed catalogue (FINDINGS) so scripts can match on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from mtpinspect.runtime.n_max import NMaxAdvice
from mtpinspect.vocabulary import Layout, MtpExcluded, RuntimeStatus, Severity, SourceKind

if TYPE_CHECKING:
    from mtpinspect.inspection.origin import Origin
    from mtpinspect.runtime.verify import MemoryEstimate
    from mtpinspect.sources.target import AppModel

# code -> (what it means, default severity). docs/check.md and `check --codes` print this table.
FINDINGS: dict[str, tuple[str, Severity]] = {
    "MTP_PRESENT": ("MTP weights are present: how many layers, and where they were found", Severity.info),
    "NO_MTP": ("The model has no MTP head (the config announces none, or 0, and no MTP tensors exist)", Severity.info),
    "MTP_FROM_TENSORS_ONLY": ("The config names no MTP depth; only the MTP tensors tell (Qwen3-Next)", Severity.info),
    "MTP_WEIGHTS_MISSING": ("The config announces MTP layers but the checkpoint has no (or fewer) MTP weights; worded by "
                            "origin: the maker never published them, a derivative dropped them, or unknown", Severity.error),
    "MTP_UNDETERMINED": ("The config announces MTP layers for a model_type the family table (inspection/naming.py "
                         "MTP_FAMILIES) does not know, and no tensor carries a name any family gives its head: the names "
                         "looked for are listed; whether the head is there cannot be told", Severity.warning),
    "MTP_DROPPED_IN_CONVERSION": ("A GGUF of a family that has an MTP head, converted without it", Severity.error),
    "MTP_EXCLUDED": ("The quantization exclusion list keeps every MTP module in high precision", Severity.info),
    "MTP_QUANTIZED": ("The MTP head is quantized (list and header dtypes); judged by who quantized it", Severity.warning),
    "MTP_PARTIALLY_EXCLUDED": ("Some MTP modules are excluded from quantization, others are not (named)", Severity.warning),
    "FUSED_NAME_MISMATCH": ("The exclusion list names unfused modules (q/k/v_proj, gate/up_proj) that engines fuse: only "
                            "some shards (every engine quantizes the fused module), or all of them for an engine that "
                            "matches the fused name itself (named, per engine)", Severity.warning),
    "MTP_UNDECLARED_BF16": ("The MTP head is BF16 in its headers but the exclusion list does not exclude it: engines whose "
                            "loader builds those modules quantized are at risk (named, with the loader)", Severity.warning),
    "MTP_SIDECAR": ("The MTP head ships as a separate mtp- GGUF that must be passed with -md", Severity.info),
    "SIDECAR_MISMATCH": ("The mtp- sidecar does not pair with the main GGUF: arch, n_embd, vocab, key (error: llama-server "
                         "stops) or trunk depth, tokenizer strings (warning: it drafts with another model's head)", Severity.error),
    "SIDECAR_FOREIGN": ("The mtp- sidecar's embedding rows are not the main GGUF's (sampled rows compared): its head was "
                        "trained with another trunk (another training run, model or revision); it loads and drafts, "
                        "and most drafts are rejected", Severity.error),
    "MTP_HEAD_NON_FINITE": ("The embedding an MTP head drafts with (an mtp- sidecar's token_embd, a bundled head's "
                            "nextn.embed_tokens or token_embd; sampled rows) holds NaN or Inf: a broken head that drafts "
                            "garbage", Severity.error),
    "SIDECAR_INCOMPLETE": ("The mtp- sidecar lacks tensors llama.cpp needs to load it as a draft model (token_embd, output_norm)",
                           Severity.error),
    "SIDECAR_NOT_FOUND": ("The main GGUF has no MTP head and no mtp- sidecar was found beside it", Severity.warning),
    "LOW_BIT_MTP_HEAD": ("MTP tensors at a very low-bit ggml type (IQ3_S, Q2_K...): expect low or zero acceptance", Severity.warning),
    "ARCH_NO_MTP_GRAPH": ("The pinned llama.cpp has no MTP draft graph for this architecture", Severity.error),
    "NEXTN_COUNT_UNSUPPORTED": ("More MTP layers than the architecture's llama.cpp graph accepts", Severity.warning),
    "SEPARATE_DRAFTER": ("MTP drafting uses a separate drafter checkpoint (Gemma 4 gemma4_assistant)", Severity.info),
    "HEADERS_NOT_READ": ("Some MTP shard headers were not read; dtype checks cover the ones that were", Severity.info),
    "NO_WEIGHT_FILES": ("A local folder with a config.json that declares MTP layers and no weight files, index or headers "
                        "(config only): whether the MTP weights exist cannot be told", Severity.warning),
    "LLAMA_CPP_REFUSED": ("The pinned llama.cpp's own loader refuses the model with draft-mtp (its message quoted)", Severity.error),
    "PATTERN_NOT_EVALUATED": ("An exclusion regex backtracks past its time bound; it is reported and counts as matching nothing", Severity.warning),
    "OLLAMA_MTP_OFF": ("An Ollama model whose GGUF carries an MTP head but whose Modelfile sets no draft_num_predict "
                       "(or 0): Ollama decodes without speculation", Severity.warning),
    "OLLAMA_TAG_WITHOUT_HEAD": ("An Ollama tag named for MTP (-mtp), or one that sets draft_num_predict, whose GGUF has "
                                "no MTP head and whose manifest has no DRAFT layer", Severity.warning),
    "OLLAMA_DRAFT_LAYER": ("The Ollama model carries a separate drafter (a DRAFT layer): Ollama drafts with it",
                           Severity.info),
}

# Findings that, at severity error, say no engine can draft with the head as it is (it loads garbage or is
# refused): no runtime is "supported" beside one (verdict.py). Other error findings (a head quantized by a
# third party) leave it loading and drafting: "at risk".
BLOCKING_FINDINGS = ("MTP_WEIGHTS_MISSING", "SIDECAR_MISMATCH", "SIDECAR_INCOMPLETE", "ARCH_NO_MTP_GRAPH",
                     "MTP_HEAD_NON_FINITE")


@dataclass(frozen=True)
class Finding:
    code: str  # a key of FINDINGS
    severity: Severity
    message: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verified:
    """The engine's own verdict (inspection/engine.py): did llama.cpp start the model with draft-mtp?"""

    ok: bool
    by: str  # "llama.cpp <commit>"
    error: str | None  # llama.cpp's own message when it refused


@dataclass(frozen=True)
class RuntimeVerdict:
    status: RuntimeStatus
    reason: str
    command: str | None = None
    verified: Verified | None = None  # None: only the rules speak (the engine was not asked)
    setting: str | None = None  # Ollama, LM Studio: the app's own setting that runs MTP (a Modelfile line, a switch)


@dataclass(frozen=True)
class QuantizationSummary:
    method: str | None
    algo: str | None
    source: str | None
    exclusion_key: str | None
    excluded_count: int
    mtp_excluded: MtpExcluded
    mtp_modules_kept: tuple[str, ...] = ()
    mtp_modules_quantized: tuple[str, ...] = ()
    # A GGUF's own word for its quantization (general.file_type: Q8_0, Q4_K_M...); None for checkpoints.
    gguf_file_type: str | None = None


@dataclass(frozen=True)
class MtpSize:
    parameters: int | None
    bytes: int | None
    # MTP bytes / download bytes; None when unknown (stand-in files cut short cannot give a share).
    share_of_download: float | None


@dataclass
class CheckReport:
    json_schema: ClassVar[str] = "check"

    source: str
    source_kind: SourceKind
    revision: str | None
    usable: bool
    verdict: str
    mtp_layers: int
    mtp_layers_declared: int | None
    declared_by: str | None
    layout: Layout
    architecture: dict[str, Any]
    quantization: QuantizationSummary
    runtimes: dict[str, RuntimeVerdict]
    findings: list[Finding]
    mtp_size: MtpSize
    mtp_types: dict[str, int]  # dtype or ggml type -> MTP tensors of that type
    files: dict[str, list[str]]
    bytes_read: int
    bytes_total: int
    requests: int
    waves: int  # sequential groups of Hub requests: the round trips the check waited for (0 for local files)
    bytes_cached: int  # bytes the header cache gave instead of the Hub
    # What llama-server would allocate with and without MTP, from llama.cpp's metadata-only load (GGUF only).
    memory: MemoryEstimate | None = None
    notes: list[str] = field(default_factory=list)
    origin: Origin | None = None  # who made the checkpoint, for HF checkpoints (None for GGUF)
    app: AppModel | None = None  # ollama: and lmstudio: sources: the model in the app's terms
    app_n_max: NMaxAdvice | None = None  # GGUF: the n-max in the ollama and lm-studio settings

    @property
    def exit_code(self) -> int:
        return 0 if self.usable else 1

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]


class CheckedModels(list):  # type: ignore[type-arg]
    """`check --all`'s results, one per model (a list, as the API always returned), and how many models were
    not judged because the command's --deadline passed first (``not_judged``, of a ``deadline`` in seconds):
    those get no row each, one footer line counts them."""

    not_judged: int = 0
    deadline: float | None = None


@dataclass
class CheckFailure:
    """One model of `check --all` that could not be read: its files and the one line `check` would print."""

    json_schema: ClassVar[str] = "check"

    source: str
    source_kind: SourceKind
    revision: str | None
    files: dict[str, list[str]]
    error: str
    usable: ClassVar[bool] = False
