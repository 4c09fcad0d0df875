"""Quantization configs: which format a checkpoint uses, and which modules its exclusion list keeps unquantized.

Every format spells its exclusion list differently and matches it with its own rules (the judgement of
an MTP head against them is inspection/quant_audit.py). The rules below follow the loaders that read
these lists:

- fp8 (HF fine-grained) and mxfp4: `ignored_layers`, else `modules_to_not_convert`. An entry excludes a
  module when it equals the name (vLLM `is_layer_skipped`), is a dotted prefix or dotted suffix of it
  (transformers `should_convert_module`), or matches it as a `*` glob (gpt-oss `model.layers.*.self_attn`).
- compressed-tensors `ignore` and quark `exclude`: the entry equals the name, or is `re:<regex>` and
  `re.match`es it, anchored at the start (vLLM/SGLang `should_ignore_layer`).
- modelopt `exclude_modules` (hf_quant_config.json) / `ignore` (config.json): the entry equals the name or
  `fnmatch`es it (`mtp*`, `model.layers.78*`).
- awq `modules_to_not_convert`: the entry is a substring of the name.
- gptq `dynamic`: the FIRST key whose regex `re.match`es the name decides; `-:` skips quantization, while a
  `+:` or bare key matching first keeps the module quantized even if a later `-:` key would match.
- bitsandbytes `llm_int8_skip_modules`: the entry equals one dotted component of the name or a dotted prefix.

Engines fuse `q/k/v_proj` into `qkv_proj`, `gate/up_proj` into `gate_up_proj` and MLA's `q_a_proj` +
`kv_a_proj_with_mqa` into one projection; a fused module stays unquantized only if the list names it or ALL
of its shards, so a list that names only some shards leaves the whole fused module quantized.

Each engine reads the list after its own fusing of modules, and not every engine maps a fused name back to
its shards for every format: ENGINE_READINGS says, per engine and format, whether it does, citing the code.
`engine_match` is the list as one engine reads it; `match_exclusion` is the shard-aware reading.

Two formats also say what IS quantized: compressed-tensors `config_groups.*.targets` and ModelOpt
MIXED_PRECISION `quantized_layers`. A module that neither names stays in high precision; `match_exclusion`
reports that as `NOT_TARGETED` / `NOT_IN_QUANTIZED_LAYERS`.

When a repo has both `hf_quant_config.json` and `config.json:quantization_config` from ModelOpt, the former
is used (it is ModelOpt's own file and the one vLLM's ModelOpt loader prefers); a disagreement between the
two lists is recorded in `QuantizationConfig.notes`.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mtpinspect.errors import FormatError
from mtpinspect.sources.filenames import QUANT_SIDE_FILES

NOT_TARGETED = "(not targeted by config_groups)"
NOT_IN_QUANTIZED_LAYERS = "(not in quantized_layers)"

FUSED_SHARDS: Mapping[str, tuple[str, ...]] = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
    "fused_qkv_a_proj_with_mqa": ("q_a_proj", "kv_a_proj_with_mqa"),
}
SHARD_TO_FUSED = {shard: fused for fused, shards in FUSED_SHARDS.items() for shard in shards}



@dataclass(frozen=True)
class EngineReading:
    """How one engine matches one format's exclusion list against a fused module (qkv_proj, gate_up_proj)."""

    maps_fused: bool  # True: the fused module is excluded when the list names it or all of its shards
    source: str  # the engine code that decides it
    verified: bool = True  # False: no engine code read for this pair; taken to be the shard-aware reading
    fixed_by: str | None = None  # the engine change that maps fused names, where one is known


_VLLM_CT = ("vLLM compressed_tensors/utils.py @008014e should_ignore_layer: a fused name is checked as its shards "
            "through fused_mapping, the model class's packed_modules_mapping (qkv_proj <- q/k/v_proj, gate_up_proj <- "
            "gate/up_proj)")
_VLLM_SKIPPED = ("vLLM fp8.py get_quant_method -> is_layer_skipped(prefix, ignored_layers, fused_mapping="
                 "self.packed_modules_mapping): all shards of a fused module must be ignored")
_SGLANG_CT = ("SGLang compressed_tensors.py @000659a from_config takes packed_modules_mapping from the quantization "
              "config dict, which model_loader/weight_utils.py get_quant_config fills from the model class; the MTP "
              "draft classes (qwen3_5_mtp.py @008b79d Qwen3_5ForCausalLMMTP, ...) declare none, so "
              "compressed_tensors/utils.py should_ignore_layer matches the fused name itself against `ignore` (accept length "
              "1.000 on Qwen3.8-27B compressed-tensors releases: sgl-project/sglang#35797)")
_SGLANG_SKIPPED = ("SGLang layers/quantization/utils.py is_layer_skipped: without a mapping it still maps gate_up_proj, "
                   "qkv_proj and fused_qkv_a_proj_with_mqa to their shards by name")
_AWQ = ("{engine} awq.py is_layer_skipped_awq: `any(module_name in prefix ...)`, an entry must be a substring of the "
        "engine's own (fused) module name, so a q_proj or gate_proj entry is not one of qkv_proj or gate_up_proj")
_GPTQ = ("{engine} {where} get_dynamic_override(config, layer_name=prefix): a `-:` key's regex re.match'es the "
         "engine's own module name, the fused one (qkv_proj, gate_up_proj), so a key written for q_proj misses it")
_UNREAD = "not read in this engine's code: taken to match as vLLM does"
ENGINE_READINGS: Mapping[str, Mapping[str, EngineReading]] = {
    "vllm": {
        "compressed-tensors": EngineReading(True, _VLLM_CT),
        "fp8": EngineReading(True, _VLLM_SKIPPED),
        "mxfp4": EngineReading(True, "vLLM mxfp4.py get_quant_method -> is_layer_skipped(..., fused_mapping=...)"),
        "modelopt": EngineReading(True, "vLLM modelopt.py ModelOptQuantConfigBase.is_layer_excluded: is_layer_skipped("
                                        "prefix, exclude_modules, packed_modules_mapping), then the wildcards"),
        "quark": EngineReading(True, "vLLM quark/quark.py @006bce4 get_quant_method: should_ignore_layer(prefix, ignore="
                                     "exclude, fused_mapping=self.packed_modules_mapping), shards checked as one"),
        "awq": EngineReading(False, _AWQ.format(engine="vLLM")),
        "gptq": EngineReading(False, _GPTQ.format(engine="vLLM", where="layers/quantization/utils/gptq_utils.py")),
    },
    "sglang": {
        "compressed-tensors": EngineReading(
            False, _SGLANG_CT,
            fixed_by="sgl-project/sglang#35887 (the Qwen3.5 MTP class takes the target's packed_modules_mapping; open at "
                     "the index's snapshot)"),
        "fp8": EngineReading(True, _SGLANG_SKIPPED),
        "awq": EngineReading(False, _AWQ.format(engine="SGLang")),
        "gptq": EngineReading(False, _GPTQ.format(engine="SGLang", where="layers/quantization/utils.py")),
    },
}


def engine_reading(engine: str, method: str) -> EngineReading:
    readings = ENGINE_READINGS.get(engine, {})
    return readings.get(method) or EngineReading(True, _UNREAD, verified=False)


def engine_match(q: QuantizationConfig, module: str, engine: str) -> str | None:
    """The entry that keeps ``module`` unquantized as ``engine`` reads ``q``'s list: for an engine that does not
    map fused names back, a shard (q_proj) is kept only if the list names the fused module (qkv_proj) itself."""
    parent, _, leaf = module.rpartition(".")
    if leaf in SHARD_TO_FUSED and not engine_reading(engine, q.method).maps_fused:
        prefix = f"{parent}." if parent else ""
        fused = direct_match(q, prefix + SHARD_TO_FUSED[leaf])
        if fused is None and q.targets is not None and not _targeted(q, module):
            return NOT_TARGETED if q.targets_key == "config_groups.targets" else NOT_IN_QUANTIZED_LAYERS
        return fused
    return match_exclusion(q, module)


_LIST_KEYS = (
    "ignored_layers", "modules_to_not_convert", "ignore", "exclude_modules", "exclude", "llm_int8_skip_modules",
)


# Exclusion regexes come from downloaded files, and one like `mtp\.(a|aa)+\.x` backtracks for minutes on a
# 48-character name. Each match runs under a time bound (the regex module's timeout; it matches as Python's
# re, which the engines use); a pattern that runs out of it is set aside, treated as matching nothing, and
# reported. The set-aside patterns of one config share a budget, so a list of many costs no more than it.
MATCH_TIMEOUT_S = 0.1
TIMEOUT_BUDGET_S = 1.0


class BoundedRegexes:
    """The regexes of one quantization config, compiled once, each match bounded in time."""

    def __init__(self) -> None:
        self._compiled: dict[str, Any] = {}
        self._spent = 0.0
        # pattern -> the name it could not be matched against (the first one)
        self.unevaluated: dict[str, str] = {}

    def match(self, pattern: str, name: str, *, anywhere: bool = False) -> bool:
        """Does ``pattern`` re.match ``name`` (``anywhere``: re.search)? False for a pattern Python's re rejects
        (engines fail on it) and for one that could not be evaluated in time (see ``unevaluated``)."""
        if pattern in self.unevaluated:
            return False
        compiled = self._compile(pattern)
        if compiled is None:
            return False
        if self._spent >= TIMEOUT_BUDGET_S:
            self.unevaluated[pattern] = name
            return False
        started = time.monotonic()
        try:
            found = (compiled.search if anywhere else compiled.match)(name, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            self._spent += time.monotonic() - started
            self.unevaluated[pattern] = name
            return False
        return found is not None

    def _compile(self, pattern: str) -> Any:
        if pattern not in self._compiled:
            import regex  # see valid_regex

            self._compiled[pattern] = regex.compile(pattern) if valid_regex(pattern) else None
        return self._compiled[pattern]


def valid_regex(pattern: str) -> bool:
    """Does Python's re (the engines' regex engine) accept the pattern?"""
    # The regex module (about as long to import as click) only for configs that have patterns: a GGUF has none.
    import regex

    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    try:
        regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError):
        return False
    return True


@dataclass(frozen=True)
class _ListIndex:
    """An exclusion list split into literal names (looked up) and patterns (tried in list order)."""

    literals: Mapping[str, int]  # entry -> its position in the list
    patterns: tuple[tuple[int, str, Callable[[str], bool]], ...]


@dataclass(frozen=True)
class QuantizationConfig:
    # "fp8" | "compressed-tensors" | "modelopt" | "awq" | "gptq" | "quark" | "bitsandbytes" | "mxfp4" | as found
    method: str
    algo: str | None  # "NVFP4", "MIXED_PRECISION", "e4m3", "pack-quantized", bits "4", ...
    source: str  # "config.json:quantization_config", "hf_quant_config.json:quantization", ...
    exclusion_key: str | None
    exclusions: tuple[str, ...]
    producer: str | None  # "modelopt 0.37.0", "gptqmodel:2.2.0", ...
    # Allow-list: when not None, only modules it covers are quantized (see module docstring).
    targets_key: str | None = None
    targets: frozenset[str] | None = None
    notes: tuple[str, ...] = field(default=())
    block_size: tuple[int, ...] | None = None  # fp8 `weight_block_size`: (128, 128) for block-wise FP8
    regexes: BoundedRegexes = field(init=False, repr=False, compare=False)
    _index: _ListIndex = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regexes", BoundedRegexes())
        object.__setattr__(self, "_index", _build_index(self.method, self.exclusions, self.regexes))


# --------------------------------------------------------------------------------------------------
# Finding the config


def find_quantization(config: Mapping | None, extra_files: Mapping[str, Mapping]) -> QuantizationConfig | None:
    """The checkpoint's quantization config, or None for an unquantized checkpoint.

    `config` is the parsed config.json; `extra_files` maps other parsed JSON files by name
    ("hf_quant_config.json", "quantize_config.json", "quant_config.json", "quantization_config.json").
    """
    embedded = _embedded_config(config)
    hf_quant = extra_files.get("hf_quant_config.json")
    if hf_quant is not None:
        found = _from_hf_quant_config(_require_mapping(hf_quant, "hf_quant_config.json"))
        if embedded is not None:
            found = _with_disagreement(found, _from_embedded(*embedded))
        return found
    if embedded is not None:
        return _from_embedded(*embedded)
    for name in QUANT_SIDE_FILES:
        if name in extra_files:
            return _from_side_file(name, _require_mapping(extra_files[name], name))
    return None


def _require_mapping(value: Any, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise FormatError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _embedded_config(config: Mapping | None) -> tuple[Mapping, str] | None:
    if config is None:
        return None
    places = (("quantization_config", config), ("text_config.quantization_config", config.get("text_config")))
    for path, holder in places:
        if isinstance(holder, Mapping) and holder.get("quantization_config") is not None:
            return _require_mapping(holder["quantization_config"], f"config.json:{path}"), f"config.json:{path}"
    return None


def _from_hf_quant_config(data: Mapping) -> QuantizationConfig:
    body = data.get("quantization", data)
    body = _require_mapping(body, "hf_quant_config.json:quantization")
    source = "hf_quant_config.json:quantization" if "quantization" in data else "hf_quant_config.json"
    return _modelopt(body, source, _producer(data))


def _modelopt(body: Mapping, source: str, producer: str | None) -> QuantizationConfig:
    key = next((k for k in ("exclude_modules", "ignore") if k in body), None)
    algo = _str_or_none(body.get("quant_algo"))
    targets_key, targets = None, None
    layers = body.get("quantized_layers")
    if (algo or "").upper() == "MIXED_PRECISION" and isinstance(layers, Mapping):
        targets_key, targets = "quantized_layers", frozenset(str(k) for k in layers)
    return QuantizationConfig(
        method="modelopt", algo=algo, source=source, exclusion_key=key,
        exclusions=_entries(body.get(key), source, key) if key else (), producer=producer,
        targets_key=targets_key, targets=targets,
    )


def _from_embedded(qc: Mapping, source: str) -> QuantizationConfig:
    method = str(qc.get("quant_method") or "unknown").lower()
    producer = _producer(qc)
    if method == "modelopt" or (producer or "").startswith("modelopt"):
        found = _modelopt(qc, source, producer)
        if method != "modelopt":
            # nvidia's DeepSeek-V4 NVFP4 config.json says quant_method "fp8" while its list is ModelOpt globs.
            found = replace(found, notes=(f"{source} says quant_method {method!r} but was written by {producer}; "
                                           "its list is read as ModelOpt globs",))
        return found
    if method == "gptq":
        return _gptq(qc, source, producer)
    key = _exclusion_key(method, qc)
    targets = _ct_targets(qc) if method == "compressed-tensors" else None
    block = qc.get("weight_block_size")
    return QuantizationConfig(
        method=method, algo=_algo(method, qc), source=source, exclusion_key=key,
        exclusions=_entries(qc.get(key), source, key) if key else (), producer=producer,
        targets_key="config_groups.targets" if targets is not None else None, targets=targets,
        block_size=tuple(block) if isinstance(block, list) and all(isinstance(n, int) for n in block) else None,
    )


def _from_side_file(name: str, data: Mapping) -> QuantizationConfig:
    # Legacy side files may lack quant_method: quantize_config.json is AutoGPTQ's, quant_config.json AutoAWQ's.
    default = {"quantize_config.json": "gptq", "quant_config.json": "awq"}.get(name, "unknown")
    method = str(data.get("quant_method") or default).lower()
    if method == "gptq":
        return _gptq(data, name, _producer(data))
    return _from_embedded({**data, "quant_method": method}, name)


def _gptq(qc: Mapping, source: str, producer: str | None) -> QuantizationConfig:
    dynamic = qc.get("dynamic")
    if dynamic is not None and not isinstance(dynamic, Mapping):
        raise FormatError(f"{source}: 'dynamic' must be an object of regex keys, got {type(dynamic).__name__}")
    keys = tuple(str(k) for k in (dynamic or {}))
    bad = [k for k in keys if not valid_regex(gptq_pattern(k))]
    notes = tuple(f"dynamic key {k!r} is not a valid regex; engines fail on it" for k in bad)
    return QuantizationConfig(
        method="gptq", algo=_str_or_none(qc.get("bits")), source=source,
        exclusion_key="dynamic" if dynamic is not None else None, exclusions=keys, producer=producer, notes=notes,
    )


def _exclusion_key(method: str, qc: Mapping) -> str | None:
    preferred = {
        "compressed-tensors": ("ignore",),
        "quark": ("exclude",),
        "bitsandbytes": ("llm_int8_skip_modules",),
        "awq": ("modules_to_not_convert",),
        # vLLM's Fp8Config reads ignored_layers first and falls back to modules_to_not_convert.
        "fp8": ("ignored_layers", "modules_to_not_convert"),
    }.get(method, ())
    for key in preferred + _LIST_KEYS:
        if qc.get(key):
            return key
    return next((key for key in preferred + _LIST_KEYS if key in qc), None)


def _entries(value: Any, source: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise FormatError(f"{source}: {key!r} must be a list of module names, got {type(value).__name__}")
    return tuple(str(v) for v in value if isinstance(v, str))


def _ct_targets(qc: Mapping) -> frozenset[str] | None:
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return None
    targets: list[str] = []
    for group in groups.values():
        if isinstance(group, Mapping) and isinstance(group.get("targets"), list):
            targets.extend(str(t) for t in group["targets"])
    return frozenset(targets)


def _algo(method: str, qc: Mapping) -> str | None:
    if method == "compressed-tensors":
        return _str_or_none(qc.get("format"))
    if method in ("awq", "gptq"):
        return _str_or_none(qc.get("bits") or qc.get("w_bit"))
    if method == "bitsandbytes":
        return "4bit" if qc.get("load_in_4bit") else "8bit" if qc.get("load_in_8bit") else None
    if method == "quark":
        global_config = qc.get("global_quant_config")
        weight = global_config.get("weight") if isinstance(global_config, Mapping) else None
        return _str_or_none(weight.get("dtype")) if isinstance(weight, Mapping) else None
    return _str_or_none(qc.get("fmt") or qc.get("quant_algo"))


def _producer(data: Mapping) -> str | None:
    producer = data.get("producer")
    if isinstance(producer, Mapping) and producer.get("name"):
        return " ".join(str(p) for p in (producer.get("name"), producer.get("version")) if p)
    meta = data.get("meta")
    if isinstance(meta, Mapping) and meta.get("quantizer"):
        quantizer = meta["quantizer"]
        return ", ".join(map(str, quantizer)) if isinstance(quantizer, list) else str(quantizer)
    if data.get("quant_method") == "compressed-tensors" and data.get("version"):
        return f"compressed-tensors {data['version']}"
    return None


def _with_disagreement(chosen: QuantizationConfig, other: QuantizationConfig) -> QuantizationConfig:
    if other.exclusion_key is None or set(other.exclusions) == set(chosen.exclusions):
        return chosen
    note = (f"{other.source}.{other.exclusion_key} has {len(other.exclusions)} entries but "
            f"{chosen.source}.{chosen.exclusion_key} has {len(chosen.exclusions)}; using {chosen.source}")
    return replace(chosen, notes=chosen.notes + (note,))


def _str_or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


# --------------------------------------------------------------------------------------------------
# Matching one module name


def match_exclusion(q: QuantizationConfig, module: str) -> str | None:
    """The entry (or allow-list marker) that keeps `module` unquantized under `q`'s own rules, else None.

    `module` is a module name without ".weight". For a fused name (`...qkv_proj`) the list must name it or
    all of its shards; for a shard name (`...q_proj`) the list must name its fused module or all shards.
    """
    excluded = _excluded_fused_aware(q, module)
    if excluded is not None:
        return excluded
    if q.targets is not None and not _targeted(q, module):
        return NOT_TARGETED if q.targets_key == "config_groups.targets" else NOT_IN_QUANTIZED_LAYERS
    return None


def _excluded_fused_aware(q: QuantizationConfig, module: str) -> str | None:
    parent, _, leaf = module.rpartition(".")
    prefix = f"{parent}." if parent else ""
    if leaf in FUSED_SHARDS:
        return direct_match(q, module) or _all_shards(q, [prefix + s for s in FUSED_SHARDS[leaf]])
    if leaf in SHARD_TO_FUSED:
        fused = SHARD_TO_FUSED[leaf]
        return direct_match(q, prefix + fused) or _all_shards(q, [prefix + s for s in FUSED_SHARDS[fused]])
    return direct_match(q, module)


def _all_shards(q: QuantizationConfig, shards: list[str]) -> str | None:
    entries = [direct_match(q, shard) for shard in shards]
    return entries[0] if all(entries) else None


def direct_match(q: QuantizationConfig, name: str) -> str | None:
    """The format's own matching rule applied to one (unfused) name; the earliest matching entry wins."""
    if q.method == "gptq":
        return gptq_first_match(q, name)[0]
    index = q._index
    found = [index.literals[key] for key in _lookup_keys(q.method, name) if key in index.literals]
    best = min(found, default=len(q.exclusions))
    for position, _entry, test in index.patterns:
        if position >= best:
            break
        if test(name):
            best = position
            break
    return q.exclusions[best] if best < len(q.exclusions) else None


def _lookup_keys(method: str, name: str) -> list[str]:
    """The literal entries that would exclude `name`, so that lists of a thousand names cost a few lookups."""
    parts = name.split(".")
    prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    if method in ("compressed-tensors", "quark", "modelopt"):
        return [name]
    if method == "bitsandbytes":
        return parts + prefixes
    if method == "awq":
        return []
    return prefixes + [".".join(parts[i:]) for i in range(1, len(parts))]


def _pattern_test(method: str, entry: str, regexes: BoundedRegexes) -> Callable[[str], bool] | None:
    """How a non-literal entry is tried against a name, or None for an entry matched as a literal."""
    if method in ("compressed-tensors", "quark"):
        if not entry.startswith("re:"):
            return None
        return lambda name: regexes.match(entry[3:], name)
    if method == "modelopt":
        return (lambda name: fnmatch.fnmatchcase(name, entry)) if any(c in entry for c in "*?[") else None
    if method == "awq":
        return lambda name: bool(entry) and entry in name
    if method == "bitsandbytes" or "*" not in entry:
        return None
    return lambda name: fnmatch.fnmatchcase(name, entry) or fnmatch.fnmatchcase(name, entry + ".*")


def _build_index(method: str, exclusions: tuple[str, ...], regexes: BoundedRegexes) -> _ListIndex:
    literals: dict[str, int] = {}
    patterns = []
    for position, entry in enumerate(exclusions):
        test = _pattern_test(method, entry, regexes)
        if test is None:
            literals.setdefault(entry, position)
        else:
            patterns.append((position, entry, test))
    return _ListIndex(literals, tuple(patterns))


def gptq_pattern(key: str) -> str:
    return key[2:] if key.startswith(("-:", "+:")) else key


def gptq_first_match(q: QuantizationConfig, name: str) -> tuple[str | None, str | None]:
    """(the `-:` key of `q`'s `dynamic` that skips `name`, or None; the key that matched first)."""
    for key in q.exclusions:
        if q.regexes.match(gptq_pattern(key), name):
            return (key if key.startswith("-:") else None), key
    return None, None


def _targeted(q: QuantizationConfig, module: str) -> bool:
    parent, _, leaf = module.rpartition(".")
    prefix = f"{parent}." if parent else ""
    if leaf in SHARD_TO_FUSED:
        names = [prefix + s for s in FUSED_SHARDS[SHARD_TO_FUSED[leaf]]]
        return _covered(q, prefix + SHARD_TO_FUSED[leaf]) or all(_covered(q, n) for n in names)
    return _covered(q, module)


def _covered(q: QuantizationConfig, name: str) -> bool:
    targets = q.targets or frozenset()
    if q.targets_key == "quantized_layers":
        # ModelOpt lists either Linear names or whole subtrees ("layers.0.ffn.experts"); lists run to 20k+ names.
        parts = name.split(".")
        return any(".".join(parts[:i]) in targets for i in range(1, len(parts) + 1))
    return any(_ct_target_matches(q, t, name) for t in targets)


def _ct_target_matches(q: QuantizationConfig, target: str, name: str) -> bool:
    if target.startswith("re:"):
        return q.regexes.match(target[3:], name)
    if "." in target or not target[:1].isupper():
        return target == name
    # A class name: every module we audit is a Linear. An unknown class might cover it too, so assume so
    # rather than claim high precision without evidence.
    return True


def skip_regexes(q: QuantizationConfig) -> list[str]:
    """The regex texts of the entries that skip quantization (GPTQ `-:` keys, `re:` entries)."""
    if q.method == "gptq":
        return [k[2:] for k in q.exclusions if k.startswith("-:")]
    if q.method in ("compressed-tensors", "quark"):
        return [e[3:] for e in q.exclusions if e.startswith("re:")]
    return []
