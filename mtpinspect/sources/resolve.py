"""From what the user typed (SOURCE, --revision, --file, --mtp-file) to a file tree and the files to read.

SOURCE is a local GGUF, a local snapshot directory (the Hugging Face cache included), a repo id, or
`REPO:QUANT` as llama.cpp's `-hf` takes it. GGUF names are grouped into split sets
(`-00001-of-00003`), and `mtp-` sidecars are found beside the main file or in an `MTP/` folder.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mtpinspect.errors import SourceError, UsageError
from mtpinspect.sources.filenames import (
    group_splits,
    is_main_gguf,
    is_sidecar,
    is_sidecar_gguf,
    quant_matches,
    quant_tag,
    repo_id_from_cache,
    split_members,
)
from mtpinspect.sources.local import open_directory, open_files
from mtpinspect.sources.reader import ByteMeter, Tree
from mtpinspect.vocabulary import SourceKind

if TYPE_CHECKING:
    from mtpinspect.sources.app_stores import AppModel

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


@dataclass
class Target:
    """What `check` reads: a tree (repo or local folder) and, for GGUF, the main file set and sidecar set."""

    tree: Tree
    kind: SourceKind
    display: str
    repo_id: str | None  # known for Hub repos and HF cache folders: used in the commands we print
    gguf_files: list[str] = field(default_factory=list)
    sidecar_files: list[str] = field(default_factory=list)
    quant: str | None = None
    app: AppModel | None = None  # the model as Ollama or LM Studio keeps it (ollama:, lmstudio: sources)

    @property
    def revision(self) -> str | None:
        return self.tree.sha if self.kind is SourceKind.hub else None

    def file_ref(self, rel: str) -> str:
        """How a command names one of the files: its path locally, its name in the repo on the Hub."""
        return self.tree.ref(rel)


def _complete_split(name: str, present: list[str], first: str) -> list[str]:
    """The whole split set ``first`` starts, matched case-insensitively against ``present``."""
    wanted = split_members(first)
    names = {p.lower(): p for p in present}
    missing = [w for w in wanted if w.lower() not in names]
    if missing:
        raise SourceError(f"{name}: split GGUF is incomplete: {PurePosixPath(missing[0]).name} is missing")
    return [names[w.lower()] for w in wanted]


def _pick_gguf(tree: Tree, label: str, *, file: str | None, quant: str | None) -> list[str]:
    ggufs = [p for p in tree.files if p.lower().endswith(".gguf")]
    mains = [p for p in ggufs if is_main_gguf(p)]
    if file:
        hits = [p for p in ggufs if p == file or PurePosixPath(p).name == file]
        if not hits:
            raise SourceError(f"{label}: no GGUF file named '{file}'")
        return _complete_split(tree.name, list(tree.files), hits[0])
    if quant:
        hits = [p for p in mains if quant_matches(p, quant)]
        if not hits:
            tags = sorted({quant_tag(p) for p in mains} - {None})
            raise SourceError(f"{label}: no GGUF for quantization '{quant}' (available: {', '.join(tags) or 'none'})")
        groups = group_splits(hits)
        return _complete_split(tree.name, list(tree.files), groups[sorted(groups)[0]][0])
    groups = group_splits(mains)
    if len(groups) == 1:
        return _complete_split(tree.name, list(tree.files), next(iter(groups.values()))[0])
    if not groups:
        return []
    tags = sorted({quant_tag(p) or PurePosixPath(p).name for p in mains})
    raise SourceError(f"{label}: {len(groups)} GGUF models in the repo; pick one with {label}:QUANT or --file (e.g. {', '.join(tags[:6])})")


def _pick_sidecar(tree: Tree, mains: list[str], quant: str | None) -> list[str]:
    sidecars = [p for p in tree.files if is_sidecar_gguf(p) and p not in mains]
    if not sidecars:
        return []
    tag = (quant or (quant_tag(mains[0]) if mains else None) or "").upper()
    groups = group_splits(sidecars)
    # Prefer the sidecar of the same quantization, then the one beside the main file.
    main_dir = str(PurePosixPath(mains[0]).parent) if mains else "."

    def rank(key: str) -> tuple[int, int, str]:
        same_quant = bool(tag) and quant_tag(groups[key][0]) == tag
        same_dir = str(PurePosixPath(groups[key][0]).parent) == main_dir
        return (0 if same_quant else 1, 0 if same_dir else 1, key)

    return groups[min(groups, key=rank)]


def resolve(
    source: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    file: str | None = None,
    mtp_file: str | None = None,
    verify_digest: bool = False,
) -> Target:
    from mtpinspect.sources.app_stores import locate  # ollama: and lmstudio: sources

    app = locate(source, revision=revision, file=file, mtp_file=mtp_file, verify_digest=verify_digest)
    if app is not None and app.target is not None:
        return app.target
    path = app.folder if app is not None and app.folder is not None else Path(source).expanduser()
    if path.is_dir():
        tree = open_directory(path, revision=revision)
        target = Target(tree, SourceKind.local_dir, str(path), repo_id_from_cache(path.resolve()),
                        quant=app.quant if app else None)
        target.gguf_files = _pick_gguf(tree, str(path), file=file, quant=target.quant)
    elif path.exists():
        if revision:
            raise UsageError(f"{source}: --revision applies to Hub repos, not to a local file")
        return _resolve_local_file(path, mtp_file)
    elif _looks_like_repo(source):
        from mtpinspect.sources.hub import open_repo  # huggingface_hub only for Hub sources

        repo_id, _, quant = source.partition(":")
        tree = open_repo(repo_id, revision=revision, token=token, endpoint=endpoint)
        target = Target(tree, SourceKind.hub, repo_id, repo_id, quant=quant or None)
        target.gguf_files = _pick_gguf(tree, repo_id, file=file, quant=quant or None)
    else:
        raise SourceError(f"{source}: no such file or directory, and not a Hub repo id (ORG/NAME or ORG/NAME:QUANT)")
    if target.gguf_files:
        if mtp_file:
            target.sidecar_files = _resolve_named_sidecar(target.tree, mtp_file)
        else:
            target.sidecar_files = _pick_sidecar(target.tree, target.gguf_files, target.quant)
    elif mtp_file:
        raise UsageError(f"{source}: --mtp-file applies to GGUF sources")
    return app.relabel(target) if app is not None else target


def _looks_like_repo(text: str) -> bool:
    return bool(_REPO_ID.match(text.partition(":")[0])) and not text.startswith(("/", ".", "~"))


def _resolve_named_sidecar(tree: Tree, name: str) -> list[str]:
    hits = [p for p in tree.files if p == name or PurePosixPath(p).name == name]
    if not hits:
        raise SourceError(f"{name}: no such MTP file in the source")
    return _complete_split(tree.name, list(tree.files), hits[0])


def _resolve_local_file(path: Path, mtp_file: str | None) -> Target:
    main = path.resolve()
    if not main.name.lower().endswith(".gguf"):
        # A lone config.json or safetensors file is read as its folder.
        if main.name.endswith((".json", ".safetensors")):
            tree = open_directory(main.parent)
            return Target(tree, SourceKind.local_dir, str(main.parent), repo_id_from_cache(main.parent))
    siblings = [p for p in main.parent.iterdir() if p.is_file()]
    mains = [main.parent / name for name in _complete_split(str(main), [p.name for p in siblings], main.name)]
    if mtp_file:
        sidecars = [Path(mtp_file).expanduser().resolve()]
    elif is_sidecar(main.name):
        sidecars = []
    else:
        tree = open_files(siblings)
        sidecars = [tree.root / p for p in _pick_sidecar(tree, [m.name for m in mains], None)]
    tree = open_files([*mains, *sidecars])
    return Target(
        tree,
        SourceKind.local_file,
        str(path),
        repo_id_from_cache(main.parent),
        gguf_files=[p.resolve().relative_to(tree.root).as_posix() for p in mains],
        sidecar_files=[p.resolve().relative_to(tree.root).as_posix() for p in sidecars],
    )


def resolve_each_gguf(
    source: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    verify_digest: bool = False,
) -> list[Target]:
    """One target per GGUF model in a repo or folder (a split set counts once, sidecars paired), from one
    listing. The first target's meter carries the listing's cost; each has its own for its headers.
    ``ollama:`` and ``lmstudio:`` sources give one target per model of the app's store."""
    from mtpinspect.sources.app_stores import each_app_target, is_app_source

    if is_app_source(source):
        return each_app_target(source, revision=revision, verify_digest=verify_digest)
    path = Path(source).expanduser()
    if path.is_dir():
        tree: Tree = open_directory(path, revision=revision)
        kind, repo_id = SourceKind.local_dir, repo_id_from_cache(path.resolve())
    elif _looks_like_repo(source) and ":" not in source:
        from mtpinspect.sources.hub import open_repo

        tree = open_repo(source, revision=revision, token=token, endpoint=endpoint)
        kind, repo_id = SourceKind.hub, source
    else:
        raise UsageError(f"{source}: --all takes a Hub repo (ORG/NAME), a folder of GGUF files, ollama: or lmstudio:")
    mains = [p for p in tree.files if is_main_gguf(p)]
    if not mains:
        raise SourceError(f"{source}: no GGUF files")
    targets = []
    for index, (_, group) in enumerate(sorted(group_splits(mains).items())):
        own = tree if index == 0 else _with_own_meter(tree)
        files = _complete_split(own.name, list(own.files), group[0])
        targets.append(Target(own, kind, source, repo_id, gguf_files=files, sidecar_files=_pick_sidecar(own, files, None)))
    return targets


def _with_own_meter(tree: Tree) -> Tree:
    own = copy.copy(tree)
    own.meter = ByteMeter()
    return own
