"""The words mtpinspect's results are made of, each a closed set: one place to read what a field may hold.

Every set is a str Enum (:class:`Word`): a member compares equal to its value, prints as it and is
written to JSON as it, so documents and journals hold plain strings while the code names the member.
"""

from __future__ import annotations

import enum
from typing import Literal


class Word(str, enum.Enum):
    """A member of a closed vocabulary; ``str()`` and f-strings give its value on every Python version."""

    def __str__(self) -> str:
        return str(self.value)


class SourceKind(Word):
    """Where check read the model from."""

    hub = "hub"
    local_dir = "local-dir"
    local_file = "local-file"
    ollama = "ollama"  # a model in the local Ollama store (its GGUF blob)
    lm_studio = "lm-studio"  # a GGUF in LM Studio's models folder


class Layout(Word):
    """Where a model keeps its MTP head."""

    bundled = "bundled"  # inside the GGUF
    sidecar = "sidecar"  # in a separate mtp- GGUF, passed with -md
    separate_checkpoint = "separate-checkpoint"  # a separate drafter model (Gemma 4 assistant)
    checkpoint = "checkpoint"  # inside an HF safetensors checkpoint
    none = "none"


class Pairing(Word):
    """How check chose the mtp- sidecar of a main GGUF (inspection/pairing.py)."""

    given = "given"  # --mtp-file
    name = "name"  # the sidecar's name is the main file's: mtp-<stem>.gguf, <stem>-mtp.gguf, MTP/<stem>.gguf
    same_model = "same-model"  # its name is the same model's in another quantization
    header = "header"  # no name relates them; architecture, widths, vocabulary, blocks and tokenizer agree
    only = "only"  # the one mtp- file no other model claims, though nothing relates it: the rules judge the fit
    draft_layer = "draft-layer"  # an Ollama model's DRAFT layer: its manifest names the drafter


class Severity(Word):
    error = "error"
    warning = "warning"
    info = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe: findings sort by it."""
        return list(Severity).index(self)


class RuntimeStatus(Word):
    """What one engine will do with the head."""

    supported = "supported"
    at_risk = "at-risk"  # loads and drafts, but expect low or zero acceptance
    unsupported = "unsupported"
    unknown = "unknown"
    off = "off"  # the head works, but the app's own settings leave MTP off (one setting switches it on)

    @property
    def usable(self) -> bool:
        """The head loads and drafts (at risk still counts: the verdict says how likely it is to fail;
        off counts too: the finding says which setting switches it on)."""
        return self in (RuntimeStatus.supported, RuntimeStatus.at_risk, RuntimeStatus.off)


class AppEngine(Word):
    """What an app runs a model on: Ollama runs a GGUF on llama.cpp's llama-server and a safetensors
    model on its MLX engine (mtpinspect/app_facts.py)."""

    llama_server = "llama-server"
    mlx = "mlx"


class Relation(Word):
    """How a Hub repo derives from its base model: the model tree's tag base_model:<relation>:ORG/NAME."""

    quantized = "quantized"
    finetune = "finetune"
    adapter = "adapter"
    merge = "merge"


class HeadState(Word):
    """What became of the MTP head in a download (find), read from check's findings."""

    kept = "kept"  # present at its original precision
    excluded = "excluded"  # the quantization's exclusion list keeps it in high precision
    quantized = "quantized"  # quantized with the rest (or partly)
    low_bit = "low-bit"  # at a very low-bit GGUF type: expect low or zero acceptance
    foreign = "foreign"  # an mtp- sidecar trained with another trunk: its embedding rows are not the model's
    dropped = "dropped"  # the model has a head and this download lost it (a conversion, a re-upload)
    missing = "missing"  # no head in this download, and nothing says it should have one


class App(Word):
    """A desktop app that runs GGUF models with its own llama.cpp (mtpinspect/apps.py: its settings)."""

    ollama = "ollama"
    lm_studio = "lm-studio"


class OriginKind(Word):
    """Who made (and quantized) a checkpoint (inspection/origin.py)."""

    maker = "maker"  # the family's maker: its own release
    first_party_quantizer = "first-party-quantizer"  # nvidia, RedHatAI, amd: quantize with the serving stack in mind
    third_party = "third-party"
    unknown = "unknown"


class OriginSignal(Word):
    """The signal that decided who made a checkpoint, strongest first."""

    card = "model card"
    hub_repo = "Hub repo id"
    cache_folder = "HF cache folder"
    name_or_path = "config.json _name_or_path"
    format = "quantization format"


class Conversion(Word):
    """What llama.cpp's convert_hf_to_gguf.py does with a family's MTP head."""

    bundled = "bundled"
    sidecar = "sidecar"  # only in a separate --mtp conversion
    dropped = "dropped"
    unknown = "unknown"


class GraphSupport(Word):
    """Whether the pinned llama.cpp can draft with an architecture's nextn tensors."""

    graph = "graph"  # it has an MTP draft graph
    unused = "unused"  # it keeps the tensors but has no graph
    unknown = "unknown"


class Mechanism(Word):
    """How a diagnose cause hurts MTP, worst first (mtpinspect/causes.py weighs each)."""

    blocked = "blocked"  # MTP does not run at all
    zero = "zero"  # it runs, but about every draft is rejected
    low = "low"  # drafts are accepted, less than they could be
    slow = "slow"  # acceptance is fine, decoding is not faster


class EvidenceSource(Word):
    """Where a cause's evidence came from."""

    static = "static"  # check's findings
    args = "args"  # the run's llama-server flags
    probe = "probe"  # the short run on the real llama-server
    log = "log"  # a log of a run made elsewhere


class RunStatus(Word):
    """How one measured sweep request ended."""

    ok = "ok"
    crashed = "crashed"  # the server died during the request
    error = "error"  # the request failed otherwise


class ServerStatus(Word):
    started = "started"
    failed = "failed"


class MachineState(Word):
    """What other work did to the machine while a sweep measured (sweep/machine_load.py says when it is busy)."""

    quiet = "quiet"
    busy = "busy"  # other work took enough cores during some runs that their speeds may be disturbed


# Whether a quantization keeps the MTP head in high precision: True (all of it, as the list declares), False
# (none of it), "partial", "undeclared" (the header has it in BF16 while the list does not exclude it: engines
# build it quantized), or None (nothing quantized, or nothing to judge).
MtpExcluded = Literal[True, False, "partial", "undeclared"] | None
PARTIAL: Literal["partial"] = "partial"
UNDECLARED: Literal["undeclared"] = "undeclared"


class NMaxSource(Word):
    """Where an advised n-max comes from (runtime/n_max.py words each one)."""

    rule_of_thumb = "rule-of-thumb"  # nothing about this model was measured on this machine
    design = "expected-from-design"  # the constructed tiny model: its acceptance was chosen, so its lengths are known
    measured = "measured"  # a sweep (or diagnose's probe) ran the baseline and each n-max on this machine


class WorkaroundMode(Word):
    """What a sweep does when an MTP configuration crashes the engine and the baseline does not."""

    auto = "auto"  # find a change that gets it running (runtime/workaround_search.py) and retry once with it
    off = "off"  # record the crash and go on


class RequestKind(Word):
    """How a sweep sends each prompt to llama-server (sweep --request)."""

    auto = "auto"  # what an app would send for this model: chat when the GGUF carries a chat template
    chat = "chat"  # POST /v1/chat/completions: the prompt as a user message, through the chat template
    completion = "completion"  # POST /completion: the prompt as raw text, continued as it stands


class Reasoning(Word):
    """A chat request's reasoning (thinking) block, where the model's template has a switch for it (--reasoning)."""

    auto = "auto"  # as an app leaves it: on
    on = "on"
    off = "off"


class Engine(Word):
    """The inference engine a log comes from."""

    llama_cpp = "llama.cpp"
    vllm = "vllm"
    sglang = "sglang"
    unknown = "unknown"


class LogKind(Word):
    """What a file given to `diagnose --log` is."""

    llama_server = "llama-server"  # llama-server (or llama-cli, llama-speculative-simple) stderr
    vllm = "vllm"  # a vLLM server log, `vllm bench serve` output or the offline spec_decode example's summary
    sglang = "sglang"  # an SGLang server log
    metrics = "metrics"  # a saved Prometheus /metrics page (or a pasted query table of its samples)
    fragment = "fragment"  # a fragment no engine's log format frames (a traceback's tail, an app's error line)
    mtp_bench = "mtp-bench"  # mtp-bench.py's printed rows and Aggregate JSON, or its --out file (formats/mtp_bench.py)
