"""The engine's own word: ask the pinned llama.cpp whether llama-server would start this GGUF with its
MTP head, and what it would allocate, before anything is downloaded.

Local files are loaded as they are; remote ones through header-only copies (the header bytes the
check already fetched, in sparse files of the listed sizes). The load is llama.cpp's metadata-only
path (runtime/verify.py), so neither case reads a weight. The llama.cpp status then follows the
verdict: refused means unsupported, with llama.cpp's message as the reason.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mtpinspect.inspection.builder import ReportBuilder
from mtpinspect.inspection.evidence import Evidence
from mtpinspect.inspection.report import RuntimeVerdict, Verified
from mtpinspect.runtime.build_cache import cached_helper, find_helper
from mtpinspect.runtime.flags import CTX_SIZE, DRAFT_MODEL, MODEL, MTP_SPEC_TYPE, N_MAX, SPEC_TYPE, ServerArgs
from mtpinspect.runtime.n_max import RULE_OF_THUMB_N_MAX
from mtpinspect.sources.header_copy import sparse_files_supported, write_header_copies
from mtpinspect.vocabulary import RuntimeStatus, SourceKind

if TYPE_CHECKING:
    from mtpinspect.runtime.verify import Verification

# llama-server's -c of the memory estimate when none is given (check -c): a usual chat context.
DEFAULT_CONTEXT = 4096
NOT_BUILT = "not verified by llama.cpp: its verify helper is not built yet (`mtpinspect runtime build` builds it, once)"


@dataclass(frozen=True)
class EngineCheck:
    """What asking llama.cpp gave: its verdict, or why there is none."""

    verification: Verification | None
    note: str | None = None


def consult_llama_cpp(ev: Evidence, verify: bool | None, context: int) -> EngineCheck | None:
    """Ask llama.cpp about the GGUF of ``ev`` when ``verify`` says so: None when its helper is built,
    True always (building the helper first: minutes, once), False never. None for a checkpoint."""
    if verify is False or ev.gguf is None:
        return None
    helper = find_helper()
    if helper is None and verify:
        from mtpinspect.runtime.build import build_server  # the build machinery only when it builds

        build_server("cpu")
        helper = cached_helper("cpu")
    if helper is None:
        return EngineCheck(None, NOT_BUILT)
    return ask_llama_cpp(ev, helper, context)


def _unverifiable(ev: Evidence) -> str | None:
    g = ev.gguf
    if g is None:
        return "no GGUF"
    if ev.sidecar is None and (g.arch == "gemma4-assistant" or (g.mtp.nextn and not g.has_trunk)):
        return "not verified by llama.cpp: this file is a drafter, which loads only next to its main GGUF"
    if ev.target.kind is SourceKind.hub and not sparse_files_supported():
        return "not verified by llama.cpp: header-only copies of remote files need sparse files (not on Windows)"
    return None


def ask_llama_cpp(ev: Evidence, helper: Path, context: int = DEFAULT_CONTEXT) -> EngineCheck:
    """Run the pinned llama.cpp's metadata-only load on the GGUF (and its mtp- sidecar) of ``ev``, with
    the arguments of the command check prints, at ``-c context``."""
    why_not = _unverifiable(ev)
    if why_not is not None:
        return EngineCheck(None, None if ev.gguf is None else why_not)
    # The helper's runner only where the helper runs: `check --no-verify` and a check without it never load it.
    from mtpinspect.runtime.verify import VerifyError, verify

    g, s, t = ev.gguf, ev.sidecar, ev.target
    assert g is not None
    with tempfile.TemporaryDirectory(prefix="mtpinspect-verify-") as scratch:
        if t.kind is SourceKind.hub:
            rels = [*g.files, *(s.files if s else [])]
            fetched = {**g.fetched, **(s.fetched if s else {})}
            copies = write_header_copies(Path(scratch), {r: (t.tree.files[r].size, fetched[r]) for r in rels})
            main, draft = copies[g.files[0]], copies[s.files[0]] if s else None
        else:
            main, draft = Path(t.file_ref(g.files[0])), Path(t.file_ref(s.files[0])) if s else None
        args = ServerArgs.of([
            *MODEL.spelled(main), *(DRAFT_MODEL.spelled(draft) if draft else []),
            *SPEC_TYPE.spelled(MTP_SPEC_TYPE), *N_MAX.spelled(RULE_OF_THUMB_N_MAX), *CTX_SIZE.spelled(context),
        ])
        try:
            v = verify(helper, args)
        except VerifyError as exc:
            return EngineCheck(None, f"not verified by llama.cpp: {exc}")
        if v.error and t.kind is SourceKind.hub:
            # llama.cpp names the files it loaded: the repo's names, not the temporary copies.
            v = replace(v, error=v.error.replace(str(Path(scratch)) + "/", ""))
        return EngineCheck(v)


def follow_engine(b: ReportBuilder, v: Verification) -> None:
    """The llama.cpp status follows the engine: refused is unsupported; accepted keeps what the rules
    say about drafting (a low-bit head, a vocabulary mismatch show only once it drafts)."""
    rules = b.runtimes.get("llama.cpp")
    verified = Verified(v.ok, v.by, v.error)
    if not v.ok:
        b.add("LLAMA_CPP_REFUSED", f"{v.by} refuses to start it with --spec-type draft-mtp: {v.error}",
              [f"failed at: {v.step}", "llama-server " + " ".join(_shown(v.args))])
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.unsupported, f"{v.by}: {v.error}", None, verified)
        return
    started = f"verified: {v.by} loads it and creates the MTP draft context"
    if rules is None or rules.status is RuntimeStatus.unknown:
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.supported, started, rules.command if rules else None, verified)
    elif rules.status is RuntimeStatus.unsupported:
        reason = f"{rules.reason} ({v.by} still starts it: the problem shows once it drafts)"
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.unsupported, reason, rules.command, verified)
    else:
        b.runtimes["llama.cpp"] = RuntimeVerdict(rules.status, f"{rules.reason}; {started}", rules.command, verified)


def _shown(args: ServerArgs) -> list[str]:
    """The arguments with the model files named by their file name only (not the temporary copies)."""
    return [Path(a).name if i and (MODEL.matches(args[i - 1]) or DRAFT_MODEL.matches(args[i - 1])) else a
            for i, a in enumerate(args)]
