"""What ``sweep --engine ... --serve`` and ``sweep --endpoint`` are asked, checked before anything starts:
the template (it must say where the draft length and the port go), the baseline's command, or the
running server's engine, model and counters; the configurations, and the settings a resume matches on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtpinspect.errors import SourceError, UsageError
from mtpinspect.runtime.bounds import N_MAX_BOUND
from mtpinspect.runtime.engines import SPECS, spec_of
from mtpinspect.runtime.engines.base import N_FIELD, Identity, check_template, identify
from mtpinspect.runtime.engines.spec import EngineSpec
from mtpinspect.runtime.http import mask_url
from mtpinspect.sweep.engine_run import EngineContext, no_counters_reason
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.options import SweepOptions
from mtpinspect.sweep.plan import Configuration, configurations
from mtpinspect.sweep.report import EngineRecommendation
from mtpinspect.vocabulary import Engine

_OWNERS = {owner: spec.engine for spec in SPECS.values() for owner in spec.owned_by}


@dataclass(frozen=True)
class EngineInfo:
    """The report's "server": the command's program or the endpoint, the engine's version, its name."""

    path: str
    version: str
    backend: str


@dataclass(frozen=True)
class EngineSetup:
    spec: EngineSpec
    configs: list[Configuration]
    settings: dict[str, Any]
    info: EngineInfo
    tokens: list[str] | None = None
    baseline_tokens: list[str] | None = None
    model_arg: str | None = None
    endpoint: Identity | None = None
    baseline_endpoint: Identity | None = None

    def context(self, options: SweepOptions, journal: Journal, log_dir: Path) -> EngineContext:
        return EngineContext(
            options=options, spec=self.spec, settings=self.settings, journal=journal, log_dir=log_dir,
            tokens=self.tokens, baseline_tokens=self.baseline_tokens, model_arg=self.model_arg,
            endpoint=self.endpoint.url if self.endpoint else None,
            baseline_endpoint=self.baseline_endpoint.url if self.baseline_endpoint else None,
            served_model=self.endpoint.model if self.endpoint else "",
        )

    def recommendation(self, n_max: int | None) -> EngineRecommendation:
        """The recommended draft length in the engine's own options (and in the user's own command)."""
        if n_max is None:
            setting = f"leave speculative decoding off: run it {self.spec.off}"
            return EngineRecommendation(self.spec.engine, setting, self.baseline_tokens)
        command = [token.replace(N_FIELD, str(n_max)) for token in self.tokens] if self.tokens else None
        return EngineRecommendation(self.spec.engine, self.spec.setting(n_max), command)


def prepare_engine(model: str | None, options: SweepOptions) -> EngineSetup:
    """Check the options of an engine sweep; UsageError / SourceError in one line, before anything starts."""
    if options.synthetic:
        raise UsageError("--synthetic: forced acceptance is llama-server's alone; leave it out with --engine/--endpoint")
    if options.server_args or options.mtp_file is not None:
        raise UsageError("with --serve or --endpoint the server's options are its own: put them in the command")
    if (options.serve is None) == (options.endpoint is None):
        raise UsageError("--engine: give the server's command with --serve, or a running server with --endpoint (one of them)")
    if options.serve is not None:
        return _prepare_serve(model, options)
    return _prepare_endpoint(model, options)


def _settings(options: SweepOptions, engine: Engine, model: str) -> dict[str, Any]:
    return {
        "engine": engine.value,
        "serve": options.serve,
        "serve_baseline": options.serve_baseline,
        # Masked: the journal and report.json never hold a password (a URL from the Python API may).
        "endpoint": mask_url(options.endpoint) if options.endpoint else None,
        "baseline_endpoint": mask_url(options.baseline_endpoint) if options.baseline_endpoint else None,
        "model": model,
        "mtp_file": None,
        "n_predict": options.n_predict,
        "seed": options.seed,
        "server_args": [],
    }


def _prepare_serve(model: str | None, options: SweepOptions) -> EngineSetup:
    if options.engine is None:
        raise UsageError("--serve: say which engine the command starts with --engine (llama.cpp, vllm, sglang)")
    if options.baseline_endpoint is not None:
        raise UsageError("--baseline-endpoint goes with --endpoint; with --serve use --serve-baseline")
    spec = spec_of(options.engine)
    assert options.serve is not None
    tokens = check_template(options.serve, "--serve", needs_n=True)
    if options.serve_baseline is not None:
        baseline = check_template(options.serve_baseline, "--serve-baseline", needs_n=False)
    else:
        baseline = spec.baseline_tokens(tokens)
        left = next((token for token in baseline if N_FIELD in token), None)
        if left is not None:
            raise UsageError(f"--serve: {N_FIELD} is still in {left!r} once the speculative options are left out; "
                             "give the baseline's command with --serve-baseline")
    if model is None and any("{model}" in token for token in tokens + baseline):
        raise UsageError("--serve: the command has {model} in it but no MODEL was given")
    configs = configurations(options.n_max)
    label = model if model is not None else " ".join(tokens)
    return EngineSetup(spec, configs, _settings(options, spec.engine, label),
                       EngineInfo(tokens[0], "", spec.engine.value), tokens=tokens, baseline_tokens=baseline,
                       model_arg=_model_arg(model))


def _model_arg(model: str | None) -> str | None:
    """What {model} stands for: a built-in model's GGUF path (``builtin:qwen35`` means nothing to a
    server), else MODEL as given."""
    from mtpinspect.trained_model import built_in, is_built_in

    return str(built_in(model).resolve()) if model is not None and is_built_in(model) else model


def _prepare_endpoint(model: str | None, options: SweepOptions) -> EngineSetup:
    if options.serve_baseline is not None:
        raise UsageError("--serve-baseline goes with --serve; with --endpoint use --baseline-endpoint")
    assert options.endpoint is not None
    found = identify(options.endpoint, _OWNERS)
    if options.engine is not None and options.engine is not found.engine:
        raise UsageError(f"--engine {options.engine.value}: {found.url} is a {found.engine.value} server")
    spec = spec_of(found.engine)
    check_counters(found, spec)
    n_max = endpoint_draft_length(found, options.n_max)
    baseline = identify(options.baseline_endpoint, _OWNERS) if options.baseline_endpoint else None
    configs = ([Configuration(None)] if baseline else []) + [Configuration(n_max)]
    return EngineSetup(spec, configs, _settings(options, spec.engine, model or found.model),
                       EngineInfo(found.url, found.version, spec.engine.value), endpoint=found,
                       baseline_endpoint=baseline)


def check_counters(found: Identity, spec: EngineSpec) -> None:
    """SourceError when the running server publishes no acceptance figures at all."""
    metrics = found.metrics
    has = metrics is not None and (metrics.has_spec_counters or (spec.log_reading is not None
                                                                 and metrics.reported_mean_length is not None))
    if not has:
        raise SourceError(no_counters_reason(found.url, spec, metrics))


def endpoint_draft_length(found: Identity, n_max: tuple[int, ...]) -> int:
    """The running server's draft length: the one --n-max given, else the positions its counters have."""
    if len(n_max) == 1:
        N_MAX_BOUND.check(n_max[0])
        return n_max[0]
    # vLLM creates one per-position counter per draft position at start-up; llama-server only those it has seen.
    positions = len(found.metrics.accepted_per_pos) if found.metrics is not None and found.engine is Engine.vllm else 0
    if n_max or not positions:
        raise UsageError(f"--endpoint: give the draft length {found.url} runs with as one --n-max N"
                         + ("" if positions else " (its counters do not say)"))
    return positions
