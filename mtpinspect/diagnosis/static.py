"""Static evidence for a diagnosis: what `check` says about the model, what the run's flags say, and
whether the head's weights in a local GGUF are all zero (a damaged head that headers cannot show).

Each check finding that explains zero or low acceptance becomes a candidate cause with a moderate
confidence; the probe and the logs confirm or refute it (rank.py).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from mtpinspect.causes import Cause
from mtpinspect.diagnosis.advice import FOREIGN_HEAD_FIX, SIDECAR_REMAKE_FIX
from mtpinspect.errors import MtpinspectError
from mtpinspect.inspection.report import CheckReport, Finding
from mtpinspect.inspection.support import llama_server_command
from mtpinspect.jsonable import json_field
from mtpinspect.runtime.command_server import SERVER_ON_PATH, server_for_commands
from mtpinspect.runtime.flags import DRAFT_MODEL, SPEC_FLAGS, SPEC_TYPE, SPEC_TYPES, ServerArgs
from mtpinspect.runtime.n_max import RULE_OF_THUMB_N_MAX, rule_of_thumb
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.sources.reader import LocalFileReader
from mtpinspect.vocabulary import EvidenceSource, Layout, Severity, SourceKind

HIGH_P_MIN = 0.5
# Tensors that carry the head's signal: eh_proj is required, shared_head_head optional.
_SIGNAL_TENSORS = (".nextn.eh_proj.weight", ".nextn.shared_head_head.weight")
_ZERO_SAMPLE_BYTES = 1 << 20

# check's findings that mean the head cannot draft well, and the wording of the cause.
_HEAD_FINDINGS = ("MTP_QUANTIZED", "MTP_PARTIALLY_EXCLUDED", "FUSED_NAME_MISMATCH", "LOW_BIT_MTP_HEAD",
                  "MTP_UNDECLARED_BF16", "MTP_HEAD_NON_FINITE")

_SIDECAR_FIX = ("use the mtp- file converted from the same model, revision and quantization as the main GGUF "
                "(python convert_hf_to_gguf.py MODEL_DIR --mtp, from the same snapshot)")
_WEIGHTS_FIX = ("use a release that ships the MTP weights (a GGUF converted without --no-mtp, or its mtp- file "
                "passed with -md); for safetensors, a quantization that keeps the mtp.* modules")
# check's findings that name a cause by themselves: finding -> (cause, confidence, fix). The message
# and evidence are the finding's own.
_FINDING_CAUSES: dict[str, tuple[str, float, str]] = {
    "SIDECAR_MISMATCH": ("SIDECAR_MISMATCH", 0.85, _SIDECAR_FIX),
    "SIDECAR_INCOMPLETE": ("SIDECAR_INCOMPLETE", 0.85, SIDECAR_REMAKE_FIX),
    # The rows prove another embedding; that the drafts suffer for it the probe measures (head_rules.py).
    "SIDECAR_FOREIGN": ("HEAD_FOREIGN", 0.75, FOREIGN_HEAD_FIX),
    "MTP_WEIGHTS_MISSING": ("MTP_WEIGHTS_MISSING", 0.85, _WEIGHTS_FIX),
    "MTP_DROPPED_IN_CONVERSION": ("MTP_WEIGHTS_MISSING", 0.85, _WEIGHTS_FIX),
    "SIDECAR_NOT_FOUND": ("MTP_WEIGHTS_MISSING", 0.85, _WEIGHTS_FIX),
    "NO_MTP": ("NO_MTP_HEAD", 0.9, "MTP cannot be used with this model: drop --spec-type draft-mtp, or use a draft model "
               "(--spec-type draft-simple -md SMALL.gguf) or n-gram drafting (--spec-type ngram-mod)"),
    "ARCH_NO_MTP_GRAPH": ("NO_MTP_GRAPH", 0.9, "use a llama.cpp build with an MTP graph for this architecture (pass it "
                          "with --server PATH), or serve the model with vLLM/SGLang; otherwise leave MTP off"),
    # An Ollama model with a head and no draft_num_predict: Ollama never passes --spec-type.
    "OLLAMA_MTP_OFF": ("MTP_NOT_ENABLED", 0.9, f"--spec-type draft-mtp --spec-draft-n-max {RULE_OF_THUMB_N_MAX} "
                       f"({rule_of_thumb().said})"),
}


@dataclass
class StaticEvidence:
    """What was read without running anything; in JSON, check's verdict and findings and the zero tensors."""

    json_properties: ClassVar[dict[str, str]] = {
        "verdict": "verdict", "layout": "layout", "usable": "usable", "findings": "findings",
    }

    report: CheckReport = json_field(omit=True)
    local_model: Path | None = json_field(omit=True)  # a local GGUF the probe can run
    sidecar: Path | None = json_field(omit=True)  # the mtp- file: given with --mtp-file or found beside the model
    sidecar_given: bool = json_field(omit=True)
    zero_tensors: list[str] = field(default_factory=list)
    # The llama-server the fix commands name: the one diagnose runs (--server), else command_server.server_for_commands.
    program: str = json_field(omit=True, default=SERVER_ON_PATH)

    @property
    def verdict(self) -> str:
        return self.report.verdict

    @property
    def layout(self) -> Layout:
        return self.report.layout

    @property
    def usable(self) -> bool:
        return self.report.usable

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings

    def has(self, code: str) -> bool:
        return self.report is not None and code in self.report.codes()

    def finding(self, code: str) -> Finding | None:
        if self.report is None:
            return None
        return next((f for f in self.report.findings if f.code == code), None)

    @property
    def head_defect(self) -> list[Finding]:
        """check's findings that say the head is quantized too far (a maker's own FP8 head is not a defect)."""
        if self.report is None:
            return []
        return [f for f in self.report.findings if f.code in _HEAD_FINDINGS and f.severity is not Severity.info]

    @property
    def architecture(self) -> str | None:
        if self.report is None:
            return None
        return self.report.architecture.get("gguf_architecture")


def gather_static(
    model: str,
    *,
    mtp_file: str | None = None,
    revision: str | None = None,
    token: str | None = None,
    policy: FetchPolicy | None = None,
    server: str | Path | None = None,
) -> StaticEvidence:
    """Run `check` on the model and, for a local GGUF, look at the head's weights; ``server``: the llama-server
    named with --server, which the fix commands then name too."""
    from mtpinspect.inspection.pipeline import check

    # Rules only: the probe that follows starts the real llama-server, which says more than a dry load.
    report = check(model, revision=revision, token=token, mtp_file=mtp_file, verify=False, policy=policy)
    path = Path(os.path.abspath(Path(model).expanduser()))
    # Absolute (the probe's server runs elsewhere) with symlinks kept: check names the sidecar relative to the
    # folder the user named (a Hugging Face cache snapshot's files are links into blobs/, where it is not).
    local = path if report.source_kind is SourceKind.local_file and path.suffix == ".gguf" and path.is_file() else None
    sidecar: Path | None = None
    if report.app is not None and report.files.get("gguf"):
        # An app's model runs from where the app keeps it: Ollama's blobs, LM Studio's repo folder.
        local = Path(report.app.model_file)
        if report.app.draft_file:
            sidecar = Path(report.app.draft_file)
        elif report.files.get("sidecar"):
            sidecar = Path(report.app.location) / report.files["sidecar"][0]
    elif mtp_file is not None:
        sidecar = Path(os.path.abspath(Path(mtp_file).expanduser()))
    elif local is not None and report.files.get("sidecar"):
        sidecar = local.parent / report.files["sidecar"][0]
    program = str(server) if server else server_for_commands().program
    evidence = StaticEvidence(report, local, sidecar, sidecar_given=mtp_file is not None, program=program)
    for file in (local, sidecar):
        if file is not None and file.is_file():
            evidence.zero_tensors += zero_signal_tensors(file)
    return evidence


def zero_signal_tensors(path: Path) -> list[str]:
    """The head's eh_proj / shared_head_head tensors whose stored bytes (first MiB) are all zero."""
    from mtpinspect.formats.gguf import read_gguf_header  # a model's: `diagnose --log` reads none

    reader = LocalFileReader(path)
    try:
        header = read_gguf_header(reader)
    except MtpinspectError:
        return []  # check has already said what is wrong with the file
    found = []
    for tensor in header.tensors:
        if not tensor.name.endswith(_SIGNAL_TENSORS):
            continue
        data = reader.read_at(header.data_offset + tensor.offset, min(tensor.nbytes, _ZERO_SAMPLE_BYTES))
        # A file cut short (a header-only stand-in) has no data to judge.
        if data and data.count(0) == len(data):
            found.append(f"{path.name}: {tensor.name} ({tensor.ggml_type}): the first {len(data):,} bytes are all zero")
    return found


def fix_command(static: StaticEvidence | None, settings: ServerArgs, *, n_max: int = RULE_OF_THUMB_N_MAX) -> str:
    """The llama-server line that runs this model with MTP, keeping the user's other flags."""
    model = str(static.local_model) if static and static.local_model else "MODEL.gguf"
    sidecar = str(static.sidecar) if static and static.sidecar else settings.draft_model
    program = static.program if static else server_for_commands().program
    base = llama_server_command(model, sidecar=sidecar, n_max=settings.n_max or n_max, program=program)
    extra = settings.without(*SPEC_FLAGS).args
    return base + (" " + shlex.join(extra) if extra else "")


def _evidence(finding: Finding) -> tuple[str, ...]:
    return (f"check {finding.code}: {finding.message}", *finding.evidence[:4])


def static_causes(static: StaticEvidence, settings: ServerArgs) -> list[Cause]:
    """Candidate causes from check's findings and the run's flags."""
    causes: list[Cause] = []
    causes += _from_check(static, settings)
    causes += settings_causes(settings, static)
    return causes


def _from_check(static: StaticEvidence, settings: ServerArgs) -> list[Cause]:
    causes: list[Cause] = []
    defects = static.head_defect
    if defects or static.zero_tensors:
        evidence = [line for f in defects for line in _evidence(f)] + static.zero_tensors
        causes.append(Cause(
            "HEAD_QUANTIZED", 0.55,
            "the MTP head's weights are damaged (all zero)" if static.zero_tensors and not defects
            else "the MTP head is quantized below what it needs to draft",
            tuple(evidence), head_fix(static), (EvidenceSource.static,),
        ))
    for finding_code, (cause_code, confidence, fix) in _FINDING_CAUSES.items():
        found = static.finding(finding_code)
        # A head found after all (a second file) outweighs a NO_MTP about the first.
        if found is None or (finding_code == "NO_MTP" and static.has("MTP_PRESENT")):
            continue
        causes.append(Cause(cause_code, confidence, found.message, _evidence(found), fix, (EvidenceSource.static,)))
    if static.report is not None and static.report.layout is Layout.sidecar and not static.sidecar_given \
            and settings.sets_spec and settings.draft_model is None:
        causes.append(Cause(
            "SIDECAR_NOT_PASSED", 0.8,
            "the main GGUF has no MTP head; its head is in the mtp- file beside it, which the run does not pass",
            (f"layout: sidecar ({static.sidecar.name if static.sidecar else 'mtp- file'})",
             f"run arguments: {shlex.join(settings.args)} (no -md)"),
            fix_command(static, settings), (EvidenceSource.static, EvidenceSource.args),
        ))
    return causes


def head_fix(static: StaticEvidence | None) -> str:
    """What to change when the head is quantized or damaged, for a GGUF or a safetensors checkpoint."""
    if static is not None and static.zero_tensors:
        return "the head's weights are zero in this file: re-download it (check its sha256) or re-convert the head"
    # A GGUF's types are chosen per tensor (check names a GGUF architecture for checkpoints too: the layout tells).
    if static is not None and static.layout in (Layout.bundled, Layout.sidecar):
        layer = _mtp_block(static)
        return (
            f"use a GGUF whose MTP block is Q8_0 or better, e.g. re-quantize from the F16/BF16 GGUF keeping it: "
            f"llama-quantize --tensor-type 'blk\\.{layer}\\.=q8_0' MODEL-F16.gguf MODEL-OUT.gguf Q4_K_M"
        )
    return (
        "use a checkpoint whose quantization excludes the MTP modules (add 're:.*mtp.*' to ignore / exclude_modules, "
        "matching the engine's fused names), or point the engine's draft at a BF16 copy of the head "
        "(vLLM --speculative-config '{\"method\":\"mtp\",\"model\":\"BF16_REPO\",\"num_speculative_tokens\":1}')"
    )


def _mtp_block(static: StaticEvidence) -> str:
    for finding in static.head_defect:
        for line in finding.evidence:
            if line.startswith("blk."):
                return line.split(".", 2)[1]
    return "N"


def settings_causes(settings: ServerArgs, static: StaticEvidence | None) -> list[Cause]:
    """Causes the run's flags show by themselves (temperature, p-min, an unknown spec type)."""
    causes: list[Cause] = []
    unknown = [t for t in settings.spec_types if t not in SPEC_TYPES]
    if unknown:
        fixed = settings.without(SPEC_TYPE, DRAFT_MODEL)
        causes.append(Cause(
            "WRONG_SPEC_TYPE", 0.9,
            f"--spec-type {settings.spec_type}: llama-server knows no type {unknown[0]!r} (MTP is `draft-mtp`)",
            (f"run arguments: {shlex.join(settings.args)}",),
            fix_command(static, fixed), (EvidenceSource.args,),
        ))
    if settings.temperature is not None and settings.temperature > 0:
        causes.append(Cause(
            "HIGH_TEMPERATURE", 0.5,
            f"temperature {settings.temperature:g}: the target samples, the MTP draft is greedy, so fewer drafts match",
            (f"run arguments: --temp {settings.temperature:g}",),
            "for the best acceptance use --temp 0 (or top-k 1) in the server or the request; expect lower acceptance "
            "at higher temperatures", (EvidenceSource.args,),
        ))
    if settings.p_min is not None and settings.p_min >= HIGH_P_MIN:
        causes.append(Cause(
            "HIGH_P_MIN", 0.5,
            f"--spec-draft-p-min {settings.p_min:g}: the drafter stops whenever its top token is below this probability",
            (f"run arguments: --spec-draft-p-min {settings.p_min:g}",),
            "lower it: --spec-draft-p-min 0 (the default) or about 0.3", (EvidenceSource.args,),
        ))
    return causes
