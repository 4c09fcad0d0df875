"""`diagnose`: explain zero or low MTP acceptance (or MTP that makes decoding slower) and say what to change.

    >>> from mtpinspect.diagnosis import diagnose
    >>> report = diagnose("model.gguf", server_args=("-t", "8"))
    >>> [(c.code, c.confidence_word, c.fix) for c in report.causes]

Evidence comes from `check` (static.py), a short probe on the real llama-server (probe.py, local GGUF
files and the GGUFs of Ollama's and LM Studio's models) and logs of runs made elsewhere (logread/runs.py);
rank.py turns it into causes, most likely first. For an app's model the run's settings come from the
app and the fixes are said in its terms (app_terms.py).
MODEL may be left out when logs are given: the diagnosis then rests on the logs and the flags alone.
Exit status (``DiagnosisReport.exit_code``): 0 when no cause of zero or low acceptance or of a slowdown
is found, 1 when at least one is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from mtpinspect.causes import Cause
from mtpinspect.diagnosis.app_terms import in_app_terms, ollama_run_settings
from mtpinspect.diagnosis.probe_result import PROBE_N_PREDICT, ProbeResult
from mtpinspect.diagnosis.rank import gather_causes
from mtpinspect.diagnosis.static import StaticEvidence, gather_static
from mtpinspect.errors import SourceError, UsageError
from mtpinspect.logread.mtp_bench import read_log_or_bench
from mtpinspect.logread.runs import LogEvidence, unreadable_note
from mtpinspect.runtime.flags import ServerArgs
from mtpinspect.runtime.timeouts import START_TIMEOUT_S
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.vocabulary import App, RequestKind


@dataclass
class DiagnosisReport:
    json_schema: ClassVar[str] = "diagnose"
    json_properties: ClassVar[dict[str, str]] = {"verdict": "verdict", "exit_status": "exit_code"}

    model: str | None
    server_args: ServerArgs  # of the run being diagnosed
    causes: list[Cause]  # most likely first
    static: StaticEvidence | None
    probe: ProbeResult | None
    probe_skipped: str | None  # why no probe ran (None when it ran)
    logs: list[LogEvidence]
    notes: list[str] = field(default_factory=list)
    endpoint: str | None = None  # diagnose --endpoint: the running server measured (its figures are the probe's)

    @property
    def exit_code(self) -> int:
        return 1 if self.causes else 0

    @property
    def verdict(self) -> str:
        if not self.causes:
            return "no cause of low MTP acceptance or slowdown found"
        top = self.causes[0]
        more = f" (+{len(self.causes) - 1} more)" if len(self.causes) > 1 else ""
        return f"most likely: {top.code} ({top.confidence_word} confidence): {top.message}{more}"


def diagnose(
    model: str | None = None,
    *,
    mtp_file: str | None = None,
    server: str | Path | None = None,
    server_args: Sequence[str] = (),
    log_files: Sequence[str | Path] = (),
    probe: bool = True,
    revision: str | None = None,
    token: str | None = None,
    n_predict: int = PROBE_N_PREDICT,
    prompts: str | Path | None = None,
    probe_dir: Path | None = None,
    start_timeout: float = START_TIMEOUT_S,
    policy: FetchPolicy | None = None,
    endpoint: str | None = None,
    baseline_endpoint: str | None = None,
    n_max: int | None = None,
    request: RequestKind = RequestKind.auto,
) -> DiagnosisReport:
    """Explain low MTP acceptance of ``model`` (anything `check` takes) and/or the runs in ``log_files``.

    ``server_args`` are the llama-server arguments of the run in question (for an Ollama model, after
    those its Modelfile gives: app_terms.ollama_run_settings); the probe (local GGUF or an app's model,
    unless ``probe`` is False) reproduces them once as given and measures baseline, n-max 1 and 3.
    ``prompts`` replaces the probe's built-in code and prose-en prompts; ``request`` is how the probe sends
    them (auto: through the chat template when the GGUF has one, as a chat app does); ``probe_dir`` keeps its files;
    ``start_timeout`` bounds each of its server starts; ``policy`` bounds the Hub requests of a Hub MODEL
    (timeout, retries, deadline).
    ``endpoint`` is a running llama-server, vLLM or SGLang server (``baseline_endpoint`` the same model
    without speculative decoding, ``n_max`` its draft length when its counters do not say): measured
    where it runs instead of the probe (probe.probe_endpoint).
    Raises MtpinspectError subclasses for bad input (missing files, unreadable logs, a model the
    server cannot run at all).
    """
    if model is None and not log_files and endpoint is None:
        raise UsageError("diagnose: give a MODEL, a --log FILE, an --endpoint URL, or several")
    if baseline_endpoint is not None and endpoint is None:
        raise UsageError("diagnose: --baseline-endpoint goes with --endpoint")
    if model is None and mtp_file is not None:
        raise UsageError("diagnose: --mtp-file needs a MODEL")
    if mtp_file is not None and not Path(mtp_file).expanduser().is_file():
        raise SourceError(f"{mtp_file}: no such MTP file")
    settings = ServerArgs.of(server_args).checked()
    # Logs are read first: a bad log should fail before minutes of probing.
    read = [read_log_or_bench(path) for path in log_files]  # mtp-bench output, else a log
    logs = [log for runs, _ in read for log in runs]
    static = gather_static(model, mtp_file=mtp_file, revision=revision, token=token, policy=policy,
                           server=server) if model is not None else None
    app = static.report.app if static is not None else None
    origin: list[str] = []
    if app is not None and app.app is App.ollama and static is not None:
        # The run in question is the one Ollama starts: its Modelfile's settings, then the extra arguments.
        from_app, origin = ollama_run_settings(app, static.report)
        settings = ServerArgs.of([*from_app, *settings]).checked()
    result, skipped = None, _skip_reason(model, static, probe)
    measured: list[str] = []
    if endpoint is not None:
        # The probe is imported where it runs: it brings the sweep and the server machinery, which a
        # diagnosis of logs alone never uses.
        from mtpinspect.diagnosis.probe import probe_endpoint

        result, measured = probe_endpoint(endpoint, baseline_url=baseline_endpoint, n_max=n_max, n_predict=n_predict,
                                          prompts=prompts, out_dir=probe_dir)
        skipped = None
    elif skipped is None and static is not None and static.local_model is not None:
        from mtpinspect.diagnosis.probe import run_probe

        result = run_probe(static.local_model, settings, sidecar=static.sidecar, sidecar_given=static.sidecar_given,
                           server=server, n_predict=n_predict, prompts=prompts, out_dir=probe_dir, request=request,
                           start_timeout=start_timeout)
    causes, notes = gather_causes(static, settings, result, logs)
    notes += measured
    notes += [note for _, bench_notes in read for note in bench_notes]
    notes += [f"{log.path}: skipped {unreadable_note(log.unreadable)}" for log in logs if log.unreadable]
    if app is not None and static is not None:
        smallest = min((f.n_max for f in result.mtp_figures() if f.n_max), default=None) if result else None
        causes = in_app_terms(causes, app, static.report, smallest)
        notes = [*(f"run settings from {model}: {line}" for line in origin), *notes]
    return DiagnosisReport(model, settings, causes, static, result, skipped, logs, notes, endpoint)


def _skip_reason(model: str | None, static: StaticEvidence | None, probe: bool) -> str | None:
    if model is None:
        return "no MODEL given: diagnosed from the logs and flags"
    if not probe:
        return "--no-probe"
    if static is None or static.local_model is None:
        return "MODEL is not a local GGUF: the probe runs only on local GGUF files (and Ollama's and LM Studio's models)"
    return None


__all__ = ["DiagnosisReport", "diagnose"]
