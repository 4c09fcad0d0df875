"""The loader gap: llama.cpp's ``missing tensor 'blk.N.<trunk tensor>'`` from a GGUF that may carry an MTP block.

A GGUF with MTP appends its MTP blocks after the trunk (``block_count`` = trunk layers + ``nextn_predict_layers``;
reference llama-cpp-mtp.md §1.1). A build whose loader for the architecture has no MTP block reads the last block as
an ordinary layer and asks it for trunk tensors it does not hold (``ssm_conv1d``, ``attn_qkv``, ``ffn_*``): the same
``missing tensor`` line (src/llama-model-loader.cpp:1159) a GGUF truncated or converted wrongly gives. What the paste
must show to tell the two:

- NO_MTP_GRAPH, high: block N is the last one (``block_count`` = N+1, or print_info's ``n_layer_all`` = N+1) and the
  paste shows the GGUF carries MTP (``nextn_predict_layers`` >= 1, ``n_layer`` < ``n_layer_all``, or MTP in the
  model's or file's name);
- NO_MTP_GRAPH, medium: either half shown (N is the last block, or the GGUF is shown to carry MTP), not both;
- a broken GGUF, no MTP cause: the paste shows N is not the last block, or ``nextn_predict_layers = 0``;
- neither shown (the line alone): both readings, NO_MTP_GRAPH first at medium-low confidence (since MTP GGUFs
  shipped, most reports of this line are theirs: llama.cpp#23033, KoboldCpp#2211), with the check that decides:
  the GGUF's ``block_count`` and ``nextn_predict_layers``.

The loader creates each block's tensors in block order, so a trunk tensor missing first at block N > 0 means blocks
0 .. N-1 had it: block N differs from the trunk, as the MTP block does (or a file cut short, or a hybrid layout the build
reads otherwise, hence the low confidence of the line alone). Block 0 is never an MTP block (a trunk comes first), and a
draft model's load is the sidecar's failure (diagnosis/failures.py), so both are left to the other rules. Older builds
and forks word the same failure ``check_tensor_dims: tensor '%s' not found``; the corpus labels that wording's one paste
untied (cases/logs/README.md), so it is not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtpinspect.causes import Cause
from mtpinspect.logread.catalogue import Hit, Meaning
from mtpinspect.logread.runs import LogEvidence
from mtpinspect.vocabulary import EvidenceSource

_MTP_NAME = re.compile(r"(?<![A-Za-z])(?:MTP|mtp|Mtp|NextN|nextn)(?![a-z])")


@dataclass(frozen=True)
class MissingBlock:
    """The loader's missing trunk tensor of block ``block``, and what the paste shows of the GGUF's layout."""

    hit: Hit
    block: int
    tensor: str
    blocks: int | None  # block_count (or n_layer_all)
    nextn: int | None  # nextn_predict_layers (or n_layer_all - n_layer)
    named: str | None  # a model or file name that says MTP

    @property
    def last(self) -> bool | None:
        """Whether block N is the GGUF's last block (None: the paste does not say)."""
        return None if self.blocks is None else self.block == self.blocks - 1

    @property
    def carries_mtp(self) -> bool | None:
        """Whether the paste shows the GGUF carries MTP blocks (None: it does not say)."""
        if self.nextn is not None:
            return self.nextn > 0
        return True if self.named else None


def missing_block(log: LogEvidence) -> MissingBlock | None:
    """The loader's missing trunk tensor of a block past the first, in a load that is not a draft model's; None
    otherwise."""
    if log.scan is None or (log.run is not None and log.run.draft_file):
        return None
    layout = log.scan.of(Meaning.layout)
    miss = next((h for h in layout if h.message.name == "missing block tensor"), None)
    if miss is None or int(miss.match["block"]) == 0:
        return None
    found: dict[str, str] = {}
    for hit in layout:
        for key, value in hit.match.groupdict().items():
            if value is not None:
                found.setdefault(key, value.strip())
    blocks = int(found.get("blocks") or found.get("all") or 0) or None
    nextn = int(found["nextn"]) if "nextn" in found else (
        int(found["all"]) - int(found["trunk"]) if "all" in found and "trunk" in found else None)
    named = next((found[k] for k in ("name", "file") if k in found and _MTP_NAME.search(found[k])), None)
    return MissingBlock(miss, int(miss.match["block"]), miss.match["tensor"], blocks, nextn, named)


def loader_cause(log: LogEvidence) -> Cause | None:
    """NO_MTP_GRAPH when the missing block may be the GGUF's MTP block (see the module docstring); None when the paste
    shows it is not (a broken GGUF) or holds no such line."""
    miss = missing_block(log)
    if miss is None or miss.last is False or miss.carries_mtp is False:
        return None
    shown = [f"block {miss.block} is the last of {miss.blocks}" if miss.last else "",
             f"nextn_predict_layers = {miss.nextn}" if miss.nextn else "",
             f"the name says MTP: {miss.named}" if miss.named else ""]
    shown = [s for s in shown if s]
    both = miss.last is True and miss.carries_mtp is True
    confidence = 0.85 if both else 0.6 if shown else 0.45
    line = f"{log.path}: line {miss.hit.number}: {miss.hit.line[:300]}"
    check = (f"the GGUF's block_count and nextn_predict_layers decide (`mtpinspect check FILE.gguf` reads them, or the "
             f"loader's metadata dump): block_count = {miss.block + 1} with nextn_predict_layers >= 1 means blk.{miss.block} "
             "is the MTP block (this build's loader has no MTP block for the architecture); otherwise the GGUF lacks a "
             "trunk tensor: re-download or re-convert it")
    if both:
        why = f"{'; '.join(shown)}: blk.{miss.block} is the GGUF's MTP block, which this build reads as an ordinary layer"
        evidence: tuple[str, ...] = (line, f"{log.path}: {why}")
    else:
        why = (f"blk.{miss.block}.{miss.tensor} is missing: the GGUF's MTP block read as an ordinary layer by a build without "
               "MTP loading for the architecture, or a GGUF that lacks a trunk tensor")
        said = f"the paste shows {', '.join(shown)}, not both halves" if shown else \
            "the paste shows neither the GGUF's block count nor its nextn layers"
        evidence = (line, f"{log.path}: two readings remain ({said}): a build without the MTP block's loader, or a broken "
                          f"GGUF; {check}")
    return Cause("NO_MTP_GRAPH", confidence, f"llama.cpp's loader: {why}", evidence,
                 "use a build whose loader knows this architecture's MTP block (llama.cpp with MTP support for it, e.g. the "
                 "pinned build: mtpinspect runtime build; an app release that bundles it), or a GGUF without the MTP block "
                 f"(the publisher's non-MTP file, or convert with --no-mtp); {check}", (EvidenceSource.log,))
