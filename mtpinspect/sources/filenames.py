"""What file names say: GGUF split sets, quantization tags, `mtp-` sidecars and the model each one names,
the main GGUF of a folder, a separate MTP safetensors file, Hugging Face cache folders, repo ids and the
prefixes of the apps' SOURCEs.

Names are paths relative to a tree's root, '/'-separated (as in a repo listing). Every rule that reads
meaning out of a file or folder name lives here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
_QUANT = r"(?:IQ|Q|TQ)\d[\w]*?|BF16|F16|F32|MXFP4(?:_MOE)?"
_QUANT_TAG = re.compile(rf"(?i)(?:^|[-_.])({_QUANT})(?:-\d{{5}}-of-\d{{5}})?\.gguf$")
# Unsloth's dynamic quantizations put UD- before the tag: Model-UD-Q4_K_XL.gguf is Model's too.
_STEM_QUANT_TAG = re.compile(rf"(?i)[-_.](?:UD[-_])?(?:{_QUANT})$")
# convert_hf_to_gguf.py names the head file mtp-<name>.gguf; some uploads use <name>-mtp.gguf.
SIDECAR_PREFIX = "mtp-"
SIDECAR_SUFFIX = "-mtp"
# The files beside config.json that may hold a checkpoint's quantization config (formats/quantization.py):
# ModelOpt's, and the legacy side files of AutoGPTQ, AutoAWQ and others, read when config.json has none.
QUANT_SIDE_FILES = ("quantize_config.json", "quant_config.json", "quantization_config.json")
QUANT_FILES = ("hf_quant_config.json", *QUANT_SIDE_FILES)
# huggingface_hub's cache keeps a repo in models--ORG--NAME/{refs,snapshots,blobs}.
HF_CACHE_FOLDER = re.compile(r"^models--(?P<org>[^/]+?)--(?P<name>[^/]+)$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def sidecar_path(path: Path) -> Path:
    """Where the MTP sidecar of a main file goes: mtp-<name> beside it (convert_hf_to_gguf's naming)."""
    return path.with_name(f"{SIDECAR_PREFIX}{path.name}")


def is_gguf(path: str) -> bool:
    return path.lower().endswith(".gguf")


def is_sidecar(path: str) -> bool:
    """An MTP head file: `mtp-*.gguf`, or any file in an `MTP/` folder (as llama.cpp's -hf looks for it)."""
    p = PurePosixPath(path)
    return p.name.lower().startswith("mtp-") or any(part.lower() == "mtp" for part in p.parts[:-1])


def is_main_gguf(path: str) -> bool:
    """A GGUF that holds a model: not an MTP sidecar, not a vision projector (mmproj)."""
    return is_gguf(path) and not is_sidecar(path) and "mmproj" not in path.lower()


def sidecar_ggufs(paths: Iterable[str]) -> list[str]:
    """The MTP head files among ``paths``: `mtp-*` and `MTP/` files, and `<stem>-mtp.gguf` beside `<stem>.gguf`
    (alone, such a name may be a model with its head bundled, so it counts only when its model is there)."""
    ggufs = [p for p in paths if is_gguf(p)]
    stems = {gguf_stem(p) for p in ggufs}
    return [p for p in ggufs if is_sidecar(p) or _suffixed_head(gguf_stem(p)) in stems]


def main_ggufs(paths: Iterable[str]) -> list[str]:
    """The GGUF models among ``paths``: neither MTP head files (see sidecar_ggufs) nor mmproj projectors."""
    paths = list(paths)
    heads = set(sidecar_ggufs(paths))
    return [p for p in paths if is_main_gguf(p) and p not in heads]


@dataclass(frozen=True)
class NameIndex:
    """What the names of one listing say, worked out once for every model of it. `check --all` and `find`
    judge a repo model by model; a rule that walked the whole listing for each model made a repo of 2,000
    GGUF files cost 4,000,000 name parses (46 s), so each rule below reads these maps instead."""

    sidecars: tuple[str, ...]  # sidecar_ggufs of the listing, in listing order
    mains: tuple[str, ...]  # main_ggufs of the listing, in listing order
    lower: dict[str, str]  # lower-cased name -> the name as listed (split sets are matched case-insensitively)
    sidecar_groups: dict[str, list[str]]  # group_splits(sidecars)
    by_head: dict[str, list[str]]  # head_stem -> keys of sidecar_groups naming that model file
    by_model: dict[str, list[str]]  # model_stem(head_stem) -> keys of sidecar_groups
    main_models: dict[str, str]  # the models among the mains: model stem -> a file of each
    model_of: dict[str, str]  # key of sidecar_groups -> model_stem(head_stem(key)), parsed once
    claimed: tuple[str, ...]  # keys of sidecar_groups whose model is among main_models, sorted
    unclaimed: tuple[str, ...]  # the other keys, sorted

    @classmethod
    def of(cls, paths: Iterable[str]) -> NameIndex:
        paths = list(paths)
        sidecars = sidecar_ggufs(paths)
        heads = set(sidecars)
        mains = [p for p in paths if is_main_gguf(p) and p not in heads]
        groups = group_splits(sidecars)
        by_head: dict[str, list[str]] = {}
        by_model: dict[str, list[str]] = {}
        model_of: dict[str, str] = {}
        for key in groups:
            head = head_stem(key)
            model_of[key] = model_stem(head)
            by_head.setdefault(head, []).append(key)
            by_model.setdefault(model_of[key], []).append(key)
        main_models = {model_stem(gguf_stem(group[0])): group[0] for group in group_splits(mains).values()}
        claimed = sorted(k for k in groups if model_of[k] in main_models)
        unclaimed = sorted(k for k in groups if model_of[k] not in main_models)
        return cls(tuple(sidecars), tuple(mains), {p.lower(): p for p in paths}, groups, by_head, by_model,
                   main_models, model_of, tuple(claimed), tuple(unclaimed))


def _suffixed_head(stem: str) -> str | None:
    return stem[: -len(SIDECAR_SUFFIX)] if stem.endswith(SIDECAR_SUFFIX) else None


def gguf_stem(path: str) -> str:
    """'model-q4_k_m' for 'dir/Model-Q4_K_M-00001-of-00002.gguf': the name without folder, shard number and
    extension, lower-cased (names are compared as llama.cpp's -hf compares quantization tags)."""
    name = PurePosixPath(path).name
    split = _SPLIT.search(name)
    stem = name[: split.start()] if split else name[: -len(".gguf")] if is_gguf(name) else name
    return stem.lower()


def head_stem(sidecar: str) -> str:
    """The stem of the model an MTP head file names: 'model-q8_0' for 'mtp-Model-Q8_0.gguf',
    'Model-Q8_0-mtp.gguf', 'MTP/Model-Q8_0.gguf' or 'mtp-Model-Q8_0-00001-of-00002.gguf'."""
    stem = gguf_stem(sidecar)
    if stem.startswith(SIDECAR_PREFIX):
        return stem[len(SIDECAR_PREFIX) :]
    return _suffixed_head(stem) or stem


def model_stem(stem: str) -> str:
    """A stem without its quantization tag: 'model' for 'model-q4_k_m' (the model, whatever its quantization)."""
    return _STEM_QUANT_TAG.sub("", stem)


def is_mtp_safetensors(path: str) -> bool:
    """A separate safetensors file for the MTP head (GLM-4.7's mtp.safetensors)."""
    name = PurePosixPath(path).name.lower()
    return name.endswith(".safetensors") and ("mtp" in name or "nextn" in name)


def split_group(path: str) -> tuple[str, int, int] | None:
    """('model', 1, 3) for 'model-00001-of-00003.gguf'; None for a single-file GGUF."""
    m = _SPLIT.search(path)
    return (path[: m.start()], int(m.group(1)), int(m.group(2))) if m else None


def split_members(path: str) -> list[str]:
    """Every shard of the split set ``path`` belongs to, in order; [path] for a single file."""
    group = split_group(path)
    if group is None:
        return [path]
    stem, _, total = group
    return [f"{stem}-{i:05d}-of-{total:05d}.gguf" for i in range(1, total + 1)]


def group_splits(paths: list[str]) -> dict[str, list[str]]:
    """GGUF files by model: split shards together, ordered by shard number."""
    groups: dict[str, list[str]] = {}
    for p in sorted(paths):
        group = split_group(p)
        groups.setdefault(group[0] if group else p, []).append(p)
    return groups


def quant_tag(path: str) -> str | None:
    """'Q4_K_M' for 'Model-Q4_K_M.gguf' or 'Model-Q4_K_M-00001-of-00002.gguf'."""
    m = _QUANT_TAG.search(PurePosixPath(path).name)
    return m.group(1).upper() if m else None


def quant_matches(path: str, quant: str) -> bool:
    """Does the file name carry this quantization (as `-hf REPO:QUANT` picks a file)?"""
    name = PurePosixPath(path).name.lower()
    return re.search(rf"(^|[-_.]){re.escape(quant.lower())}([-_.]|$)", name) is not None


# SOURCEs that name a model the way a desktop app does (sources/app_stores.py reads them).
OLLAMA_PREFIX = "ollama:"
LM_STUDIO_PREFIX = "lmstudio:"


def is_app_source(source: str) -> bool:
    return source.startswith((OLLAMA_PREFIX, LM_STUDIO_PREFIX))


def is_repo_id(text: str) -> bool:
    """ORG/NAME as the Hub spells repo ids (not a path: './x/y' and '/x/y' are not)."""
    return bool(_REPO_ID.fullmatch(text))  # not match: its $ lets a trailing newline through


def repo_id_problem(text: str) -> str | None:
    """Why ``text`` cannot be a Hub repo id, or None: the one rule for check, find and the rows of a model
    search. This project's shape (ORG/NAME: a bare name is a path or a typo here), then huggingface_hub's
    own validate_repo_id (no '--' or '..', no '-' or '.' first or last, at most 96 characters, no '.git'),
    which also keeps '..' out of a URL path (the client would normalise `a/..` into another endpoint)."""
    if not is_repo_id(text):
        return "not a Hub repo id (ORG/NAME)"
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(text)
    except HFValidationError as exc:
        # huggingface_hub's message ends by quoting the id, which the line already names first.
        why = str(exc).split(f": '{text}'")[0].splitlines()[0][:200].rstrip(".")
        return f"not a valid Hub repo id ({why})"
    return None


def repo_id_error(text: str) -> str | None:
    """The one line that refuses ``text`` as a repo id (the id cut to 100 characters), or None."""
    problem = repo_id_problem(text)
    if problem is None:
        return None
    name = text if len(text) <= 100 else f"{text[:100]}... ({len(text):,} characters)"
    return f"{name!r}: {problem}" if any(not c.isprintable() for c in name) else f"{name}: {problem}"


def repo_id_from_cache(path: Path) -> str | None:
    """ORG/NAME when ``path`` is, or lies inside, a Hugging Face cache folder models--ORG--NAME."""
    for part in (path, *path.parents):
        m = HF_CACHE_FOLDER.match(part.name)
        if m:
            return f"{m.group('org')}/{m.group('name')}"
    return None


def names_mtp(name: str) -> bool:
    """Does a model or tag name announce MTP ('qwen3.6:27b-mtp-q4_K_M', 'model-MTP')?"""
    return re.search(r"(^|[-_.:/])mtp([-_.:/]|$)", name.lower()) is not None
