"""Which mtp- sidecar goes with a main GGUF: by name first, then by header identity.

A folder or repo often holds several models, each with its head in a separate file, so the sidecar is
chosen for the main file, never just the first one found:

1. by name: the file names the main file itself (`mtp-<stem>.gguf`, `<stem>-mtp.gguf`, `MTP/<stem>.gguf`,
   `MTP/mtp-<stem>.gguf`, a split set by its common stem), else the same model in another quantization
   (one head file often serves every quantization of a model);
2. by header identity, when no name relates them: architecture, n_embd, vocabulary size, trunk blocks and
   tokenizer all agree;
3. the one remaining mtp- file, when no other model claims it and no other main file matches its header
   better: paired so that the GGUF rules say why it does not fit (llama.cpp's `-hf` would take it too).

A sidecar whose name belongs to another model of the folder is never taken, whatever its header says.
Headers are read only when no name decides, at most MAX_HEADER_READS of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import PurePosixPath
from typing import Protocol

from mtpinspect.errors import MtpinspectError
from mtpinspect.sources.filenames import NameIndex, gguf_stem, model_stem
from mtpinspect.vocabulary import Pairing

# Reading a header costs one request (up to 2 MiB) on the Hub: enough for every sidecar of a real repo.
MAX_HEADER_READS = 8
# Passed-over sidecars named one by one; past this, one line counts the rest (a repo of 2,000 mtp- files
# would otherwise repeat 2,000 lines in every model's evidence).
MAX_PASSED_LINES = 8
IDENTITY = ("architecture", "n_embd", "vocabulary size", "trunk blocks", "tokenizer")


class HeaderFacts(Protocol):
    """What pairing reads of a GGUF's header (evidence.GgufEvidence has it): declared here, so that pairing,
    which evidence uses, needs nothing back from evidence. Each may raise MtpinspectError on a bad value."""

    @property
    def arch(self) -> str | None: ...
    @property
    def embedding_length(self) -> int | None: ...
    @property
    def vocab_size(self) -> int | None: ...
    @property
    def block_count(self) -> int | None: ...
    @property
    def nextn_layers(self) -> int | None: ...
    @property
    def tokenizer_digest(self) -> str | None: ...


@dataclass(frozen=True)
class SidecarChoice:
    """The sidecar set paired with a main GGUF ([] for none), how, and what was passed over and why."""

    files: list[str]
    pairing: Pairing | None = None
    why: str = ""  # one evidence line: which file was paired and why
    passed_over: tuple[str, ...] = ()  # one line per sidecar left unpaired


def named_sidecar(files: list[str]) -> SidecarChoice:
    """The set the user named with --mtp-file."""
    return SidecarChoice(files, Pairing.given, f"{files[0]}: given with --mtp-file") if files else SidecarChoice([])


def identity(g: HeaderFacts) -> tuple[object, ...]:
    """What tells which model a GGUF belongs to, in the order of IDENTITY."""
    trunk = None if g.block_count is None else g.block_count - (g.nextn_layers or 0)
    return (g.arch, g.embedding_length, g.vocab_size, trunk, g.tokenizer_digest)


def _agreeing(a: tuple[object, ...], b: tuple[object, ...]) -> int:
    return sum(x == y for x, y in zip(a, b))


@dataclass(frozen=True)
class NamePairing:
    """What the file names alone decide for one main GGUF: the pairing (``choice``), or the candidate sets
    whose headers decide it, with what the names already passed over."""

    choice: SidecarChoice | None  # None: the headers decide
    mains: list[str] = field(default_factory=list)
    candidates: dict[str, list[str]] = field(default_factory=dict)  # sidecar sets by key
    unclaimed: list[str] = field(default_factory=list)  # keys of the sets no other model's name claims
    others: Mapping[str, str] = field(default_factory=dict)  # the folder's other models: stem -> a file of each
    passed: tuple[str, ...] = ()

    @property
    def reads(self) -> list[list[str]]:
        """The sidecar sets whose headers the pairing reads: the one paired by name, else the candidates."""
        if self.choice is not None:
            return [self.choice.files] if self.choice.files else []
        return [self.candidates[k] for k in self.unclaimed[:MAX_HEADER_READS]]


class _Others(Mapping[str, str]):
    """The folder's other models (model stem -> a file of each): the listing's, less the model judged. A
    view, not a copy: copying the listing's models for each model judged was quadratic."""

    def __init__(self, models: Mapping[str, str], own: str) -> None:
        self._models, self._own = models, own

    def __getitem__(self, key: str) -> str:
        if key == self._own:
            raise KeyError(key)
        return self._models[key]

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._models if k != self._own)

    def __len__(self) -> int:
        return len(self._models) - (self._own in self._models)


def pair_by_name(names: NameIndex, mains: list[str]) -> NamePairing:
    """The pairing the names give for the main GGUF ``mains`` (its shards) among the listing ``names``
    indexes, or the candidates whose headers must decide it. Costs what this model's names match, not
    the size of the listing."""
    own = set(mains)
    if not names.sidecar_groups:
        return NamePairing(SidecarChoice([]))
    stem = gguf_stem(mains[0])
    model = model_stem(stem)
    candidates = names.sidecar_groups
    others = _Others(names.main_models, model)
    main_dir = PurePosixPath(mains[0]).parent

    def order(key: str) -> tuple[int, str]:
        return (0 if PurePosixPath(candidates[key][0]).parent == main_dir else 1, key)

    def usable(keys: list[str]) -> list[str]:
        return [k for k in keys if not own & set(candidates[k])]  # never the model's own files

    exact = usable(names.by_head.get(stem, []))
    same_model = [k for k in usable(names.by_model.get(model, [])) if k not in exact]
    claimed = (k for k in names.claimed if names.model_of[k] != model)
    passed = [f"{candidates[k][0]}: named for {others[names.model_of[k]]}, another model here"
              for k in islice(claimed, MAX_PASSED_LINES)]
    # Counted, not walked: the listing's claimed files less this model's own.
    more = len(names.claimed) - (len(names.by_model.get(model, [])) if model in names.main_models else 0) - len(passed)
    if more:
        passed.append(f"{more} more mtp- file(s) named for other models here")
    if exact:
        key = min(exact, key=order)
        return NamePairing(_chosen(candidates[key], Pairing.name,
                                   f"{candidates[key][0]}: paired by name (the head file of {mains[0]})", passed))
    if same_model:
        key = min(same_model, key=order)
        return NamePairing(_chosen(candidates[key], Pairing.same_model, f"{candidates[key][0]}: paired by name (the same "
                                   f"model, {model}, in another quantization than {mains[0]})", passed))
    return NamePairing(None, mains, candidates, usable(list(names.unclaimed)), others, tuple(passed))


def choose_sidecar(named: NamePairing, main: HeaderFacts, read: Callable[[list[str]], HeaderFacts]) -> SidecarChoice:
    """The sidecar set for the main GGUF whose names gave ``named`` and whose header is ``main``. ``read``
    reads the headers of a set of files (shards), for the pairings no name decides."""
    if named.choice is not None:
        return named.choice
    return _by_header(named, main, read)


def _by_header(named: NamePairing, main: HeaderFacts, read: Callable[[list[str]], HeaderFacts]) -> SidecarChoice:
    candidates, mains, others, passed = named.candidates, named.mains, named.others, list(named.passed)
    unclaimed = named.unclaimed
    try:
        ours = identity(main)
    except MtpinspectError:
        return SidecarChoice([], passed_over=tuple(passed))
    scores: dict[str, int] = {}
    for key in unclaimed[:MAX_HEADER_READS]:
        try:
            scores[key] = _agreeing(ours, identity(read(candidates[key])))
        except MtpinspectError as exc:
            passed.append(f"{candidates[key][0]}: not paired, its header cannot be read ({exc})")
    if len(unclaimed) > MAX_HEADER_READS:
        passed.append(f"{len(unclaimed) - MAX_HEADER_READS} more unnamed mtp- file(s) not paired: more than "
                      f"{MAX_HEADER_READS} unnamed mtp- files ({candidates[unclaimed[MAX_HEADER_READS]][0]}, ...)")
    full = [k for k, score in scores.items() if score == len(IDENTITY)]
    if full:
        return _chosen(candidates[full[0]], Pairing.header, f"{candidates[full[0]][0]}: paired by header identity "
                       f"({', '.join(IDENTITY)} agree with {mains[0]}); its name does not say", passed)
    if len(scores) == 1:
        (key, score), = scores.items()
        better = _better_main(candidates[key], score, others, read)
        if better is None:
            return _chosen(candidates[key], Pairing.only, f"{candidates[key][0]}: the only mtp- file no other model "
                           f"claims; neither its name nor its header matches {mains[0]}", passed)
        passed.append(f"{candidates[key][0]}: not paired, its header matches {better} better")
    else:
        passed += [f"{candidates[k][0]}: not paired, neither its name nor its header matches {mains[0]}" for k in scores]
    return SidecarChoice([], passed_over=tuple(passed))


def _better_main(sidecar: list[str], score: int, others: Mapping[str, str], read: Callable[[list[str]], HeaderFacts]) -> str | None:
    """Another main file whose header agrees with the sidecar's on more fields than ours does, if any."""
    try:
        theirs = identity(read(sidecar))
    except MtpinspectError:
        return None
    for first in islice(others.values(), MAX_HEADER_READS):
        try:
            if _agreeing(identity(read([first])), theirs) > score:
                return first
        except MtpinspectError:
            continue  # a broken neighbour claims nothing
    return None


def _chosen(files: list[str], pairing: Pairing, why: str, passed: list[str]) -> SidecarChoice:
    return SidecarChoice(files, pairing, why, tuple(line for line in passed if not line.startswith(files[0] + ":")))
