"""The MTP quantization audit: is each quantizable module of the MTP head kept in high precision?

The config's own rules (formats/quantization.py) say what its exclusion list covers; the safetensors
header says what precision each weight really has. This module judges the head from both: the header
wins where it is known, and disagreements, partly excluded fused modules and lists that miss their aim
(a regex anchored wrongly, a GPTQ key shadowed by an earlier one) are noted.

Routers (`mlp.gate`, `shared_expert_gate`, `router`), norms, embeddings and LM heads are not counted as
quantizable MTP modules: every format keeps them in high precision by design (vLLM builds MoE routers
without a quant config; the ModelOpt and llm-compressor recipes ignore them), so they say nothing about
whether the head was quantized.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mtpinspect.formats.quantization import (
    ENGINE_READINGS,
    FUSED_SHARDS,
    SHARD_TO_FUSED,
    QuantizationConfig,
    direct_match,
    engine_match,
    engine_reading,
    gptq_first_match,
    match_exclusion,
    skip_regexes,
)
from mtpinspect.vocabulary import PARTIAL, UNDECLARED, MtpExcluded

# Tensor suffixes that carry a Linear's weight in the formats we know: plain, compressed-tensors packed,
# GPTQ/AWQ packed.
_WEIGHT_SUFFIXES = (".weight", ".weight_packed", ".qweight")
_SCALE_SUFFIXES = (
    ".weight_scale_inv", ".weight_scale", ".weight_scale_2", ".weight_global_scale", ".scales", ".weight_zero_point",
)
HIGH_PRECISION = frozenset({"BF16", "F16", "F32", "F64"})
_FLOAT8 = frozenset({"F8_E4M3", "F8_E5M2", "F8_E4M3FN", "F8_E8M0"})
_PACKED_INT = frozenset({"U8", "I8", "I16", "U16", "I32", "U32"})

# Head projections the engines build as a plain Linear, without the checkpoint's quantization config
# (vLLM deepseek_mtp.py and SGLang deepseek_nextn.py: `self.eh_proj = nn.Linear(...)`): their precision is
# the checkpoint's, never an exclusion decision.
# ERNIE's mtp_linear_proj likewise (vLLM ernie_mtp.py: `self.mtp_linear_proj = nn.Linear(...)`).
_BUILT_UNQUANTIZED = frozenset({"eh_proj", "mtp_linear_proj"})

_NOT_QUANTIZABLE_LEAVES = frozenset({
    "gate", "router", "shared_expert_gate", "embed_tokens", "embed", "lm_head", "head", "conv1d",
})


@dataclass(frozen=True)
class ModuleVerdict:
    module: str
    excluded_by: str | None  # the entry (or allow-list marker) that keeps it unquantized; None if the config does not
    header_dtype: str | None
    header_quantized: bool | None  # True: FP8 or packed ints; False: BF16/F16/F32; None: unknown
    quantized: bool  # final judgement: the header wins over the list when it is known
    note: str | None

    @property
    def undeclared(self) -> bool:
        """High precision in the header while the config would quantize it: engines build it quantized."""
        return (self.header_quantized is False and self.excluded_by is None
                and not any(part in _BUILT_UNQUANTIZED for part in self.module.split(".")))


@dataclass(frozen=True)
class QuantAudit:
    config: QuantizationConfig | None
    excluded_count: int
    mtp_excluded: MtpExcluded
    modules: tuple[ModuleVerdict, ...]
    fused_warnings: tuple[str, ...]
    # Entries whose regex could not be evaluated in time, as written in the list, and the name it was tried on.
    unevaluated: tuple[tuple[str, str], ...] = ()
    # engine -> the fused modules of the head it builds quantized although the shard-aware reading keeps them
    engine_unexcluded: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def kept(self) -> list[str]:
        return [v.module for v in self.modules if not v.quantized]

    def quantized(self) -> list[str]:
        return [v.module for v in self.modules if v.quantized]

    def undeclared(self) -> list[str]:
        return [v.module for v in self.modules if v.undeclared]

    def untargeted(self) -> list[str]:
        """Kept in high precision without the config naming them: not an exclusion (see _overall)."""
        return [v.module for v in self.modules if not v.quantized and v.excluded_by is None]



def mtp_modules_from_tensors(tensor_names: Iterable[str]) -> list[str]:
    """Quantizable (Linear-like) modules among MTP tensor names, in natural order.

    Weights may be `.weight`, `.weight_packed` (compressed-tensors) or `.qweight` (GPTQ/AWQ). Norms,
    embeddings, LM heads and routers are left out (see the module docstring).
    """
    modules = {m for m in (_module_of(name) for name in tensor_names) if m and _quantizable(m)}
    return sorted(modules, key=_natural_key)


def _module_of(tensor: str) -> str | None:
    return next((tensor[: -len(s)] for s in _WEIGHT_SUFFIXES if tensor.endswith(s)), None)


def _quantizable(module: str) -> bool:
    parts = module.split(".")
    leaf = parts[-1]
    if leaf in _NOT_QUANTIZABLE_LEAVES or "norm" in leaf:
        return False
    # shared_head.head is the MTP block's own LM head.
    return not (len(parts) >= 2 and parts[-2] == "shared_head")


def _natural_key(name: str) -> list[Any]:
    return [(0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.split(r"(\d+)", name)]


def audit_mtp(
    q: QuantizationConfig | None, mtp_tensors: Mapping[str, str | None], all_tensor_names: Iterable[str] = ()
) -> QuantAudit:
    """Decide, for each quantizable MTP module, whether it is kept in high precision.

    `mtp_tensors` maps MTP tensor names to their safetensors header dtype (None when the header was not
    read); `all_tensor_names` adds the names of scale tensors and the like that sit next to the weights.
    """
    names = set(mtp_tensors) | set(all_tensor_names)
    modules = mtp_modules_from_tensors(mtp_tensors)
    list_excluded = {m: (match_exclusion(q, m) if q else None) for m in modules}
    raw_excluded = {m: (direct_match(q, m) if q else None) for m in modules}
    fused_warnings, fused_notes = _fused_partials(modules, raw_excluded, list_excluded)
    excluded_somewhere = sum(1 for m in modules if list_excluded[m] is not None)
    verdicts = []
    for module in modules:
        dtype, header_quantized, header_note = _header_state(module, mtp_tensors, names, bool(all_tensor_names))
        excluded_by = list_excluded[module]
        by_list = q is not None and excluded_by is None
        quantized = header_quantized if header_quantized is not None else by_list
        notes = [fused_notes.get(module), header_note, _disagreement(module, dtype, header_quantized, excluded_by, q)]
        if q is not None and excluded_by is None:
            notes.append(_trap_note(q, module, excluded_somewhere))
        verdicts.append(ModuleVerdict(module, excluded_by, dtype, header_quantized, quantized,
                                      "; ".join(n for n in notes if n) or None))
    return QuantAudit(
        config=q, excluded_count=len(q.exclusions) if q else 0, mtp_excluded=_overall(q, verdicts),
        modules=tuple(verdicts), fused_warnings=tuple(fused_warnings), unevaluated=_unevaluated(q),
        engine_unexcluded=_engine_unexcluded(q, verdicts),
    )


def _engine_unexcluded(q: QuantizationConfig | None, verdicts: list[ModuleVerdict]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Per engine, the fused modules (parent.qkv_proj) whose shards the list keeps (read shard-aware) and which
    the engine, matching the fused name itself, builds quantized: it then loads high-precision weights into a
    quantized module."""
    if q is None:
        return ()
    out = []
    for engine in ENGINE_READINGS:
        if engine_reading(engine, q.method).maps_fused:
            continue
        fused = sorted({f"{v.module.rpartition('.')[0]}.{SHARD_TO_FUSED[v.module.rpartition('.')[2]]}"
                        for v in verdicts
                        if v.module.rpartition(".")[2] in SHARD_TO_FUSED and not v.quantized and v.excluded_by is not None
                        and engine_match(q, v.module, engine) is None}, key=_natural_key)
        if fused:
            out.append((engine, tuple(fused)))
    return tuple(out)


def _unevaluated(q: QuantizationConfig | None) -> tuple[tuple[str, str], ...]:
    if q is None:
        return ()
    entries = [*q.exclusions, *sorted(q.targets or ())]
    return tuple(
        (next((e for e in entries if e in (pattern, f"re:{pattern}", f"-:{pattern}", f"+:{pattern}")), pattern), name)
        for pattern, name in q.regexes.unevaluated.items()
    )


def _fused_partials(
    modules: list[str], raw: Mapping[str, str | None], effective: Mapping[str, str | None]
) -> tuple[list[str], dict[str, str]]:
    """Fused groups whose shards the list names only in part: engines quantize the whole fused module."""
    groups: dict[str, list[str]] = {}
    for module in modules:
        parent, _, leaf = module.rpartition(".")
        if leaf in SHARD_TO_FUSED:
            groups.setdefault(f"{parent}.{SHARD_TO_FUSED[leaf]}", []).append(module)
    warnings, notes = [], {}
    for fused, shards in groups.items():
        named = [s for s in shards if raw[s] is not None]
        missing = [s.rpartition(".")[2] for s in shards if raw[s] is None]
        if not named or not missing or any(effective[s] is not None for s in shards):
            continue
        fused_leaf = fused.rpartition(".")[2]
        leaves = "/".join(FUSED_SHARDS[fused_leaf])
        warnings.append(f"{fused}: the list names {', '.join(s.rpartition('.')[2] for s in named)} but not "
                        f"{', '.join(missing)}; engines fuse {leaves} into {fused_leaf} and quantize all of it")
        for shard in named:
            notes[shard] = (f"list names {shard.rpartition('.')[2]} ({raw[shard]}) but engines fuse {leaves} into "
                            f"{fused_leaf}: {', '.join(missing)} not excluded, so {fused_leaf} is quantized")
    return warnings, notes


def _header_state(
    module: str, dtypes: Mapping[str, str | None], names: set[str], scales_known: bool
) -> tuple[str | None, bool | None, str | None]:
    """(dtype of the weight, whether the header shows it quantized, a note)."""
    if module + ".weight_packed" in names or module + ".qweight" in names:
        tensor = module + (".weight_packed" if module + ".weight_packed" in names else ".qweight")
        return dtypes.get(tensor), True, None
    dtype = dtypes.get(module + ".weight")
    has_scale = any(module + s in names for s in _SCALE_SUFFIXES)
    if dtype is None:
        return None, (True if has_scale else None), None
    dtype = dtype.upper()
    if dtype in HIGH_PRECISION:
        return dtype, False, None
    if dtype in _FLOAT8:
        note = None if has_scale or not scales_known else f"{dtype} weight without a weight_scale(_inv) beside it"
        return dtype, True, note
    if dtype in _PACKED_INT:
        if has_scale:
            return dtype, True, None
        return dtype, None, (f"{dtype} weight without scale tensors beside it" if scales_known else None)
    return dtype, None, None


def _disagreement(
    module: str, dtype: str | None, header_quantized: bool | None, excluded_by: str | None, q: QuantizationConfig | None
) -> str | None:
    if q is None or header_quantized is None:
        return None
    if header_quantized is False and excluded_by is None:
        if any(part in _BUILT_UNQUANTIZED for part in module.split(".")):
            return (f"header says {dtype} and the list does not name it: not targeted (engines build "
                    f"{module.rpartition('.')[2]} without a quantization config)")
        return (f"header says {dtype} although the list does not exclude it: "
                "engines expect quantized weights here (load failure or garbage head)")
    if header_quantized is True and excluded_by is not None:
        return f"header says {dtype or 'quantized'} although the list excludes it ({excluded_by})"
    return None


def _trap_note(q: QuantizationConfig, module: str, excluded_somewhere: int) -> str | None:
    """Why a module the list was probably meant to cover is not covered."""
    return (
        _anchoring_trap(q, module)
        or _gptq_order_trap(q, module)
        or (f"not excluded, while {excluded_somewhere} other MTP module(s) are" if excluded_somewhere else None)
    )




def _anchoring_trap(q: QuantizationConfig, module: str) -> str | None:
    match = q.regexes.match
    for text in skip_regexes(q):
        if not match(text, module) and (match(text, "." + module) or match(text, module, anywhere=True)):
            return (f"regex {text!r} does not match {module!r}: re.match anchors at the start of the name "
                    "and the pattern needs something before it (e.g. a leading dot)")
    return None


def _gptq_order_trap(q: QuantizationConfig, module: str) -> str | None:
    if q.method != "gptq":
        return None
    skip, first = gptq_first_match(q, module)
    if skip is not None or first is None:
        return None
    for key in q.exclusions:
        if key.startswith("-:") and q.regexes.match(key[2:], module):
            return f"GPTQ dynamic: {first!r} matches first, so the later {key!r} never applies (first match wins)"
    return None


def _overall(q: QuantizationConfig | None, verdicts: list[ModuleVerdict]) -> MtpExcluded:
    """Partial means the config keeps some MTP modules unquantized and quantizes others. A module that is
    high precision in the header while the config does not name it (DeepSeek's eh_proj in its own FP8
    release) was not targeted, not excluded: next to quantized modules the head counts as quantized."""
    if not verdicts:
        return None
    if q is None and not any(v.header_quantized for v in verdicts):
        return None
    quantized = [v.quantized for v in verdicts]
    if not any(quantized):
        return UNDECLARED if q is not None and any(v.undeclared for v in verdicts) else True
    if any(not v.quantized and v.excluded_by is not None for v in verdicts):
        return PARTIAL
    return False
