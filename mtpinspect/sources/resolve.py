"""From what the user typed (SOURCE, --revision, --file, --mtp-file) to a file tree and the files to read.

SOURCE is a local GGUF, a local snapshot directory (the Hugging Face cache included), a repo id, or
`REPO:QUANT` as llama.cpp's `-hf` takes it. GGUF names are grouped into split sets
(`-00001-of-00003`). A local GGUF is read with the other GGUF files of the folder the user named (and
its `MTP/` subfolder), never the folder a symlink points into. Which `mtp-` sidecar pairs with the main
file is decided once its header is read (inspection/pairing.py), unless --mtp-file names it.
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mtpinspect.errors import SourceError, UsageError
from mtpinspect.sources.filenames import (
    NameIndex,
    group_splits,
    is_app_source,
    is_repo_id,
    main_ggufs,
    quant_matches,
    quant_tag,
    repo_id_from_cache,
    sidecar_ggufs,
    split_members,
)
from mtpinspect.sources.local import open_directory, open_gguf_folder
from mtpinspect.sources.policy import Clock, FetchPolicy
from mtpinspect.sources.reader import ByteMeter, Tree
from mtpinspect.sources.target import AppModel, Target
from mtpinspect.vocabulary import SourceKind

if TYPE_CHECKING:
    from mtpinspect.sources.app_stores import AppLocation
    from mtpinspect.sources.hub import ListedMain

__all__ = ["AppFiles", "Target", "app_files", "resolve", "resolve_each_gguf"]

def _complete_split(name: str, names: Mapping[str, str], first: str) -> list[str]:
    """The whole split set ``first`` starts, matched case-insensitively against the listing (``names``: lower-cased
    name -> name, NameIndex.lower, made once per listing)."""
    wanted = split_members(first)
    missing = [w for w in wanted if w.lower() not in names]
    if missing:
        raise SourceError(f"{name}: split GGUF is incomplete: {PurePosixPath(missing[0]).name} is missing")
    return [names[w.lower()] for w in wanted]


def _lowered(files: Iterable[str]) -> dict[str, str]:
    """Lower-cased name -> name, for one look-up (a listing judged model by model uses NameIndex.lower)."""
    return {p.lower(): p for p in files}


def _pick_gguf(tree: Tree, label: str, *, file: str | None, quant: str | None) -> list[str]:
    ggufs = [p for p in tree.files if p.lower().endswith(".gguf")]
    mains = main_ggufs(ggufs)
    if file:
        hits = [p for p in ggufs if p == file or PurePosixPath(p).name == file]
        if not hits:
            raise SourceError(f"{label}: no GGUF file named '{file}'")
        return _complete_split(tree.name, _lowered(tree.files), hits[0])
    if quant:
        hits = [p for p in mains if quant_matches(p, quant)]
        if not hits:
            tags = sorted({quant_tag(p) for p in mains} - {None})
            raise SourceError(f"{label}: no GGUF for quantization '{quant}' (available: {', '.join(tags) or 'none'})")
        groups = group_splits(hits)
        return _complete_split(tree.name, _lowered(tree.files), groups[sorted(groups)[0]][0])
    groups = group_splits(mains)
    if len(groups) == 1:
        return _complete_split(tree.name, _lowered(tree.files), next(iter(groups.values()))[0])
    if not groups:
        return []
    tags = sorted({quant_tag(p) or PurePosixPath(p).name for p in mains})
    raise SourceError(f"{label}: {len(groups)} GGUF models in the repo; pick one with {label}:QUANT or --file (e.g. {', '.join(tags[:6])})")


def resolve(
    source: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    file: str | None = None,
    mtp_file: str | None = None,
    verify_digest: bool = False,
    policy: FetchPolicy | None = None,
) -> Target:
    app = None
    if is_app_source(source):
        from mtpinspect.sources.app_stores import locate  # the apps' readers only for their SOURCEs

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
    elif os.path.islink(path):
        raise SourceError(_broken_link(source, path))
    elif _looks_like_repo(source):
        from mtpinspect.sources.hub import open_repo  # huggingface_hub only for Hub sources

        repo_id, _, quant = source.partition(":")
        tree = open_repo(repo_id, revision=revision, token=token, endpoint=endpoint, policy=policy)
        target = Target(tree, SourceKind.hub, repo_id, repo_id, quant=quant or None)
        target.gguf_files = _pick_gguf(tree, repo_id, file=file, quant=quant or None)
    else:
        raise SourceError(f"{source}: no such file or directory, and not a Hub repo id (ORG/NAME or ORG/NAME:QUANT)")
    if target.gguf_files:
        if mtp_file:
            target.sidecar_files = _resolve_named_sidecar(target.tree, mtp_file)
        elif set(target.gguf_files) & set(sidecar_ggufs(target.tree.files)):
            target.sidecar_files = []
    elif mtp_file:
        raise UsageError(f"{source}: --mtp-file applies to GGUF sources")
    return app.relabel(target) if app is not None else target


def _broken_link(source: str, path: Path) -> str:
    """What a symbolic link that leads nowhere (a missing target, a loop) is, said before any Hub request."""
    try:
        os.stat(path)
    except OSError as exc:
        why = "a loop of links" if exc.errno == errno.ELOOP else f"{os.readlink(path)} does not exist"
    else:
        why = "it cannot be followed"
    return f"{source}: broken symbolic link ({why})"


def _looks_like_repo(text: str) -> bool:
    return is_repo_id(text.partition(":")[0]) and not text.startswith(("/", ".", "~"))


def _resolve_named_sidecar(tree: Tree, name: str) -> list[str]:
    hits = [p for p in tree.files if p == name or PurePosixPath(p).name == name]
    if not hits:
        raise SourceError(f"{name}: no such MTP file in the source")
    return _complete_split(tree.name, _lowered(tree.files), hits[0])


def _resolve_local_file(path: Path, mtp_file: str | None) -> Target:
    if path.name.endswith((".json", ".safetensors")):
        # A lone config.json or safetensors file is read as its folder.
        tree = open_directory(path.parent)
        return Target(tree, SourceKind.local_dir, str(path.parent), repo_id_from_cache(_absolute(path.parent)))
    if not path.is_file():
        raise SourceError(f"{path}: not a regular file")
    # The folder as the user named it: in a Hugging Face cache snapshot each file is a symlink into blobs/,
    # and the shards and sidecars are beside the link, not beside the blob.
    tree = open_gguf_folder(path.parent)
    name = path.name
    if name not in tree.files:
        name = tree.add(path)  # not named .gguf: read as one anyway, and refused if it is not
    target = Target(tree, SourceKind.local_file, str(path), repo_id_from_cache(_absolute(path.parent)))
    target.gguf_files = _complete_split(str(path), _lowered(tree.files), name)
    if mtp_file:
        key = tree.add(Path(mtp_file).expanduser())
        target.sidecar_files = _complete_split(mtp_file, _lowered(tree.files), key) if "/" not in key else [key]
    elif name in sidecar_ggufs(tree.files):
        target.sidecar_files = []
    return target


def _absolute(path: Path) -> Path:
    """The path made absolute without resolving symlinks (a cache snapshot stays inside models--ORG--NAME)."""
    return Path(os.path.abspath(path))


def resolve_each_gguf(
    source: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    verify_digest: bool = False,
    policy: FetchPolicy | None = None,
) -> list[Target]:
    """One target per GGUF model in a repo or folder (a split set counts once, sidecars paired), from one
    listing. The first target's meter carries the listing's cost; each has its own for its headers.
    ``ollama:`` and ``lmstudio:`` sources give one target per model of the app's store."""
    if is_app_source(source):
        from mtpinspect.sources.app_stores import each_app_target

        found = each_app_target(source, revision=revision, verify_digest=verify_digest)
        return [t for item in found for t in ([item] if isinstance(item, Target) else _folder_targets(item))]
    path = Path(source).expanduser()
    if os.path.islink(path) and not path.exists():
        raise SourceError(_broken_link(source, path))
    if path.is_dir():
        tree: Tree = open_directory(path, revision=revision)
        kind, repo_id = SourceKind.local_dir, repo_id_from_cache(path.resolve())
    elif _looks_like_repo(source) and ":" not in source:
        from mtpinspect.sources.hub import open_repo

        tree = open_repo(source, revision=revision, token=token, endpoint=endpoint, policy=policy)
        kind, repo_id = SourceKind.hub, source
    else:
        raise UsageError(f"{source}: --all takes a Hub repo (ORG/NAME), a folder of GGUF files, ollama: or lmstudio:")
    names = NameIndex.of(tree.files)
    if not names.mains:
        raise SourceError(f"{source}: no GGUF files")
    targets = []
    for index, (_, group) in enumerate(sorted(group_splits(list(names.mains)).items())):
        own = tree if index == 0 else _with_own_meter(tree)
        target = Target(own, kind, source, repo_id, gguf_files=group, name_index=names)
        try:
            target.gguf_files = _complete_split(own.name, names.lower, group[0])
        except SourceError as exc:
            target.unreadable = str(exc)
        targets.append(target)
    return targets


def hub_targets(
    repo_id: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    policy: FetchPolicy | None = None,
    clock: Clock | None = None,
    listed: ListedMain | None = None,
) -> list[Target]:
    """What `check` reads in a Hub repo, from one listing: one target per GGUF model (as `check --all` has
    them, each with its own meter and wave gate, so they can be read at the same time), or the one
    checkpoint target `check ORG/NAME` reads when the repo has no GGUF model. ``clock``: the budget shared
    with a larger command (find); ``listed``: what its search said of the repo's main (the listing may come
    from the header cache, sources/hub.py open_repo)."""
    from mtpinspect.sources.hub import gated_error, open_repo, refused_without_asking
    from mtpinspect.sources.waves import Waves

    tree = open_repo(repo_id, token=token, endpoint=endpoint, policy=policy, clock=clock, listed=listed)
    names = NameIndex.of(tree.files)

    def refused(first: str) -> str | None:
        # A target whose first read can only be refused fails as that read would, without sending it.
        return gated_error(repo_id) if refused_without_asking(tree, first) else None

    if not names.mains:
        return [Target(tree, SourceKind.hub, repo_id, repo_id, name_index=names, unreadable=refused("config.json"))]
    targets = []
    for index, (_, group) in enumerate(sorted(group_splits(list(names.mains)).items())):
        # The first target carries the listing's cost, as in resolve_each_gguf.
        own = tree if index == 0 else dataclasses.replace(tree, meter=ByteMeter(), waves=Waves())
        target = Target(own, SourceKind.hub, repo_id, repo_id, gguf_files=group, name_index=names,
                        unreadable=refused(group[0]))
        try:
            target.gguf_files = _complete_split(repo_id, names.lower, group[0])
        except SourceError as exc:
            target.unreadable = target.unreadable or str(exc)
        targets.append(target)
    return targets


def _with_own_meter(tree: Tree) -> Tree:
    own = copy.copy(tree)
    own.meter = ByteMeter()
    return own


def _folder_targets(location: AppLocation) -> list[Target]:
    """Every GGUF of an LM Studio repo folder, named as LM Studio names it."""
    assert location.folder is not None
    return [location.relabel(t) for t in resolve_each_gguf(str(location.folder))]


@dataclass(frozen=True)
class AppFiles:
    """The files an app runs for a model: what `sweep` and `diagnose` hand to llama-server."""

    model: Path
    sidecar: Path | None  # Ollama's DRAFT blob, or the mtp- file beside an LM Studio GGUF
    app: AppModel


def app_files(source: str) -> AppFiles:
    """The GGUF (and drafter) of an ``ollama:`` or ``lmstudio:`` SOURCE."""
    target = resolve(source)
    if not target.gguf_files or target.app is None:
        raise SourceError(f"{source}: no GGUF model there to run" + (
            " (an MLX model: Ollama runs it on its MLX engine, not llama-server)" if target.app is not None else ""))
    sidecar = Path(target.file_ref(target.sidecar_files[0])) if target.sidecar_files else None
    return AppFiles(Path(target.file_ref(target.gguf_files[0])), sidecar, target.app)
