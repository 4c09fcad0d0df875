"""Test GGUF files written with gguf-py's GGUFWriter: small ones, a big sparse one, and broken ones.

Everything here writes real files (gguf.GGUFReader reads them all, except the broken ones):

- ``write_gguf(path, arch=..., metadata={...}, tensors=[TensorSpec(...)])``: any header you like. Tensor
  data is zeros, made by extending the file sparsely, so claiming GBs costs no disk; ``data_bytes``
  cuts the data short (as in the cases/ corpus).
- ``write_nextn_gguf(path, ...)``: a glm4moe model with ``blk.L.nextn.*`` MTP tensors (the tiny layout of
  mtpinspect.tiny_model by default), or its ``mtp-`` sidecar (MTP block and the shared embedding/output
  tensors, or the MTP block alone).
- ``write_big_gguf(path, size_gib=8)``: a realistic header (150k-token BPE vocabulary with scores, token
  types and merges; about 1,000 tensors of mixed ggml types, MTP block included) over GBs of sparse data.
- ``write_split_gguf(path, n_shards=5, ...)``: a split set as gguf-py writes it (``M-00001-of-00005.gguf``...):
  every key in the first shard, only the ``split.*`` keys in the others.
- ``write_bad_gguf(path, problem)``: one file per entry of ``BAD_GGUF_PROBLEMS`` (truncated, not a GGUF,
  hostile lengths...), for error-path tests.
- ``graft_tensors(vocab_gguf, path, tensors)``: a real vocabulary-only GGUF (llama.cpp's
  models/ggml-vocab-*.gguf) given a model's tensor infos.

Metadata values map to GGUF types as llama.cpp expects them: bool -> BOOL, int -> UINT32 (INT32 if
negative, UINT64 if >= 2**32), float -> FLOAT32, str -> STRING, list -> ARRAY of the first item's type
(int items -> INT32). Pass a ``gguf.GGUFValue`` for any other type.
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import struct
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFValue, GGUFWriter, TokenType
from gguf.constants import GGML_QUANT_SIZES, GGUF_MAGIC, GGMLQuantizationType, GGUFValueType, Keys

from mtpinspect.formats.gguf import read_gguf_header
from mtpinspect.sources.reader import LocalFileReader

GiB = 1024**3


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]  # ggml ne order, as llama.cpp and GGUF store it (numpy order reversed)
    ggml_type: str = "F32"  # a gguf.GGMLQuantizationType name

    @property
    def nbytes(self) -> int:
        block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType[self.ggml_type]]
        return math.prod(self.shape) // block_size * type_size


def write_gguf(
    path: str | os.PathLike[str],
    *,
    arch: str = "llama",
    metadata: Mapping[str, Any] | None = None,
    tensors: Sequence[TensorSpec] = (),
    alignment: int | None = None,
    data_bytes: int | None = None,
) -> Path:
    """Write a GGUF with these keys (``general.architecture`` is set from ``arch``) and tensor infos.

    The tensor data is all zeros and sparse. ``data_bytes`` keeps only that many bytes of it (the
    header still claims every tensor in full). Returns ``path``.
    """
    path = Path(path)
    data_offset, data_size = _write_header(path, arch, metadata or {}, tensors, alignment)
    os.truncate(path, data_offset + (data_size if data_bytes is None else min(data_bytes, data_size)))
    return path


def _write_header(
    path: Path, arch: str, metadata: Mapping[str, Any], tensors: Sequence[TensorSpec], alignment: int | None
) -> tuple[int, int]:
    """Write magic, keys and tensor infos, padded to the alignment; return (data offset, data size)."""
    writer = GGUFWriter(path, arch)
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    for key, value in metadata.items():
        _add_kv(writer, key, value)
    for spec in tensors:
        # raw_dtype sets the ggml type; the numpy dtype is only consulted when raw_dtype is None.
        writer.add_tensor_info(
            spec.name, tuple(reversed(spec.shape)), np.dtype(np.float32), spec.nbytes, GGMLQuantizationType[spec.ggml_type]
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    header_end = path.stat().st_size
    data_offset = GGUFWriter.ggml_pad(header_end, writer.data_alignment)
    data_size = sum(GGUFWriter.ggml_pad(t.nbytes, writer.data_alignment) for t in tensors)
    return data_offset, data_size


def _add_kv(writer: GGUFWriter, key: str, value: Any) -> None:
    if isinstance(value, GGUFValue):
        writer.add_key_value(key, value.value, value.type, value.sub_type)
    elif isinstance(value, (list, tuple)):
        writer.add_key_value(key, list(value), GGUFValueType.ARRAY, _item_type(value[0]))
    else:
        writer.add_key_value(key, value, _scalar_type(value))


def _scalar_type(value: Any) -> GGUFValueType:
    if isinstance(value, bool):
        return GGUFValueType.BOOL
    if isinstance(value, int):
        if value < 0:
            return GGUFValueType.INT32
        return GGUFValueType.UINT32 if value < 2**32 else GGUFValueType.UINT64
    if isinstance(value, float):
        return GGUFValueType.FLOAT32
    if isinstance(value, str):
        return GGUFValueType.STRING
    raise TypeError(f"no GGUF type for {value!r}; pass a gguf.GGUFValue")


def _item_type(value: Any) -> GGUFValueType:
    return GGUFValueType.INT32 if isinstance(value, int) and not isinstance(value, bool) else _scalar_type(value)


# -- glm4moe with an MTP (NextN) block ---------------------------------------------------------------


@dataclass(frozen=True)
class Glm4MoeDims:
    """Sizes of a glm4moe model; the defaults are those of mtpinspect.tiny_model's tiny model."""

    n_vocab: int = 64
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 4
    head_dim: int = 16
    n_ff: int = 128
    n_ff_exp: int = 32
    n_expert: int = 2
    n_expert_used: int = 1
    n_layer: int = 2  # trunk blocks
    n_dense: int = 2  # leading dense blocks, <= n_layer so the MTP block is MoE
    n_nextn: int = 1  # MTP blocks, appended after the trunk: blk.{n_layer} ...


def glm4moe_metadata(dims: Glm4MoeDims) -> dict[str, Any]:
    """The glm4moe.* keys llama.cpp reads for this model (no tokenizer keys)."""
    arch = "glm4moe"
    return {
        Keys.LLM.CONTEXT_LENGTH.format(arch=arch): 2048,
        Keys.LLM.EMBEDDING_LENGTH.format(arch=arch): dims.n_embd,
        Keys.LLM.BLOCK_COUNT.format(arch=arch): dims.n_layer + dims.n_nextn,
        Keys.LLM.NEXTN_PREDICT_LAYERS.format(arch=arch): dims.n_nextn,
        Keys.LLM.FEED_FORWARD_LENGTH.format(arch=arch): dims.n_ff,
        Keys.Attention.HEAD_COUNT.format(arch=arch): dims.n_head,
        Keys.Attention.HEAD_COUNT_KV.format(arch=arch): dims.n_head_kv,
        Keys.Attention.KEY_LENGTH.format(arch=arch): dims.head_dim,
        Keys.Attention.VALUE_LENGTH.format(arch=arch): dims.head_dim,
        Keys.Attention.LAYERNORM_RMS_EPS.format(arch=arch): 1e-6,
        Keys.Rope.FREQ_BASE.format(arch=arch): 10000.0,
        Keys.LLM.EXPERT_FEED_FORWARD_LENGTH.format(arch=arch): dims.n_ff_exp,
        Keys.LLM.EXPERT_SHARED_COUNT.format(arch=arch): 1,
        Keys.LLM.EXPERT_COUNT.format(arch=arch): dims.n_expert,
        Keys.LLM.EXPERT_USED_COUNT.format(arch=arch): dims.n_expert_used,
        Keys.LLM.LEADING_DENSE_BLOCK_COUNT.format(arch=arch): dims.n_dense,
    }


def glm4moe_tensors(
    dims: Glm4MoeDims, types: Mapping[str, str] | None = None, *, sidecar: bool = False, shared: bool = True
) -> list[TensorSpec]:
    """Tensor infos of a glm4moe model with its MTP block(s), in the order convert_hf_to_gguf writes them.

    ``types`` maps a name without its ``blk.N.`` prefix (e.g. ``"ffn_down_exps.weight"``,
    ``"nextn.eh_proj.weight"``) to a ggml type name; anything unlisted is F32. ``sidecar`` keeps only
    the MTP blocks and the shared embedding and output tensors, as ``convert_hf_to_gguf.py --mtp``
    writes an ``mtp-*.gguf`` file (no ``blk.0.attn_norm.weight``); ``shared=False`` leaves those out
    too, as some published sidecars do (llama.cpp cannot load them as a draft model).
    """
    types = types or {}
    e, v, f, fe, x = dims.n_embd, dims.n_vocab, dims.n_ff, dims.n_ff_exp, dims.n_expert
    q, kv = dims.n_head * dims.head_dim, dims.n_head_kv * dims.head_dim
    attention = [
        ("attn_norm.weight", (e,)),
        ("attn_q.weight", (e, q)),
        ("attn_q.bias", (q,)),
        ("attn_k.weight", (e, kv)),
        ("attn_k.bias", (kv,)),
        ("attn_v.weight", (e, kv)),
        ("attn_v.bias", (kv,)),
        ("attn_output.weight", (q, e)),
        ("post_attention_norm.weight", (e,)),
    ]
    dense = [("ffn_gate.weight", (e, f)), ("ffn_up.weight", (e, f)), ("ffn_down.weight", (f, e))]
    moe = [
        ("ffn_gate_inp.weight", (e, x)),
        ("exp_probs_b.bias", (x,)),
        ("ffn_gate_exps.weight", (e, fe, x)),
        ("ffn_up_exps.weight", (e, fe, x)),
        ("ffn_down_exps.weight", (fe, e, x)),
        ("ffn_gate_shexp.weight", (e, fe)),
        ("ffn_up_shexp.weight", (e, fe)),
        ("ffn_down_shexp.weight", (fe, e)),
    ]
    nextn = [
        ("nextn.eh_proj.weight", (2 * e, e)),
        ("nextn.enorm.weight", (e,)),
        ("nextn.hnorm.weight", (e,)),
        ("nextn.shared_head_norm.weight", (e,)),
    ]
    top = [("token_embd.weight", (e, v)), ("output_norm.weight", (e,)), ("output.weight", (e, v))]
    specs = [TensorSpec(n, s, types.get(n, "F32")) for n, s in top] if shared or not sidecar else []
    for il in range(dims.n_layer + dims.n_nextn):
        is_mtp = il >= dims.n_layer
        if not is_mtp and sidecar:
            continue
        block = attention + (dense if il < dims.n_dense else moe) + (nextn if is_mtp else [])
        specs += [TensorSpec(f"blk.{il}.{n}", s, types.get(n, "F32")) for n, s in block]
    return specs


def write_nextn_gguf(
    path: str | os.PathLike[str],
    *,
    dims: Glm4MoeDims = Glm4MoeDims(),
    types: Mapping[str, str] | None = None,
    sidecar: bool = False,
    shared: bool = True,
    extra_metadata: Mapping[str, Any] | None = None,
) -> Path:
    """A glm4moe GGUF with ``glm4moe.nextn_predict_layers`` and ``blk.L.nextn.*`` tensors (data zeros).

    Tokenizer: the ``test`` model with tokens ``t0..t{V-1}``. ``sidecar=True`` writes the MTP file
    (``shared=False``: without the embedding and output tensors; see glm4moe_tensors).
    """
    metadata: dict[str, Any] = {
        Keys.General.NAME: "tiny-glm4moe-mtp",
        **glm4moe_metadata(dims),
        Keys.Tokenizer.MODEL: "test",
        Keys.Tokenizer.LIST: [f"t{i}" for i in range(dims.n_vocab)],
        **(extra_metadata or {}),
    }
    return write_gguf(path, arch="glm4moe", metadata=metadata, tensors=glm4moe_tensors(dims, types, sidecar=sidecar, shared=shared))


# -- the big realistic file --------------------------------------------------------------------------

# A Q4_K_M-like mix, as llama-quantize picks it for a MoE model; the MTP projection in Q8_0.
BIG_TYPES: Mapping[str, str] = {
    "token_embd.weight": "Q4_K",
    "output.weight": "Q6_K",
    "attn_q.weight": "Q4_K",
    "attn_k.weight": "Q4_K",
    "attn_v.weight": "Q6_K",
    "attn_output.weight": "Q4_K",
    "ffn_gate.weight": "Q4_K",
    "ffn_up.weight": "Q4_K",
    "ffn_down.weight": "Q6_K",
    "ffn_gate_exps.weight": "Q4_K",
    "ffn_up_exps.weight": "Q4_K",
    "ffn_down_exps.weight": "Q6_K",
    "ffn_gate_shexp.weight": "Q4_K",
    "ffn_up_shexp.weight": "Q4_K",
    "ffn_down_shexp.weight": "Q6_K",
    "nextn.eh_proj.weight": "Q8_0",
}

_CHAT_TEMPLATE = (
    "[gMASK]<sop>{%- if tools -%}<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user "
    "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{% for tool in tools %}"
    "{{ tool | tojson(ensure_ascii=False) }}\n{% endfor %}</tools>\n{%- endif -%}\n"
    "{%- for m in messages %}{%- if m.role == 'system' %}<|system|>\n{{ m.content }}"
    "{%- elif m.role == 'user' %}<|user|>\n{{ m.content }}{%- elif m.role == 'assistant' %}<|assistant|>\n"
    "{%- if m.reasoning_content %}<think>{{ m.reasoning_content.strip() }}</think>{%- endif %}\n{{ m.content }}"
    "{%- elif m.role == 'tool' %}<|observation|>\n<tool_response>\n{{ m.content }}\n</tool_response>{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}<|assistant|>\n{%- endif %}"
) * 4


@dataclass(frozen=True)
class BigGGUF:
    path: Path
    dims: Glm4MoeDims
    n_tensors: int
    nextn_block: int  # the blk index of the (first) MTP block
    file_size: int


def big_dims(size_gib: float, n_vocab: int = 150_000) -> Glm4MoeDims:
    """GLM-4.5-Air-like sizes (58 blocks + 1 MTP: ~1,000 tensors), experts scaled to ~``size_gib`` of data."""
    base = Glm4MoeDims(
        n_vocab=n_vocab, n_embd=2048, n_head=16, n_head_kv=4, head_dim=128, n_ff=8192, n_ff_exp=1024,
        n_expert=1, n_expert_used=1, n_layer=58, n_dense=1, n_nextn=1,
    )  # fmt: skip

    def size(n_expert: int) -> int:
        return sum(t.nbytes for t in glm4moe_tensors(replace(base, n_expert=n_expert), BIG_TYPES))

    per_expert = size(2) - size(1)
    n_expert = max(1, round((size_gib * GiB - size(1)) / per_expert) + 1)
    return replace(base, n_expert=n_expert, n_expert_used=min(8, n_expert))


BIG_PARTS = ("bundled", "trunk", "mtp")


def write_big_gguf(
    path: str | os.PathLike[str], *, size_gib: float = 8.0, n_vocab: int = 150_000, seed: int = 0, part: str = "bundled"
) -> BigGGUF:
    """A header as big as a real large model's, over ~``size_gib`` GiB of sparse zero tensor data.

    Keys in convert_hf_to_gguf order: general.*, glm4moe.*, then a gpt2 tokenizer whose ``n_vocab`` tokens,
    scores, token types and merges look like a real BPE vocabulary (byte tokens, words growing longer
    with rank, some CJK, special tokens last), bos/eos ids and a chat template. ``part``: the whole
    model with its MTP block, or the two files of a ``--no-mtp`` / ``--mtp`` conversion: the trunk
    (no nextn key, block_count L) and its ``mtp-`` sidecar (the MTP block and the shared tensors).
    """
    if part not in BIG_PARTS:
        raise ValueError(f"part {part!r}: expected one of {BIG_PARTS}")
    dims = big_dims(size_gib, n_vocab)
    written_dims = replace(dims, n_nextn=0) if part == "trunk" else dims
    metadata = big_metadata(written_dims, seed=seed)
    if part == "trunk":
        metadata = {k: v for k, v in metadata.items() if "nextn" not in k}
    tensors = glm4moe_tensors(written_dims, BIG_TYPES, sidecar=part == "mtp")
    path = write_gguf(path, arch="glm4moe", metadata=metadata, tensors=tensors)
    return BigGGUF(path, written_dims, len(tensors), dims.n_layer, path.stat().st_size)


def big_metadata(
    dims: Glm4MoeDims, *, name: str = "Big Test Model Air", size_label: str = "106B-A12B", seed: int = 0
) -> dict[str, Any]:
    """The keys of a real Q4_K_M glm4moe conversion, with a ``dims.n_vocab``-token BPE vocabulary."""
    n_vocab = dims.n_vocab
    tokens, token_types, merges = bpe_vocab(n_vocab, seed)
    return {
        Keys.General.TYPE: "model",
        Keys.General.NAME: name,
        Keys.General.SIZE_LABEL: size_label,
        Keys.General.LICENSE: "mit",
        Keys.General.FILE_TYPE: 15,  # MOSTLY_Q4_K_M
        **glm4moe_metadata(dims),
        Keys.Tokenizer.MODEL: "gpt2",
        Keys.Tokenizer.PRE: "glm4",
        Keys.Tokenizer.LIST: tokens,
        Keys.Tokenizer.SCORES: [float(-i) for i in range(n_vocab)],
        Keys.Tokenizer.TOKEN_TYPE: token_types,
        Keys.Tokenizer.MERGES: merges,
        Keys.Tokenizer.EOS_ID: n_vocab - 20,
        Keys.Tokenizer.PAD_ID: n_vocab - 19,
        Keys.Tokenizer.BOS_ID: n_vocab - 18,
        Keys.Tokenizer.CHAT_TEMPLATE: _CHAT_TEMPLATE,
        Keys.General.QUANTIZATION_VERSION: 2,
    }


def write_split_gguf(
    path: str | os.PathLike[str],
    *,
    arch: str,
    metadata: Mapping[str, Any],
    tensors: Sequence[TensorSpec],
    n_shards: int,
) -> list[Path]:
    """A split GGUF as gguf-py's GGUFWriter (``--split-max-tensors``) writes it; returns the shard paths.

    ``path`` names the set: ``dir/M.gguf`` gives ``dir/M-00001-of-0000N.gguf``... Tensors are dealt out in
    order, the same number per shard; each shard's data is zeros and sparse.
    """
    per_shard = math.ceil(len(tensors) / n_shards)
    writer = GGUFWriter(Path(path), arch, split_max_tensors=per_shard)
    for key, value in metadata.items():
        _add_kv(writer, key, value)
    for spec in tensors:
        writer.add_tensor_info(
            spec.name, tuple(reversed(spec.shape)), np.dtype(np.float32), spec.nbytes, GGMLQuantizationType[spec.ggml_type]
        )
    if len(writer.tensors) != n_shards:
        raise ValueError(f"{len(tensors)} tensors do not deal out into {n_shards} shards")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    header_ends = [fout.tell() for fout in writer.fout]
    paths = writer.format_shard_names(Path(path))
    data_sizes = [sum(GGUFWriter.ggml_pad(t.nbytes, writer.data_alignment) for t in shard.values()) for shard in writer.tensors]
    writer.close()
    for shard_path, header_end, data_size in zip(paths, header_ends, data_sizes):
        os.truncate(shard_path, GGUFWriter.ggml_pad(header_end, writer.data_alignment) + data_size)
    return paths


def _byte_chars() -> list[str]:
    """GPT-2's printable stand-ins for the 256 byte values (bytes_to_unicode)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def bpe_vocab(n_vocab: int, seed: int = 0) -> tuple[list[str], list[int], list[str]]:
    """Tokens, token types and merges shaped like a byte-level BPE vocabulary of ``n_vocab`` entries."""
    rng = random.Random(seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [26 - i for i in range(26)]
    n_special = 20
    tokens = _byte_chars()
    seen = set(tokens)
    merges: list[str] = []
    n_regular = n_vocab - n_special - len(tokens)
    for rank in range(n_regular):
        while True:
            if rng.random() < 0.05:
                word = "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(rng.randint(1, 3)))
            else:
                length = 2 + int(7 * rank / n_regular) + rng.randint(0, 3)
                word = "".join(rng.choices(letters, weights, k=length))
                word = ("Ġ" if rng.random() < 0.6 else "") + (word.capitalize() if rng.random() < 0.1 else word)
            if word not in seen:
                break
        seen.add(word)
        tokens.append(word)
        cut = rng.randint(1, len(word) - 1) if len(word) > 1 else 1
        merges.append(f"{word[:cut]} {word[cut:] or word}")
    tokens += [f"<|special_{i}|>" for i in range(n_special)]
    token_types = [int(TokenType.NORMAL)] * (n_vocab - n_special) + [int(TokenType.CONTROL)] * n_special
    return tokens, token_types, merges


# -- broken files ------------------------------------------------------------------------------------

BAD_GGUF_PROBLEMS = (
    "truncated-header",  # a valid file cut inside its tensor infos
    "empty",
    "zip",  # a zip archive (e.g. a PyTorch checkpoint)
    "safetensors",
    "version-1",
    "version-99",
    "big-endian",
    "huge-array",  # a UINT8 array claiming 2**60 items
    "huge-string-array",  # a STRING array claiming 2**60 items
    "huge-string",  # a 1 TB string value
    "huge-key",  # a 1 TB key name
    "unknown-value-type",
    "nested-array",
    "unknown-ggml-type",  # type id 4 (Q4_2, removed from ggml)
    "absurd-n-dims",  # n_dims 2**31
    "huge-tensor-count",  # 2**40 tensors claimed in a few hundred bytes
    "huge-kv-count",
    "bad-alignment",  # general.alignment = 3
    "duplicate-key",
    "duplicate-tensor",
)


def _gguf_string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _gguf_string(key) + struct.pack("<I", vtype) + payload


def _tensor_info(name: str, shape: Sequence[int], type_id: int, offset: int = 0, n_dims: int | None = None) -> bytes:
    dims = len(shape) if n_dims is None else n_dims
    return _gguf_string(name) + struct.pack(f"<I{len(shape)}QIQ", dims, *shape, type_id, offset)


def raw_gguf(
    kvs: Sequence[bytes] = (),
    tensor_infos: Sequence[bytes] = (),
    *,
    version: int = 3,
    kv_count: int | None = None,
    tensor_count: int | None = None,
    tail: int = 4096,
) -> bytes:
    """A GGUF assembled by hand from encoded keys and tensor infos (counts overridable), plus ``tail`` zero bytes."""
    head = struct.pack(
        "<IIQQ",
        GGUF_MAGIC,
        version,
        len(tensor_infos) if tensor_count is None else tensor_count,
        len(kvs) if kv_count is None else kv_count,
    )
    return head + b"".join(kvs) + b"".join(tensor_infos) + bytes(tail)


def _bad_bytes(problem: str) -> bytes:
    arch = _kv("general.architecture", GGUFValueType.STRING, _gguf_string("llama"))
    f32_tensor = _tensor_info("blk.0.attn_norm.weight", (64,), GGMLQuantizationType.F32)
    files: dict[str, bytes] = {
        "empty": b"",
        "zip": _zip_bytes(),
        "safetensors": _safetensors_bytes(),
        "version-1": raw_gguf([arch], version=1),
        "version-99": raw_gguf([arch], version=99),
        # gguf-py writes the magic little-endian whatever the byte order of the rest.
        "big-endian": struct.pack("<I", GGUF_MAGIC) + struct.pack(">IQQ", 3, 0, 1) + bytes(64),
        "huge-array": raw_gguf([_kv("x.data", GGUFValueType.ARRAY, struct.pack("<IQ", GGUFValueType.UINT8, 2**60))]),
        "huge-string-array": raw_gguf(
            [_kv("tokenizer.ggml.tokens", GGUFValueType.ARRAY, struct.pack("<IQ", GGUFValueType.STRING, 2**60))]
        ),
        "huge-string": raw_gguf([_kv("general.name", GGUFValueType.STRING, struct.pack("<Q", 2**40) + b"abc")]),
        "huge-key": raw_gguf([struct.pack("<Q", 2**40) + b"general.name"]),
        "unknown-value-type": raw_gguf([arch, _kv("x.value", 99, struct.pack("<I", 1))]),
        "nested-array": raw_gguf(
            [_kv("x.nested", GGUFValueType.ARRAY, struct.pack("<IQIQI", GGUFValueType.ARRAY, 1, GGUFValueType.UINT32, 1, 7))]
        ),
        "unknown-ggml-type": raw_gguf([arch], [_tensor_info("blk.0.attn_q.weight", (64, 64), 4)]),
        "absurd-n-dims": raw_gguf([arch], [_tensor_info("blk.0.attn_q.weight", (64, 64), 0, n_dims=2**31)]),
        "huge-tensor-count": raw_gguf([arch], [f32_tensor], tensor_count=2**40),
        "huge-kv-count": raw_gguf([arch], kv_count=2**40),
        "bad-alignment": raw_gguf([arch, _kv("general.alignment", GGUFValueType.UINT32, struct.pack("<I", 3))]),
        "duplicate-key": raw_gguf([arch, arch]),
        "duplicate-tensor": raw_gguf([arch], [f32_tensor, _tensor_info("blk.0.attn_norm.weight", (64,), 0, 256)]),
    }
    return files[problem]


def write_bad_gguf(path: str | os.PathLike[str], problem: str) -> Path:
    """Write a file with one of ``BAD_GGUF_PROBLEMS``; every one must be refused with one FormatError line."""
    if problem not in BAD_GGUF_PROBLEMS:
        raise ValueError(f"unknown problem {problem!r}; choose from {BAD_GGUF_PROBLEMS}")
    path = Path(path)
    if problem == "truncated-header":
        data_offset, _ = _write_header(path, "glm4moe", {"glm4moe.block_count": 3}, glm4moe_tensors(Glm4MoeDims()), None)
        # 100 bytes before the data is inside the last tensor infos (the padding is under 32 bytes).
        os.truncate(path, data_offset - 100)
    else:
        path.write_bytes(_bad_bytes(problem))
    return path


def _zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    return buf.getvalue()


def _safetensors_bytes() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    return struct.pack("<Q", len(header)) + header + bytes(8)


def graft_tensors(source: str | os.PathLike[str], path: str | os.PathLike[str], tensors: Sequence[TensorSpec]) -> Path:
    """Copy the metadata of a tensor-less GGUF (e.g. llama.cpp's models/ggml-vocab-*.gguf) byte for byte
    and add these tensor infos over sparse zero data: a real vocabulary in a model-sized header."""
    src = read_gguf_header(LocalFileReader(source))
    if src.tensors or src.header_size != src.file_size:
        raise ValueError(f"{source}: not a GGUF made of metadata only")
    raw = Path(source).read_bytes()
    infos, offset = [], 0
    for spec in tensors:
        infos.append(_tensor_info(spec.name, spec.shape, GGMLQuantizationType[spec.ggml_type], offset))
        offset += GGUFWriter.ggml_pad(spec.nbytes, src.alignment)
    header = struct.pack("<IIQQ", GGUF_MAGIC, src.version, len(infos), len(src.metadata)) + raw[24:] + b"".join(infos)
    path = Path(path)
    path.write_bytes(header)
    os.truncate(path, GGUFWriter.ggml_pad(len(header), src.alignment) + offset)
    return path


def drop_mtp_layer(source: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """A real GGUF with its MTP layer(s) taken out, as the pinned converter's ``--no-mtp`` writes a trunk:
    every key but ``ARCH.nextn_predict_layers`` (``ARCH.block_count`` and the per-layer arrays, such as
    qwen35's ``attention.recurrent_layers``, less the MTP layers), every tensor outside the MTP blocks,
    byte for byte (gguf-py's own copy loop, scripts/gguf_new_metadata.py)."""
    from gguf import GGUFReader

    reader = GGUFReader(source)
    arch = reader.fields[Keys.General.ARCHITECTURE].contents()
    blocks = reader.fields[f"{arch}.block_count"].contents()
    nextn = reader.fields[f"{arch}.nextn_predict_layers"].contents()
    head = tuple(f"blk.{i}." for i in range(blocks - nextn, blocks))
    writer = GGUFWriter(path, arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in (Keys.General.ARCHITECTURE, f"{arch}.nextn_predict_layers"):
            continue
        value = blocks - nextn if field.name == f"{arch}.block_count" else field.contents()
        sub_type = field.types[-1] if field.types[0] == GGUFValueType.ARRAY else None
        if sub_type is not None and field.name.startswith(f"{arch}.") and len(value) == blocks:
            value = value[: blocks - nextn]
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)
    kept = [t for t in reader.tensors if not t.name.startswith(head)]
    for tensor in kept:
        writer.add_tensor_info(tensor.name, tensor.data.shape, tensor.data.dtype, tensor.data.nbytes, tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in kept:
        writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
    writer.close()
    return Path(path)
