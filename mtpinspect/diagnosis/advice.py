"""What to change, in the words of the engine whose log shows the problem.

A vLLM or SGLang run is fixed with that engine's settings (its version, the ``--speculative-config``
method, the drafter checkpoint), never with a GGUF re-export; llama.cpp advice is for llama.cpp logs.
:data:`KNOWN_ENGINE_BUGS` lists engine bugs that a log's settings or figures point at, each from a
public thread where the cause was established (the citation is in the change).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mtpinspect.logread.runs import LogEvidence
from mtpinspect.runtime.engines import SPECS, spec_of
from mtpinspect.runtime.flags import N_MAX
from mtpinspect.vocabulary import Engine

# A sidecar without the shared tensors a draft model loads with: the pinned converter's --mtp writes
# token_embd, output_norm and output into the mtp- file.
SIDECAR_REMAKE_FIX = ("re-make the mtp- file with llama.cpp's python convert_hf_to_gguf.py MODEL_DIR --mtp (it writes "
                      "token_embd, output_norm and output into it), or use a release whose mtp- file carries them")

# A head trained with another trunk: only the head of the same release drafts for this one.
FOREIGN_HEAD_FIX = ("use the head released with this exact model: its own mtp- file (the same repo, revision and "
                    "conversion as the main GGUF, passed with -md) or a GGUF that bundles the head; or re-export it with "
                    "python convert_hf_to_gguf.py MODEL_DIR --mtp from the snapshot the main GGUF was converted from")

# A cliff: at least this many deepest positions never accepted while the one before them was.
CLIFF_POSITIONS = 3
FIRST_POSITION_WORKS = 0.5


@dataclass(frozen=True)
class KnownBug:
    engine: Engine
    seen: Callable[[LogEvidence], str | None]  # what in the log points at the bug, or None
    change: str


def _fp8_kv_cache(log: LogEvidence) -> str | None:
    dtype = log.kv_cache_dtype or ""
    return f"the engine runs an {dtype} KV cache (kv_cache_dtype={dtype})" if dtype.startswith("fp8") else None


def position_cliff(log: LogEvidence) -> str | None:
    """A head that drafts well at first (position 1 accepted at least half the time) whose deepest positions
    are accepted exactly never: a cliff, not a decay."""
    rates = log.per_position
    last_accepted = max((i for i, r in enumerate(rates) if r > 0), default=None)
    if last_accepted is None or rates[0] < FIRST_POSITION_WORKS or len(rates) - 1 - last_accepted < CLIFF_POSITIONS:
        return None
    return (f"positions {last_accepted + 2}-{len(rates)} were never accepted while position {last_accepted + 1} was "
            f"({rates[last_accepted]:.3f}): a cliff to exactly 0, not a decay")


KNOWN_ENGINE_BUGS: tuple[KnownBug, ...] = (
    # vllm-project/vllm#41789 (Gemma 4 MTP, 0.2% acceptance with an fp8 KV cache); PRs #48666 and #49262.
    KnownBug(Engine.vllm, _fp8_kv_cache,
             "try without --kv-cache-dtype fp8, or a vLLM with PRs #48666/#49262 (MTP draft layers kept the default "
             "FP8 KV scales of 1.0 instead of the target's)"),
    # AEON-7/Qwen3.6-27B-AEON-Ultimate-Uncensored-DFlash#6: drafter layers run with the wrong attention; PR #40898.
    KnownBug(Engine.vllm, position_cliff,
             "update vLLM: deep positions that collapse to exactly 0 are what a drafter run wrongly by the engine looks "
             "like (DFlash sliding-window layers run as full attention past ~2k tokens, fixed in vLLM PR #40898)"),
)


def known_bugs(log: LogEvidence | None) -> list[tuple[str, str]]:
    """(what the log shows, what to change) for each known engine bug the log points at."""
    if log is None:
        return []
    found = [(bug.seen(log), bug.change) for bug in KNOWN_ENGINE_BUGS if bug.engine is log.runtime]
    return [(sign, change) for sign, change in found if sign is not None]


def n_max_setting(engine: Engine, n: int) -> str:
    """How many tokens to draft per step, in the engine's own setting."""
    if engine is Engine.vllm:
        return f"num_speculative_tokens {n}"
    if engine is Engine.sglang:
        return f"--speculative-num-steps {n}"
    return f"{N_MAX.spellings[0]} {n}"


def n_max_fix(engine: Engine, n: int) -> str:
    """Draft n tokens per step, in the options of the engine the probe measured (llama.cpp's with vLLM's beside)."""
    setting = n_max_setting(engine, n)
    return f"{setting} (vLLM: {n_max_setting(Engine.vllm, n)})" if engine is Engine.llama_cpp else setting


def mtp_off_fix(engine: Engine) -> str:
    """Leave MTP off, or run it where verifying a draft is cheap, in the engine's terms."""
    if engine is Engine.llama_cpp:
        return ("leave MTP off here (drop --spec-type draft-mtp), or run where verification is cheap (a GPU: "
                "-ngl 99 with a CUDA build); measure the cost curve: mtpinspect sweep MODEL --synthetic 0.5,0.7,0.9,1.0")
    off = f"serve {spec_of(engine).off}" if engine in SPECS else "serve without speculative decoding"
    return (f"leave MTP off on this server ({off}); measure which draft length pays off, if any: "
            "mtpinspect sweep --endpoint URL --baseline-endpoint URL")


def disagreeing_head_fix(log: LogEvidence | None, engine: Engine = Engine.llama_cpp) -> str:
    """What to change when a head that loads and drafts has about every draft rejected (on the log's engine,
    else on ``engine``: the one the probe measured)."""
    engine = log.runtime if log is not None else engine
    bugs = "; ".join(change for _, change in known_bugs(log))
    first = f"{bugs}; then " if bugs else ""
    if engine is Engine.vllm:
        version = f" (this log: {log.engine_version})" if log is not None and log.engine_version else ""
        method = f" (this log: method '{log.spec_method}')" if log is not None and log.spec_method else ""
        return (f"{first}try the latest vLLM release{version} (zero acceptance with a head that loads has been engine "
                f"bugs, fixed release by release); check --speculative-config{method}: 'mtp' for the model's own MTP "
                "layers, an EAGLE/DFlash drafter trained for this exact target; draft with the maker's checkpoint, not a "
                "third-party quantization of its MTP layers (`mtpinspect check REPO` shows one)")
    if engine is Engine.sglang:
        return (f"{first}try the latest SGLang release; check --speculative-algorithm (NEXTN/EAGLE for a model's MTP "
                "layers) and --speculative-draft-model-path: the maker's checkpoint (MTP layers unquantized), a drafter "
                "trained for this exact target (`mtpinspect check REPO` shows a quantized head)")
    return ("use the head released with this exact model and revision (re-export with convert_hf_to_gguf.py "
            "--mtp from the same snapshot, or the maker's GGUF); until then leave MTP off")


def failed_start_fix(engine: Engine) -> str:
    """What to do about an MTP start that failed for a reason no cause explains."""
    if engine is Engine.vllm:
        return ("an engine error while loading the drafter: try the latest vLLM release (or the one before a nightly "
                "regression) with the maker's checkpoint; `mtpinspect check REPO` for static causes")
    if engine is Engine.sglang:
        return "try the latest SGLang release with the maker's checkpoint; `mtpinspect check REPO` for static causes"
    return "read the server log around this line; run `mtpinspect check MODEL` for static causes"


def missing_weights_fix(engine: Engine) -> str:
    """What to change when the checkpoint or GGUF lacks the MTP layer's weights."""
    if engine is Engine.llama_cpp:
        return ("use a checkpoint or GGUF that ships the MTP weights (not converted with --no-mtp, not a quantization "
                "that dropped mtp.*)")
    return ("use a checkpoint that ships the MTP layer's weights (the maker's own, or a quantization that keeps mtp.*: "
            "`mtpinspect check REPO` says which), or leave speculative decoding off")


def engine_crash_fix(engine: Engine) -> str | None:
    """What to try about an MTP crash in a vLLM or SGLang run; None for llama.cpp, whose changes are
    tried by experiment or suggested from the crash (runtime/workarounds.py)."""
    if engine is Engine.vllm:
        return ("the crash is vLLM's: try the latest vLLM release (MTP crashes are fixed release by release) and "
                "report it with this log; meanwhile try, one at a time: --enforce-eager (no CUDA graphs), without "
                "--kv-cache-dtype fp8, num_speculative_tokens 1, or serve without --speculative-config")
    if engine is Engine.sglang:
        return ("the crash is SGLang's: try the latest SGLang release and report it with this log; meanwhile try, "
                "one at a time: --disable-cuda-graph, --speculative-num-steps 1, or serve without "
                "--speculative-algorithm")
    return None
