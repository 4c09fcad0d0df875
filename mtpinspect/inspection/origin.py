"""Who made a checkpoint: its maker, a first-party quantizer, a third party, or nobody can tell.

A maker's own FP8 release serves its head in FP8; a third party's quantization that does not exclude the
head is the 0%-acceptance trap; a config that announces MTP over missing weights was never published by a
maker, or dropped by a derivative. The signals, strongest first; the first that tells decides, and every
one looked at is a line of evidence:

1. The model card (the Hub's cardData, else README.md's front matter). `quantized_by` names the quantizer.
   A declared `base_model_relation: quantized` makes the repo a quantization of `base_model` by whoever
   published it: on the Hub that is the repo's org (an org cannot be borrowed there); anywhere else it is an
   unnamed third party, whatever the folder is called. A base model outside the makers' orgs makes any
   checkpoint of it a derivative.
2. Where the files came from: the Hub repo id; an HF cache folder `models--ORG--NAME`; config.json
   `_name_or_path`, the repo the weights were loaded from before they were saved (a derivative keeps its
   base's name there, so a maker's name there proves nothing, another org's name makes a derivative). The
   `hf download --local-dir` records say the folder is a Hub download at a commit, but not of which repo.
3. The quantization format: a family's maker-native block FP8 (HF fine-grained fp8, e4m3, 128x128 blocks,
   the family's own modules_to_not_convert convention, no producer stamp) is the maker's format. Third
   parties can write it too, which is why it comes last; compressed-tensors, ModelOpt, AWQ, GPTQ and the
   rest say nothing about who ran them (makers use them too).
4. Unknown, naming the signals that were missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtpinspect.formats.card import CARD_FILE
from mtpinspect.inspection.evidence import Evidence
from mtpinspect.inspection.support import FIRST_PARTY_QUANTIZERS, MAKER_FP8, MAKERS
from mtpinspect.sources.filenames import is_repo_id
from mtpinspect.sources.provenance import DOWNLOAD_METADATA, LocalDownload
from mtpinspect.vocabulary import OriginKind, OriginSignal, SourceKind

_NATIVE_FP8_FMT = frozenset({None, "e4m3", "float8_e4m3fn"})
_FP8_SCALES = (".weight_scale_inv", ".scale")  # HF fine-grained FP8; DeepSeek-V4's F8_E8M0 block scales
_MAKERS = frozenset(m.lower() for m in MAKERS)
_FIRST_PARTY = frozenset(q.lower() for q in FIRST_PARTY_QUANTIZERS)


@dataclass(frozen=True)
class Origin:
    kind: OriginKind
    who: str | None  # the org or person judged to have made it; None when no signal names one
    decided_by: OriginSignal | None  # None: unknown
    evidence: tuple[str, ...]  # one line per signal looked at, the deciding one first
    missing: tuple[str, ...] = ()  # the signals that were not there (said when the origin is unknown)

    @property
    def is_maker(self) -> bool:
        return self.kind is OriginKind.maker

    def phrase(self) -> str:
        """Who quantized it, as findings name it: 'the maker (deepseek-ai)', 'a third-party quantization (bartowski)'."""
        name = f" ({self.who})" if self.who else ""
        return {
            OriginKind.maker: f"the maker{name}",
            OriginKind.first_party_quantizer: f"the first-party quantizer {self.who}",
            OriginKind.third_party: f"a third-party quantization{name}",
            OriginKind.unknown: "a quantizer of unknown origin",
        }[self.kind]

    def lines(self) -> list[str]:
        """The evidence lines a finding carries: the judgement, every signal looked at, what was missing."""
        if self.kind is OriginKind.unknown:
            head = "origin unknown: no signal tells who made this checkpoint"
        else:
            head = f"origin: {self.kind}" + (f" ({self.who})" if self.who else "") + f", decided by the {self.decided_by}"
        return [head, *self.evidence, *(["missing: " + "; ".join(self.missing)] if self.missing else [])]


def org_of(repo_id: str | None) -> str | None:
    return repo_id.split("/", 1)[0] if repo_id and "/" in repo_id else None


def _by_org(org: str, base_org: str | None = None) -> OriginKind:
    """An org or person that made a checkpoint, against the org of the model it was made from (if known).
    Hub org names are case-insensitive."""
    lower = org.lower()
    if base_org is not None and lower == base_org.lower():
        return OriginKind.maker
    if lower in _FIRST_PARTY:
        return OriginKind.first_party_quantizer
    if base_org is None and lower in _MAKERS:
        return OriginKind.maker
    return OriginKind.third_party


def judge_origin(ev: Evidence) -> Origin:
    """Who made the checkpoint, from the strongest signal that tells (see the module docstring)."""
    card, where = ev.card, _Whereabouts.of(ev)
    base_org = org_of(card.base_models[0]) if card and card.base_models else None
    looked = [*(card.lines() if card else []), *where.lines()]

    def decided(kind: OriginKind, who: str | None, signal: OriginSignal, line: str) -> Origin:
        return Origin(kind, who, signal, (line, *(s for s in looked if s != line)))

    # 1. the model card
    if card is not None and card.says_anything:
        base = f" of {card.base_models[0]}" if card.base_models else ""
        if card.quantized_by:
            return decided(_by_org(card.quantized_by, base_org), card.quantized_by, OriginSignal.card,
                           f"{card.source}: quantized_by: {card.quantized_by}{base}")
        if card.relation == "quantized":
            line = f"{card.source}: base_model_relation: quantized{base}: a quantization published as a derivative"
            if where.hub_org:
                return decided(_by_org(where.hub_org, base_org), where.hub_org, OriginSignal.card, line)
            return decided(OriginKind.third_party, None, OriginSignal.card,
                           f"{line}, by someone it does not name (a local name does not outweigh it)")
        if base_org is not None and _by_org(base_org) is OriginKind.third_party:
            return decided(OriginKind.third_party, None, OriginSignal.card,
                           f"{card.source}: base_model {card.base_models[0]} is not a maker's model: a derivative")

    # 2. where the files came from
    if where.hub_org:
        return decided(_by_org(where.hub_org, base_org), where.hub_org, OriginSignal.hub_repo, where.hub_line)
    if where.cache_org:
        return decided(_by_org(where.cache_org, base_org), where.cache_org, OriginSignal.cache_folder, where.cache_line)
    if where.name_org and _by_org(where.name_org) is not OriginKind.maker:
        return decided(_by_org(where.name_org, base_org), where.name_org, OriginSignal.name_or_path, where.name_line)

    # 3. the quantization format
    maker, why = _maker_format(ev)
    if maker is not None:
        return decided(OriginKind.maker, maker, OriginSignal.format, why)
    if card is None:
        missing = [ev.card_problem or f"no model card ({CARD_FILE})"]
    elif not card.says_anything:
        missing = [f"the model card ({card.source}) names no base_model, base_model_relation or quantized_by"]
    else:
        missing = []
    missing += [*where.missing(), why]
    return Origin(OriginKind.unknown, None, None, tuple(looked), tuple(missing))


@dataclass(frozen=True)
class _Whereabouts:
    """Where the files came from, each signal with its evidence line."""

    hub_org: str | None
    hub_line: str
    cache_org: str | None
    cache_line: str
    download: LocalDownload | None
    name_org: str | None
    name_line: str

    @classmethod
    def of(cls, ev: Evidence) -> _Whereabouts:
        t = ev.target
        org = org_of(t.repo_id)
        hub = t.kind is SourceKind.hub
        snapshot = f", snapshot {t.tree.sha}" if t.tree.sha else ""
        name = ev.config.raw.get("_name_or_path") if ev.config else None
        name = name if isinstance(name, str) and is_repo_id(name) else None
        name_org = org_of(name)
        if name_org and _by_org(name_org) is OriginKind.maker:
            name_line = f"{ev.config_file}: _name_or_path {name}: the maker's repo, or a derivative made from it (derivatives keep the name)"
        else:
            name_line = f"{ev.config_file}: _name_or_path {name}: saved from {name_org}'s checkpoint, not a maker's"
        return cls(
            hub_org=org if hub else None,
            hub_line=f"Hub repo {t.repo_id}: published by {org}",
            cache_org=None if hub else org,
            cache_line=f"HF cache folder models--{(t.repo_id or '').replace('/', '--')}{snapshot}: downloaded from {t.repo_id}",
            download=ev.download,
            name_org=name_org,
            name_line=name_line,
        )

    def lines(self) -> list[str]:
        return [
            *([self.hub_line] if self.hub_org else []),
            *([self.cache_line] if self.cache_org else []),
            *([self.download.line()] if self.download else []),
            *([self.name_line] if self.name_org else []),
        ]

    def missing(self) -> list[str]:
        return [
            *([] if self.hub_org or self.cache_org else ["no repo id (not a Hub repo, not an HF cache folder models--ORG--NAME)"]),
            *([] if self.download else [f"no `hf download --local-dir` records ({DOWNLOAD_METADATA.as_posix()})"]),
            *([] if self.name_org else ["no repo id in config.json _name_or_path"]),
        ]


def _maker_format(ev: Evidence) -> tuple[str | None, str]:
    """(the maker, why) when the quantization is the family's maker-native block FP8; (None, why not) otherwise."""
    q, cfg, ck = ev.quant, ev.config, ev.checkpoint
    if q is None:
        return None, "no quantization config to judge the format by"
    described = f"{q.source}: {q.method}" + (f"/{q.algo}" if q.algo else "")
    mt = cfg.model_type if cfg else None
    family = MAKER_FP8.get(mt or "")
    if family is None:
        return None, f"{described}: model_type {mt!r} has no maker-native FP8 release we know of"
    if q.method != "fp8" or q.producer or q.algo not in _NATIVE_FP8_FMT or q.block_size != (128, 128):
        block = "" if q.method != "fp8" else f", {'x'.join(map(str, q.block_size))} blocks" if q.block_size else ", not block-wise"
        stamp = f", written by {q.producer}" if q.producer else ""
        return None, f"{described}{block}{stamp}: not {family.maker}'s own FP8 layout (fp8, e4m3, 128x128 blocks)"
    if family.lists_modules != bool(q.exclusions) or any(c in e for e in q.exclusions for c in "*?[") or any(e.startswith("re:") for e in q.exclusions):
        convention = "a modules_to_not_convert list of module names" if family.lists_modules else "no modules_to_not_convert list"
        return None, f"{described}: {family.maker}'s own FP8 releases of {mt} carry {convention}, this one {len(q.exclusions)} entries"
    dtypes = ck.mtp_dtypes if ck else {}
    fp8 = [n for n, d in dtypes.items() if d and d.upper().startswith("F8_E4M3") and n.endswith(".weight")]
    names = ck.weight_map.keys() if ck else ()
    unscaled = [n for n in fp8 if not any(n[: -len(".weight")] + s in names for s in _FP8_SCALES)]
    if not fp8 or unscaled:
        return None, f"{described}: the MTP weights are not F8_E4M3 with block scales beside them" + (f" ({unscaled[0]})" if unscaled else "")
    listed = f", {len(q.exclusions)} modules_to_not_convert names" if q.exclusions else ", no modules_to_not_convert"
    return family.maker, (f"format: {described}, 128x128 blocks{listed}, {len(fp8)} MTP weights F8_E4M3 with block scales: "
                          f"{family.maker}'s own FP8 layout for {mt}")
