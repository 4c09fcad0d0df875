"""Gather the facts a verdict rests on, reading only headers: config, quantization, tensor names, dtypes.

Evidence is what the files say, with no judgement: the diagnosis turns it into findings. Everything
here reads through the target's tree (a Hub repo or a local folder), so the cost is metered the same
way for both.

On the Hub every read is a round trip, so the files are read in batches (Tree.read_batch), each file's
reads in a job of its own: after the listing, one batch reads everything the listing names (config.json,
the quantization files, the model card, the index, the GGUF headers of every shard and of the sidecar,
the safetensors headers when there is no index); the reads each of those needs next go out together in
the following wave. A checkpoint with an index then reads the headers of the shards it names for the
MTP head in one more batch, each read sized from the index (header_size_estimate). Three waves in all.
A GGUF whose head is an mtp- sidecar reads a few rows of the sidecar's and the trunk's embedding in one
more batch (embedding.py): whether the head was trained with this trunk. A local GGUF that carries its own
head reads a few rows of the embedding that head drafts with: NaN or Inf is a broken head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import islice
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from mtpinspect.errors import FormatError, MtpinspectError, SourceError, shown
from mtpinspect.formats.card import CARD_FILE, CARD_LIMIT, ModelCard, card_from_metadata, parse_card
from mtpinspect.formats.gguf import FIRST_READ, LLAMA_MAX_LAYERS, SMALL_FIRST_READ, GGUFHeader, GGUFTensor, read_gguf_header
from mtpinspect.inspection.naming import GgufMtpTensors, MtpTensors, find_gguf_mtp_tensors, find_mtp_tensors
from mtpinspect.inspection.pairing import SidecarChoice, choose_sidecar, named_sidecar, pair_by_name
from mtpinspect.sources.filenames import QUANT_FILES, is_mtp_safetensors
from mtpinspect.sources.local import LocalTree
from mtpinspect.sources.reader import RecordingReader, read_json
from mtpinspect.sources.target import Target
from mtpinspect.vocabulary import Pairing, SourceKind

# What only some targets need is imported where it is used, so a GGUF check does not load it (about 20 ms of
# a 0.25 s command; tests/test_imports.py): config.json's parser and the quantization configs' (files a
# lone GGUF does not have), the safetensors reader and the download records (a checkpoint's), the
# embedding comparison (a sidecar's).
if TYPE_CHECKING:
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata

    from mtpinspect.formats.config import ModelConfig
    from mtpinspect.formats.quantization import QuantizationConfig
    from mtpinspect.inspection.embedding import EmbeddingComparison, HeadRows
    from mtpinspect.sources.provenance import LocalDownload
    from mtpinspect.sweep.report import SavedRecommendation

# Reading a few shard headers is cheap; reading all 160 of a DeepSeek repo is not needed for the verdict.
MAX_MTP_SHARDS = 16
T = TypeVar("T")
# A parsed GGUF header and the bytes fetched to parse it (remote files, for a header-only copy).
ParsedGguf = tuple[GGUFHeader, list[tuple[int, bytes]]]


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
    # Shards the index names that a local folder lacks (a partial download, `hf download --include "*.json"`):
    # the index says which tensors they hold; their headers cannot be read.
    not_downloaded: list[str] = field(default_factory=list)


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
    # The sidecar's shared tensors against the trunk's, a few rows each (embedding.py); the problem when the
    # rows cannot be read (a cut-short sidecar): the check goes on without them.
    embedding: EmbeddingComparison | None = None
    embedding_problem: str | None = None
    # A few rows of the embedding a file's own head drafts with (a bundled head, a sidecar checked alone):
    # NaN or Inf there is a broken head. The problem when they cannot be read.
    head_rows: HeadRows | None = None
    head_rows_problem: str | None = None
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


class _Batch:
    """The jobs of one Tree.read_batch; ``add`` returns the slot the job's result lands in."""

    def __init__(self) -> None:
        self._jobs: list[Callable[[], Any]] = []
        self._results: list[Any] = []

    def add(self, job: Callable[[], Any]) -> int:
        self._jobs.append(job)
        return len(self._jobs) - 1

    def run(self, target: Target) -> None:
        self._results = target.tree.read_batch(self._jobs)

    def __getitem__(self, slot: int) -> Any:
        return self._results[slot]


def _outcome(job: Callable[[], T]) -> T | MtpinspectError:
    """The job's result, or the error that says why it has none: a failure that must not stop the batch
    (a sidecar candidate whose header cannot be read is passed over, not fatal)."""
    try:
        return job()
    except MtpinspectError as exc:
        return exc


def _gguf_file(target: Target, path: str, first_read: int) -> ParsedGguf:
    """One GGUF file's header, checked for the data it declares, and the bytes fetched for it."""
    reader = target.tree.open(path)
    if target.kind is not SourceKind.hub:
        return read_gguf_header(reader, first_read).require_data(), []
    recording = RecordingReader(reader)
    return read_gguf_header(recording, first_read).require_data(), recording.pieces


def _gguf_reads(paths: list[str]) -> list[tuple[str, int]]:
    """Each file of a GGUF set (a split's shards, or one file) with the size of its first read: the shards
    after the first hold only the split keys and their tensor infos. (An mtp- sidecar's first file is read
    like a main one: it carries the whole tokenizer, and a 64 KiB sample of its token list is too short to
    size the rest: a third read, a fourth wave, for a 150k-token vocabulary; bench/README.md.)"""
    return [(path, FIRST_READ if i == 0 else SMALL_FIRST_READ) for i, path in enumerate(paths)]


def _gguf_evidence(target: Target, paths: list[str], parsed: Mapping[str, ParsedGguf | MtpinspectError]) -> GgufEvidence:
    """The headers of one GGUF (all shards of a split set), and the type and range of the keys the rules read
    checked, so a bad file is refused here with one line."""
    headers, fetched = [], {}
    for path in paths:
        result = parsed[path]
        if isinstance(result, MtpinspectError):
            raise result
        headers.append(result[0])
        if target.kind is SourceKind.hub:
            fetched[path] = result[1]
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


def _weight_map(target: Target, index_file: str, index: Mapping[str, Any]) -> dict[str, str]:
    """Tensor name -> shard, as the index says."""
    from mtpinspect.formats.safetensors import check_tensor_name

    wm = index.get("weight_map")
    where = f"{target.display}/{index_file}"
    if not isinstance(wm, dict):
        raise FormatError(f"{where}: weight_map is {shown(wm)}, not an object")
    for tensor, shard in wm.items():
        check_tensor_name(tensor, where)
        if not isinstance(shard, str) or not shard:
            raise FormatError(f"{where}: weight_map[{tensor!r}] is {shown(shard)}, not a shard file name")
    return dict(wm)


def _checkpoint_reads(target: Target, batch: _Batch) -> tuple[str | None, dict[str, int]]:
    """Add the first batch's checkpoint reads: the index, or without one the shard headers (which say what
    the index would), and a separate MTP file's header. Returns the index file, and the slot of each header."""
    files = target.tree.files
    index_file = _index_file(files)
    if index_file:
        headers = {index_file: batch.add(partial(_json_file, target, index_file))}
    else:
        shards = [p for p in files if p.endswith(".safetensors") and "/" not in p and not is_mtp_safetensors(p)]
        headers = {shard: batch.add(partial(_safetensors_file, target, shard)) for shard in shards[:MAX_MTP_SHARDS]}
    # Named for the head: read in any case (a standalone one's tensors are in no index).
    for path in [p for p in sorted(files) if is_mtp_safetensors(p) and p not in headers][:MAX_MTP_SHARDS]:
        headers[path] = batch.add(partial(_safetensors_file, target, path))
    return index_file, headers


def _safetensors_file(target: Target, path: str, first_read: int | None = None) -> SafetensorsFileMetadata:
    """A safetensors header; ``first_read``: the size of the first request (default: the reader's)."""
    from mtpinspect.formats.safetensors import FIRST_READ as SAFETENSORS_FIRST_READ
    from mtpinspect.formats.safetensors import read_safetensors_header

    return read_safetensors_header(target.tree.open(path), first_read or SAFETENSORS_FIRST_READ)


def _checkpoint(target: Target, config: ModelConfig | None, index_file: str | None,
                first: dict[str, Any]) -> CheckpointEvidence | None:
    """The checkpoint's MTP evidence from the first batch's reads (``first``: the index, or the shard headers,
    and any mtp safetensors header, by path), reading the MTP shards' headers the index names in one more."""
    from mtpinspect.formats.safetensors import header_size_estimate, tensor_extent

    files = target.tree.files
    has_weights = index_file or any(p.endswith(".safetensors") for p in files)
    if not has_weights:
        return None
    headers: dict[str, SafetensorsFileMetadata] = {p: h for p, h in first.items() if p != index_file}
    if index_file:
        weight_map = _weight_map(target, index_file, first[index_file])
    else:
        weight_map = {name: shard for shard, header in headers.items() if not is_mtp_safetensors(shard) for name in header.tensors}
    # A repo that lacks a shard its index names is broken; a folder that lacks one is a partial download,
    # whose index still says where every tensor is.
    absent = sorted({shard for shard in weight_map.values() if shard not in files})
    if absent and not isinstance(target.tree, LocalTree):
        raise SourceError(f"{target.display}: {index_file} names shard '{absent[0]}', which is not in the repo")
    standalone = next((p for p in sorted(files) if is_mtp_safetensors(p) and p not in weight_map.values()), None)
    if standalone:
        if standalone not in headers:  # past the first batch's MAX_MTP_SHARDS files named for the head
            headers[standalone] = _safetensors_file(target, standalone)
        for name in headers[standalone].tensors:
            weight_map.setdefault(name, standalone)
    layers = config.num_hidden_layers if config else None
    mtp = find_mtp_tensors(weight_map, layers)
    mtp_files = sorted({weight_map[n] for n in mtp.names})
    # Read the shards that hold the head's own projections first: they decide the verdict.
    ordered = sorted(mtp_files, key=lambda f: (0 if any(weight_map[n] == f and "proj" in n for n in mtp.names) else 1, f))
    # PyTorch pickles have no header to range-read: their dtypes stay unknown.
    readable = [f for f in ordered if f.endswith(".safetensors") and f not in absent]
    wanted = [f for f in readable[:MAX_MTP_SHARDS] if f not in headers]
    if wanted:
        held: dict[str, list[str]] = {}
        for name, shard in weight_map.items():
            held.setdefault(shard, []).append(name)
        jobs = [partial(_safetensors_file, target, shard, header_size_estimate(held[shard])) for shard in wanted]
        headers.update(zip(wanted, target.tree.read_batch(jobs)))
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
        not_downloaded=[f for f in mtp_files if f in absent],
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


# The unpaired mtp- files a report names: a repo of 20,000 of them repeated in each model's report was
# quadratic in time and memory (check --all), so each report names the first ones of the listing.
MAX_OTHER_SIDECARS = 32


def _some_sidecars(paths: Iterable[str]) -> list[str]:
    return sorted(islice(paths, MAX_OTHER_SIDECARS))


def _compare_embeddings(target: Target, ev: Evidence) -> None:
    from mtpinspect.inspection.embedding import compare_embeddings

    assert ev.gguf is not None and ev.sidecar is not None
    try:
        ev.embedding = compare_embeddings(target.tree, ev.gguf, ev.sidecar)
    except MtpinspectError as exc:
        ev.embedding_problem = str(exc)


def _sample_head_rows(target: Target, ev: Evidence) -> None:
    from mtpinspect.inspection.embedding import sample_head_rows

    g = ev.gguf
    assert g is not None
    own = [n for n in g.mtp.nextn if ".nextn.embed_tokens." in n]
    try:
        ev.head_rows = sample_head_rows(target.tree, g, [*own, "token_embd.weight"])
    except MtpinspectError as exc:
        ev.head_rows_problem = str(exc)


def gather(target: Target) -> Evidence:
    ev = Evidence(target)
    files = target.tree.files
    ev.config_file = config_file = _find_config(target)
    if not target.gguf_files and config_file is None and not any(p.endswith((".safetensors", ".bin")) for p in files):
        raise SourceError(f"{target.display}: no config.json, safetensors or GGUF files found")
    # The first batch: everything the listing names.
    batch = _Batch()
    card = batch.add(partial(_card, target))
    config = batch.add(partial(_json_file, target, config_file)) if config_file else None
    extra = {name: batch.add(partial(_json_file, target, name)) for name in QUANT_FILES if name in files}
    if target.gguf_files:
        named = pair_by_name(target.names(), target.gguf_files) if target.sidecar_files is None else None
        sidecar_sets = named.reads if named is not None else [target.sidecar_files or []]
        needed = set(target.gguf_files) | set(named.choice.files if named and named.choice else target.sidecar_files or [])
        reads = [r for paths in [target.gguf_files, *sidecar_sets] for r in _gguf_reads(paths)]
        # A candidate whose header cannot be read is passed over: its failure must not stop the batch.
        gguf_slots = {path: batch.add(partial(_gguf_file, target, path, first) if path in needed
                                      else partial(_outcome, partial(_gguf_file, target, path, first)))
                      for path, first in dict(reads).items()}
    else:
        index_file, header_slots = _checkpoint_reads(target, batch)
    batch.run(target)
    ev.card, ev.card_problem = batch[card]
    raw_config = batch[config] if config is not None else None
    if raw_config is not None:
        from mtpinspect.formats.config import parse_config

        ev.config = parse_config(raw_config, f"{target.display}/{config_file}")
    if raw_config is not None or extra:  # no quantization config anywhere else
        from mtpinspect.formats.quantization import find_quantization

        ev.quant = find_quantization(raw_config, {name: batch[slot] for name, slot in extra.items()})
    if target.gguf_files:
        parsed = {path: batch[slot] for path, slot in gguf_slots.items()}
        read: dict[tuple[str, ...], GgufEvidence] = {}

        def read_once(paths: list[str]) -> GgufEvidence:
            missing = [p for p in paths if p not in parsed]
            if missing:  # a header no name pointed to (another model's, to compare a sidecar with)
                jobs = [partial(_outcome, partial(_gguf_file, target, p, first)) for p, first in _gguf_reads(missing)]
                parsed.update(zip(missing, target.tree.read_batch(jobs)))
            if tuple(paths) not in read:
                read[tuple(paths)] = _gguf_evidence(target, paths, parsed)
            return read[tuple(paths)]

        ev.gguf = read_once(target.gguf_files)
        # Its own head: are the rows it drafts with numbers? Read on disk only, where a few rows cost no round
        # trip: on the Hub they would add a wave to every bundled check and a cached re-check would read again.
        if ev.gguf.mtp.nextn and target.kind in (SourceKind.local_file, SourceKind.local_dir):
            _sample_head_rows(target, ev)
        if named is not None:
            ev.sidecar_choice = choose_sidecar(named, ev.gguf, read_once)
        elif target.app is not None and target.app.draft_file and target.sidecar_files:
            ev.sidecar_choice = SidecarChoice(target.sidecar_files, Pairing.draft_layer,
                                              f"{target.sidecar_files[0]}: the DRAFT layer of {target.app.location}")
        else:
            ev.sidecar_choice = named_sidecar(target.sidecar_files or [])
        if ev.sidecar_choice.files:
            ev.sidecar = read_once(ev.sidecar_choice.files)
            if not ev.gguf.mtp.nextn:  # the head is the sidecar's: was it trained with this trunk?
                _compare_embeddings(target, ev)
        taken = {*ev.sidecar_choice.files, *target.gguf_files}
        ev.other_sidecars = _some_sidecars(p for p in target.names().sidecars if p not in taken)
        return ev
    if isinstance(target.tree, LocalTree):  # who made a checkpoint (origin.py) reads them
        from mtpinspect.sources.provenance import local_download

        ev.download = local_download(target.tree.root, files)
    first = {path: batch[slot] for path, slot in header_slots.items()}
    ev.checkpoint = _checkpoint(target, ev.config, index_file, first)
    if ev.checkpoint is None:
        ev.unreadable_weights = _pickled(files)
    ev.other_sidecars = _some_sidecars(target.names().sidecars)
    return ev
