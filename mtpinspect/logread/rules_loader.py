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

The same line for a tensor of the MTP block itself (``missing tensor 'blk.N.nextn.X'``) is read here too
(:func:`missing_nextn`): the GGUF lacks its MTP block, or the loader requires a tensor the checkpoint shares with the
trunk (``embed_tokens``, ``shared_head_head``: GLM 4.6, llama.cpp#16359). The line alone gives both readings at medium,
the tensor's kind ordering them, with the check that decides (the GGUF's tensor list); a tensor list in the paste that
holds block N's MTP block decides. A model's own assert that such a tensor is there (a fork's graph builder:
``GGML_ASSERT(layer.nextn.embed_tokens || model.tok_embd)``) is the same requirement, read the same way.

Builds older still count instead: ``done_getting_tensors: wrong number of tensors; expected N, got M`` with N > M (the
GGUF holds tensors the build never made). Where the paste shows the file carries MTP or MTP was asked for, that is the
MTP block the build does not load (NO_MTP_GRAPH, medium: :func:`extra_tensors`); alone, the file's other tensors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtpinspect.causes import Cause
from mtpinspect.logread.catalogue import Hit, Meaning
from mtpinspect.logread.run_facts import MtpUse
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
    """NO_MTP_GRAPH when the missing block may be the GGUF's MTP block; for a missing nextn tensor, the GGUF's gap or the
    loader's (see the module docstring); None when the paste shows it is not (a broken GGUF) or holds no such line."""
    nextn = missing_nextn(log)
    if nextn is not None:
        return nextn
    miss = missing_block(log)
    if miss is None:
        return extra_tensors(log)
    if miss.last is False or miss.carries_mtp is False:
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


def extra_tensors(log: LogEvidence) -> Cause | None:
    """The loader's ``wrong number of tensors; expected N, got M`` with N > M (the GGUF holds tensors the build's loader
    never made), where the paste shows the file carries MTP or MTP was asked for: the build does not load the
    architecture's MTP block (NO_MTP_GRAPH, medium; the same line in a paste with nothing of MTP's is no MTP cause)."""
    if log.scan is None or (log.run is not None and log.run.draft_file):
        return None
    layout = log.scan.of(Meaning.layout)
    count = next((h for h in layout if h.message.name == "tensor count mismatch"), None)
    if count is None or int(count.match["expected"]) <= int(count.match["created"]):
        return None
    found = {k: v.strip() for h in layout for k, v in h.match.groupdict().items() if v is not None}
    nextn = int(found.get("nextn", "0"))
    named = next((found[k] for k in ("name", "file") if k in found and _MTP_NAME.search(found[k])), None)
    shown = f"nextn_predict_layers = {nextn}" if nextn else f"the name says MTP: {named}" if named else \
        f"MTP asked for: {log.run.evidence}" if log.mtp_use is MtpUse.on and log.run is not None else None
    if shown is None:
        return None
    extra = int(count.match["expected"]) - int(count.match["created"])
    line = f"{log.path}: line {count.number}: {count.line[:300]}"
    check = ("the GGUF's nextn_predict_layers and tensor list decide (`mtpinspect check FILE.gguf`, or gguf-dump): blk.N.nextn.* "
             "tensors there are the MTP block this build does not load")
    return Cause("NO_MTP_GRAPH", 0.6,
                 f"llama.cpp's loader made {extra} tensor(s) fewer than the GGUF holds, in a file with MTP ({shown}): this "
                 "build does not load the architecture's MTP block, or the file carries other tensors it does not know",
                 (line, f"{log.path}: {shown}"),
                 "use a build whose loader knows this architecture's MTP block (the pinned build: mtpinspect runtime build; an "
                 "app runtime that bundles a newer llama.cpp), or a GGUF without the MTP block (the publisher's non-MTP file, "
                 f"or convert with --no-mtp); {check}", (EvidenceSource.log,))


# The nextn tensors an MTP block shares with the trunk: a checkpoint may tie them to the trunk's embedding and output
# (GLM 4.6 ships neither: llama.cpp#16359); the pinned loaders create them TENSOR_NOT_REQUIRED and fall back to
# tok_embd / output (src/models/deepseek32.cpp:148-149, 539). The block's own tensors (eh_proj, enorm, hnorm,
# shared_head_norm) no checkpoint with the head lacks.
_SHARED_NEXTN = re.compile(r"^(?:embed_tokens|shared_head_head)(?:\.|$)")
# The loader's missing nextn tensor, and a model's assert that one is there (catalogue.py): the same requirement.
_NEXTN_REQUIRED = frozenset({"missing nextn tensor", "nextn tensor assert"})
_LIST_CHECK = ("the GGUF's tensor list decides (`mtpinspect check FILE.gguf`, or gguf-dump FILE.gguf): blk.{b}.nextn.* "
               "tensors there (eh_proj, enorm, hnorm) mean the file has the MTP block and this build's loader requires "
               "one the checkpoint shares with the trunk: use a build that makes it optional (llama.cpp PR #16359 or "
               "later; the pinned build: mtpinspect runtime build); none there means the GGUF has no MTP block: use one "
               "converted with it (convert_hf_to_gguf.py reads model*.safetensors: an mtp.safetensors beside them is "
               "skipped) or serve without MTP")


def missing_nextn(log: LogEvidence) -> Cause | None:
    """The loader's ``missing tensor 'blk.N.nextn.X'``: a GGUF without (all of) its MTP block, or a loader that requires
    a tensor the checkpoint shares with the trunk. The line alone cannot tell them: both readings at medium confidence,
    the likelier first (a shared tensor: the loader's; one of the block's own: the file's), with the check that decides.
    The paste decides where it lists the file's tensors: other tensors of block N's MTP block there mean the file has
    the block, so a missing shared tensor is the loader's requirement (MTP_LOADER_BUG, high); a missing own tensor of a
    listed block is a file converted without it (MTP_WEIGHTS_MISSING, medium: a partial block)."""
    if log.scan is None:
        return None
    hit = next((h for h in log.scan.of(Meaning.mtp_failure) if h.message.name in _NEXTN_REQUIRED), None)
    if hit is None:
        return None
    found = hit.match.groupdict()
    tensor, block = found.get("tensor") or found["asserted"], found.get("block")
    shared = _SHARED_NEXTN.match(tensor) is not None
    listed = [h for h in log.scan.of(Meaning.layout) if h.message.name == "nextn tensor listed"
              and (block is None or h.match["listed_block"] == block)]
    line = f"{log.path}: line {hit.number}: {hit.line[:300]}"
    check = _LIST_CHECK.format(b=block if block is not None else "N")
    if listed:
        shown = f"{log.path}: line {listed[0].number}: the GGUF's tensor list holds its MTP block ({listed[0].line[:200]})"
        if shared:
            return Cause("MTP_LOADER_BUG", 0.85,
                         f"llama.cpp's loader requires nextn.{tensor}, which the checkpoint shares with the trunk: the "
                         "GGUF has its MTP block, the loader asks for a tensor it need not have", (line, shown),
                         "use a llama.cpp build whose loader makes the shared nextn tensors optional (PR #16359 or later; "
                         "the pinned build: mtpinspect runtime build); the GGUF is fine", (EvidenceSource.log,))
        return Cause("MTP_WEIGHTS_MISSING", 0.7,
                     f"the GGUF's MTP block lacks its own nextn.{tensor}: a conversion or quantization that dropped part "
                     "of the head", (line, shown),
                     f"re-convert or re-download the GGUF with its whole MTP block, or serve without MTP; {check}",
                     (EvidenceSource.log,))
    reading = ("the loader requires a tensor the checkpoint shares with the trunk (llama.cpp#16359), or the GGUF lacks "
               "its MTP block" if shared else
               "the GGUF lacks (part of) its MTP block, or the loader names a tensor the checkpoint holds otherwise")
    evidence = (line, f"{log.path}: two readings remain (the paste does not list the GGUF's tensors): {reading}; {check}")
    if shared:
        return Cause("MTP_LOADER_BUG", 0.6, f"llama.cpp's loader stops at nextn.{tensor}, a tensor MTP blocks share with "
                     "the trunk: " + reading, evidence, check, (EvidenceSource.log,))
    return Cause("MTP_WEIGHTS_MISSING", 0.6, f"llama.cpp's loader finds no nextn.{tensor} in the GGUF: " + reading,
                 evidence, check, (EvidenceSource.log,))
