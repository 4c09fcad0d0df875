"""Which tensor names are MTP weights, in HF checkpoints and in GGUF files.

HF checkpoints store the head in one of a few ways: as extra decoder layers after the trunk
(`model.layers.{L}.*` with `eh_proj`, `enorm`, `hnorm`, `shared_head.*`: DeepSeek, GLM, Step), under an
`mtp.` prefix (Qwen3-Next/3.5/3.6: `mtp.fc`, `mtp.layers.0.*`; DeepSeek-V4: `mtp.0.*`), or as
`model.mtp_layers.{i}.*` (MiMo). GGUF files append the head as the last blocks: `blk.{L}.nextn.*` plus
the block's ordinary attention/FFN tensors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Modules that only an MTP head has (whole dotted components: "gate_proj" must not match "e_proj").
HEAD_MARKERS = frozenset({
    "eh_proj", "enorm", "hnorm", "shared_head", "e_proj", "h_proj", "fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden",
})


def is_head_tensor(name: str) -> bool:
    """True for the head's own tensors (projection, norms, shared head), not its attention or experts."""
    return not HEAD_MARKERS.isdisjoint(name.split("."))

# Layer numbers of at most 9 digits: a longer run of digits in a name from a file is no layer (and int() of
# thousands of digits is refused by Python).
_LAYERED = re.compile(r"^(?P<prefix>(?:model\.)?(?:language_model\.)?(?:model\.)?)layers\.(?P<idx>\d{1,9})\.")
_MTP_PREFIX = re.compile(r"^(?:model\.)?(?:language_model\.)?mtp(?:\.layers)?\.(?P<idx>\d{1,9})\.")
_MTP_ANY = re.compile(r"^(?:model\.)?(?:language_model\.)?mtp\.")
_MTP_LAYERS = re.compile(r"^(?:model\.)?mtp_layers\.(?P<idx>\d{1,9})\.")
_GGUF_BLOCK = re.compile(r"^blk\.(?P<idx>\d{1,9})\.")


@dataclass(frozen=True)
class MtpTensors:
    """The MTP tensors found among a checkpoint's tensor names."""

    names: tuple[str, ...]
    layers: tuple[str, ...]  # distinct layer ids, e.g. ("61",) or ("mtp.0",)
    scheme: str | None  # "model.layers.{L}", "mtp.*", "model.mtp_layers.*", or None when none found

    @property
    def count(self) -> int:
        return len(self.layers)


def find_mtp_tensors(names: Iterable[str], num_hidden_layers: int | None) -> MtpTensors:
    found: list[str] = []
    layers: set[str] = set()
    schemes: set[str] = set()
    for name in names:
        if m := _MTP_LAYERS.match(name):
            found.append(name)
            layers.add(f"mtp_layers.{m.group('idx')}")
            schemes.add("model.mtp_layers.*")
        elif _MTP_ANY.match(name):
            found.append(name)
            m = _MTP_PREFIX.match(name)
            layers.add(f"mtp.{m.group('idx')}" if m else "mtp.0")
            schemes.add("mtp.*")
        elif (m := _LAYERED.match(name)) and num_hidden_layers is not None and int(m.group("idx")) >= num_hidden_layers:
            found.append(name)
            layers.add(m.group("idx"))
            schemes.add("model.layers.{L}")
    scheme = " + ".join(sorted(schemes)) if schemes else None
    return MtpTensors(tuple(found), tuple(sorted(layers, key=_layer_key)), scheme)


def _layer_key(layer: str) -> tuple[str, int]:
    head, _, idx = layer.rpartition(".")
    return (head, int(idx)) if idx.isdigit() and len(idx) <= 9 else (layer, 0)


@dataclass(frozen=True)
class GgufMtpTensors:
    nextn: tuple[str, ...]  # blk.N.nextn.* and the gemma4-assistant nextn.* projections
    block: tuple[str, ...]  # every tensor of the MTP blocks (nextn included)
    blocks: tuple[int, ...]


def find_gguf_mtp_tensors(names: Iterable[str], block_count: int | None, nextn_layers: int | None) -> GgufMtpTensors:
    """The MTP blocks are the ones with nextn tensors and, of the last ``nextn_layers`` blocks the header
    declares, those the tensor list has: what the file holds, however many layers its keys claim."""
    names = list(names)
    nextn = tuple(n for n in names if ".nextn." in n or n.startswith("nextn."))
    block_of = {n: int(m.group("idx")) for n in names if (m := _GGUF_BLOCK.match(n))}
    nextn_blocks = {block_of[n] for n in nextn if n in block_of}
    if block_count and nextn_layers:
        first = block_count - nextn_layers
        nextn_blocks |= {i for i in block_of.values() if first <= i < block_count}
    block = tuple(n for n, i in block_of.items() if i in nextn_blocks)
    return GgufMtpTensors(nextn, tuple(sorted(set(block) | set(nextn))), tuple(sorted(nextn_blocks)))
