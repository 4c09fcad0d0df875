"""Gather the facts a verdict rests on, reading only headers: config, quantization, tensor names, dtypes.

Evidence is what the files say, with no judgement: the diagnosis turns it into findings. Everything
here reads through the target's tree (a Hub repo or a local folder), so the cost is metered the same
way for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from mtpinspect.errors import FormatError, SourceError, shown
from mtpinspect.formats.card import CARD_FILE, CARD_LIMIT, ModelCard, card_from_metadata, parse_card
from mtpinspect.formats.config import ModelConfig, parse_config
from mtpinspect.formats.gguf import LLAMA_MAX_LAYERS, GGUFHeader, GGUFTensor, read_gguf_header
from mtpinspect.formats.quantization import QUANT_FILES, QuantizationConfig, find_quantization
from mtpinspect.formats.safetensors import check_tensor_name, read_safetensors_header, tensor_extent
from mtpinspect.inspection.naming import GgufMtpTensors, MtpTensors, find_gguf_mtp_tensors, find_mtp_tensors
from mtpinspect.inspection.pairing import SidecarChoice, choose_sidecar, named_sidecar
from mtpinspect.sources.filenames import is_mtp_safetensors, sidecar_ggufs
from mtpinspect.sources.local import LocalTree
from mtpinspect.sources.provenance import LocalDownload, local_download
from mtpinspect.sources.reader import RecordingReader, read_json
from mtpinspect.sources.resolve import Target
from mtpinspect.vocabulary import Pairing, SourceKind

if TYPE_CHECKING:
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata

    from mtpinspect.sweep.report import SavedRecommendation

# Reading a few shard headers is cheap; reading all 160 of a DeepSeek repo is not needed for the verdict.
MAX_MTP_SHARDS = 16


@dataclass
class CheckpointEvidence:
    """HF safetensors checkpoint: where the MTP tensors are and what their headers say."""

    index_file: str | None
    weight_map: dict[str, str]  # tensor name -> shard file
    mtp: MtpTensors
    mtp_files: list[str]  # shards (or mtp.safetensors) holding MTP tensors
    headers_read: list[str]
    mtp_dtypes: dict[str, str | None]  # MTP tensor -> dtype from its shard header (None: header not read)
    mtp_bytes: int
    mtp_params: int
    standalone_mtp_file: str | None  # e.g. GLM-4.7's mtp.safetensors


@dataclass
class GgufEvidence:
    files: list[str]
    headers: list[GGUFHeader]
    size: int
    # Remote files: the bytes fetched to parse each header, by offset (for a header-only copy).
    fetched: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)

    @property
    def first(self) -> GGUFHeader:
        return self.headers[0]

    @property
    def arch(self) -> str | None:
        return self.first.architecture

    def _count(self, suffix: str, **limits: Any) -> int | None:
        """``<arch>.<suffix>``, read as llama.cpp reads it: a UINT32, within ``limits``."""
        return self.first.uint32(f"{self.arch}.{suffix}", **limits) if self.arch else None

    @property
    def block_count(self) -> int | None:
        return self._count("block_count", lowest=1, highest=LLAMA_MAX_LAYERS,
                           limit=f"llama.cpp loads 1 to {LLAMA_MAX_LAYERS} blocks (LLAMA_MAX_LAYERS)")

    @property
    def nextn_layers(self) -> int | None:
        blocks = self.block_count
        if blocks is None:
            return self._count("nextn_predict_layers")
        return self._count("nextn_predict_layers", highest=blocks,
                           limit=f"more than the {blocks} blocks of {self.arch}.block_count (llama.cpp asserts it is at most that)")

    @property
    def embedding_length(self) -> int | None:
        return self._count("embedding_length")

    @property
    def vocab_size(self) -> int | None:
        n = self.first.array_length("tokenizer.ggml.tokens")
        return n if n is not None else self._count("vocab_size")

    @property
    def tokenizer_digest(self) -> str | None:
        tokens = self.first.get("tokenizer.ggml.tokens")
        return getattr(tokens, "sha256", None)

    @cached_property
    def tensors(self) -> dict[str, GGUFTensor]:
        return {t.name: t for h in self.headers for t in h.tensors}

    @property
    def has_trunk(self) -> bool:
        """llama.cpp's mtp_only test: a file without blk.0.attn_norm is a sidecar."""
        return "blk.0.attn_norm.weight" in self.tensors

    @cached_property
    def mtp(self) -> GgufMtpTensors:
        return find_gguf_mtp_tensors(self.tensors, self.block_count, self.nextn_layers)


@dataclass
class Evidence:
    target: Target
    config: ModelConfig | None = None
    config_file: str | None = None
    quant: QuantizationConfig | None = None
    checkpoint: CheckpointEvidence | None = None
    gguf: GgufEvidence | None = None
    sidecar: GgufEvidence | None = None
    sidecar_choice: SidecarChoice = field(default_factory=lambda: SidecarChoice([]))  # which sidecar, and why
    other_sidecars: list[str] = field(default_factory=list)  # mtp- files in the repo that were not paired
    unreadable_weights: list[str] = field(default_factory=list)  # pickled weights without an index
    card: ModelCard | None = None  # the model card's lineage keys (README.md front matter)
    card_problem: str | None = None  # why a README.md that is there gave no card
    download: LocalDownload | None = None  # `hf download --local-dir` records of a local folder
    notes: list[str] = field(default_factory=list)
    sweep: SavedRecommendation | None = None  # a sweep of this GGUF on this machine (check --sweep-report)


def _json_file(target: Target, path: str) -> Mapping[str, Any]:
    value = read_json(target.tree, path)
    if not isinstance(value, dict):
        raise FormatError(f"{target.display}/{path}: expected a JSON object, found {type(value).__name__}")
    return value


def _find_config(target: Target) -> str | None:
    files = target.tree.files
    if "config.json" in files:
        return "config.json"
    if target.gguf_files:
        # GGUF repos sometimes keep the original config beside the quantized files.
        parent = str(PurePosixPath(target.gguf_files[0]).parent)
        candidate = "config.json" if parent == "." else f"{parent}/config.json"
        return candidate if candidate in files else None
    return None


def _read_gguf(target: Target, paths: list[str]) -> GgufEvidence:
    """The headers of one GGUF (all shards of a split set), each checked for the data it declares and for
    the type and range of the keys the rules read, so a bad file is refused here with one line."""
    readers = {p: RecordingReader(target.tree.open(p)) if target.kind is SourceKind.hub else target.tree.open(p) for p in paths}
    headers = [read_gguf_header(r).require_data() for r in readers.values()]
    fetched = {p: r.pieces for p, r in readers.items() if isinstance(r, RecordingReader)}
    g = GgufEvidence(paths, headers, sum(target.tree.files[p].size for p in paths), fetched)
    _ = g.arch, g.nextn_layers, g.embedding_length, g.vocab_size  # block_count is read by nextn_layers
    return g


def _index_file(files: Mapping[str, Any]) -> str | None:
    """The safetensors index, else a PyTorch one (its weight_map gives names, not dtypes)."""
    for suffix in (".safetensors.index.json", ".bin.index.json"):
        candidates = sorted(p for p in files if p.endswith(suffix) and "/" not in p)
        if candidates:
            return "model.safetensors.index.json" if "model.safetensors.index.json" in candidates else candidates[0]
    return None


def _pickled(files: Mapping[str, Any]) -> list[str]:
    return sorted(p for p in files if p.endswith((".bin", ".pt", ".pth")) and "/" not in p)


def _weight_map(target: Target, index_file: str | None) -> tuple[dict[str, str], dict[str, SafetensorsFileMetadata]]:
    """Tensor name -> shard, and the shard headers read to learn it (none when an index says it)."""
    files = target.tree.files
    if index_file:
        index = _json_file(target, index_file)
        wm = index.get("weight_map")
        where = f"{target.display}/{index_file}"
        if not isinstance(wm, dict):
            raise FormatError(f"{where}: weight_map is {shown(wm)}, not an object")
        for tensor, shard in wm.items():
            check_tensor_name(tensor, where)
            if not isinstance(shard, str) or not shard:
                raise FormatError(f"{where}: weight_map[{tensor!r}] is {shown(shard)}, not a shard file name")
        return dict(wm), {}
    shards = [p for p in files if p.endswith(".safetensors") and "/" not in p and not is_mtp_safetensors(p)]
    headers = {shard: read_safetensors_header(target.tree.open(shard)) for shard in shards[:MAX_MTP_SHARDS]}
    return {name: shard for shard, header in headers.items() for name in header.tensors}, headers


def _checkpoint(target: Target, config: ModelConfig | None) -> CheckpointEvidence | None:
    files = target.tree.files
    index_file = _index_file(files)
    has_weights = index_file or any(p.endswith(".safetensors") for p in files)
    if not has_weights:
        return None
    weight_map, headers = _weight_map(target, index_file)
    for shard in set(weight_map.values()):
        if shard not in files:
            raise SourceError(f"{target.display}: {index_file} names shard '{shard}', which is not in the repo")
    standalone = next((p for p in sorted(files) if is_mtp_safetensors(p) and p not in weight_map.values()), None)
    if standalone:
        headers[standalone] = read_safetensors_header(target.tree.open(standalone))
        for name in headers[standalone].tensors:
            weight_map.setdefault(name, standalone)
    layers = config.num_hidden_layers if config else None
    mtp = find_mtp_tensors(weight_map, layers)
    mtp_files = sorted({weight_map[n] for n in mtp.names})
    # Read the shards that hold the head's own projections first: they decide the verdict.
    ordered = sorted(mtp_files, key=lambda f: (0 if any(weight_map[n] == f and "proj" in n for n in mtp.names) else 1, f))
    # PyTorch pickles have no header to range-read: their dtypes stay unknown.
    for shard in [f for f in ordered if f.endswith(".safetensors")][:MAX_MTP_SHARDS]:
        if shard not in headers:
            headers[shard] = read_safetensors_header(target.tree.open(shard))
    dtypes: dict[str, str | None] = {}
    nbytes = params = 0
    for name in mtp.names:
        info = headers.get(weight_map[name])
        tensor = info.tensors.get(name) if info else None
        if info is not None and tensor is None:
            raise FormatError(f"{target.display}/{weight_map[name]}: index lists '{name}' but the shard header does not have it")
        dtypes[name] = tensor.dtype if tensor else None
        if tensor:
            extent = tensor_extent(f"{target.display}/{weight_map[name]}", name, tensor.dtype, tensor.shape, tensor.data_offsets)
            nbytes += extent.nbytes
            params += extent.parameters
    return CheckpointEvidence(
        index_file=index_file,
        weight_map=weight_map,
        mtp=mtp,
        mtp_files=mtp_files,
        headers_read=sorted(headers),
        mtp_dtypes=dtypes,
        mtp_bytes=nbytes,
        mtp_params=params,
        standalone_mtp_file=standalone,
    )


def _card(target: Target) -> tuple[ModelCard | None, str | None]:
    """The model card: the Hub's parsed cardData where it came with the listing, else README.md's front matter."""
    if target.tree.card_data is not None:
        return card_from_metadata(target.tree.card_data, "model info cardData"), None
    if CARD_FILE not in target.tree.files:
        return None, None
    reader = target.tree.open(CARD_FILE)
    try:
        card = parse_card(reader.read_at(0, min(reader.size, CARD_LIMIT)))
    except FormatError as exc:
        return None, str(exc)
    return card, None if card else f"{CARD_FILE} has no front matter (or none that ends in its first {CARD_LIMIT // 1024} KiB)"


def gather(target: Target) -> Evidence:
    ev = Evidence(target)
    files = target.tree.files
    ev.card, ev.card_problem = _card(target)
    if isinstance(target.tree, LocalTree):
        ev.download = local_download(target.tree.root, files)
    ev.config_file = _find_config(target)
    raw_config = _json_file(target, ev.config_file) if ev.config_file else None
    if raw_config is not None:
        ev.config = parse_config(raw_config, f"{target.display}/{ev.config_file}")
    extra = {name: _json_file(target, name) for name in QUANT_FILES if name in files}
    ev.quant = find_quantization(raw_config, extra)
    if target.gguf_files:
        read: dict[tuple[str, ...], GgufEvidence] = {}

        def read_once(paths: list[str]) -> GgufEvidence:
            if tuple(paths) not in read:
                read[tuple(paths)] = _read_gguf(target, paths)
            return read[tuple(paths)]

        ev.gguf = read_once(target.gguf_files)
        if target.sidecar_files is None:
            ev.sidecar_choice = choose_sidecar(files, target.gguf_files, ev.gguf, read_once)
        elif target.app is not None and target.app.draft_file and target.sidecar_files:
            ev.sidecar_choice = SidecarChoice(target.sidecar_files, Pairing.draft_layer,
                                              f"{target.sidecar_files[0]}: the DRAFT layer of {target.app.location}")
        else:
            ev.sidecar_choice = named_sidecar(target.sidecar_files)
        if ev.sidecar_choice.files:
            ev.sidecar = read_once(ev.sidecar_choice.files)
        ev.other_sidecars = sorted(
            p for p in sidecar_ggufs(files) if p not in ev.sidecar_choice.files and p not in target.gguf_files
        )
        return ev
    if raw_config is None and not any(p.endswith((".safetensors", ".bin")) for p in files):
        raise SourceError(f"{target.display}: no config.json, safetensors or GGUF files found")
    ev.checkpoint = _checkpoint(target, ev.config)
    if ev.checkpoint is None:
        ev.unreadable_weights = _pickled(files)
    ev.other_sidecars = sorted(sidecar_ggufs(files))
    return ev
