"""What every engine has in common: a server started from the user's own command or attached at a URL,
asked through the OpenAI-compatible completions API and read through its Prometheus ``/metrics``.

The differences between llama-server, vLLM and SGLang (which options switch speculative decoding on,
how a draft length is said, where acceptance is read) are data in :class:`EngineSpec`, one module per
engine (llamacpp.py, vllm.py, sglang.py) over spec.py. The sweep sees only :class:`EngineServer`.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mtpinspect.errors import FormatError, ServerError, SourceError, UsageError, shown
from mtpinspect.runtime.engines.spec import EngineSpec
from mtpinspect.runtime.http import ANSWER_LIMIT, Answer, HttpFailure, hide_secret, mask_url, request
from mtpinspect.runtime.metrics import Metrics, parse_metrics
from mtpinspect.runtime.process import die_with_parent, stop_group
from mtpinspect.runtime.serve_scope import ServeScope, new_scope
from mtpinspect.runtime.server import HOST, Completion, ServerDiedError, ServerStartError, describe_exit, free_port
from mtpinspect.runtime.server_log import ServerLog, tail_text
from mtpinspect.vocabulary import Engine

N_FIELD = "{n}"
PORT_FIELD = "{port}"
MODEL_FIELD = "{model}"
# Lines of the server's log quoted when it fails to start.
LOG_TAIL_LINES = 5
_POLL_S = 0.25
# What a server's log is read to at most in one go.
_ANSWER_LIMIT = ANSWER_LIMIT


def check_template(template: str, option: str, *, needs_n: bool) -> list[str]:
    """The template split like a shell would; UsageError when it lacks {port} (or {n})."""
    try:
        tokens = shlex.split(template)
    except ValueError as exc:
        raise UsageError(f"{option} {template!r}: cannot split it like a shell ({exc})") from None
    if not tokens:
        raise UsageError(f"{option}: the command is empty")
    text = " ".join(tokens)
    if needs_n and N_FIELD not in text:
        raise UsageError(f"{option} {template!r}: no {N_FIELD} in it (where the draft length goes)")
    if PORT_FIELD not in text:
        raise UsageError(f"{option} {template!r}: no {PORT_FIELD} in it (where the free port the tool picks goes)")
    if _DETACHED.search(template):
        raise UsageError(f"{option}: a detached container (docker/podman run -d) outlives every process mtpinspect "
                         "can stop: run it attached (docker run --rm ..., without -d): stopping the command then "
                         "stops the container through docker's signal proxy")
    return tokens


# `docker run -d`, `podman container run --detach`, `-dit` (up to a shell separator): the container runs
# under the container daemon, not under the command, so nothing mtpinspect starts or stops reaches it.
_DETACHED = re.compile(r"\b(docker|podman)\s+(container\s+)?run\b[^;&|]*?\s(-[a-zA-Z]*d[a-zA-Z]*|--detach(=true)?)(?=\s|$|['\"])")


def fill(tokens: list[str], *, n: int | None, port: int, model: str | None) -> list[str]:
    """The command for one start: the fields replaced as text (a JSON option keeps its braces)."""
    out = []
    for token in tokens:
        token = token.replace(PORT_FIELD, str(port))
        if n is not None:
            token = token.replace(N_FIELD, str(n))
        if model is not None:
            token = token.replace(MODEL_FIELD, model)
        out.append(token)
    return out


# -- HTTP --------------------------------------------------------------------------------------------
# Every request goes through runtime/http.py: bounded in total time and bytes, no redirect followed,
# credentials masked.

# A /metrics page is written in milliseconds; a server that takes longer than this is not answering.
METRICS_TIMEOUT_S = 10.0
# How long /v1/models, /props and /version may take when a server is identified at an --endpoint: a
# busy engine can be slow to answer (was 5 s, which called a slow server "not an LLM server").
IDENTIFY_TIMEOUT_S = 30.0


def endpoint_url(raw: str) -> tuple[str, str | None]:
    """An --endpoint as the tool keeps it: http(s), the password masked (and kept by runtime/http.py), no
    trailing slash, and the ``/v1`` that vLLM prints as its base URL taken off (the API's paths include
    it); with a note saying so. UsageError in one line (masked) for what is not such a URL."""
    url = hide_secret(raw.strip()).rstrip("/")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError as exc:
        raise UsageError(f"{mask_url(raw)}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{url}: not an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise UsageError(f"{url}: give the server's base URL, without ?query or #fragment")
    path = parts.path.rstrip("/")
    for tail in _API_PATHS:
        if path.endswith(tail):
            base = urllib.parse.urlunsplit(parts._replace(path=path[: -len(tail)]))
            return base, f"{url}: measuring {base} (the API's paths start with /v1 themselves)"
    return url, None


# What a user may paste after the server's base URL: vLLM prints .../v1; an API path copied from a request.
_API_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1", "/metrics", "/health")


def http_get(url: str, timeout: float) -> tuple[int, bytes]:
    """Status and body (bounded) of a GET; status 0 when nothing answered."""
    try:
        answer = request("GET", url, timeout=timeout)
    except HttpFailure:
        return 0, b""
    return answer.status, answer.body


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def served_model(url: str, timeout: float = 5.0) -> tuple[str | None, str | None]:
    """The first model of GET /v1/models and its owner, or (None, why not)."""
    try:
        answer = request("GET", url + "/v1/models", timeout=timeout)
    except HttpFailure as exc:
        return None, exc.reason
    return _model_of(answer)


def _model_of(answer: Answer) -> tuple[str | None, str | None]:
    doc = _json(answer.body) if answer.status == 200 else None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or not isinstance(data[0].get("id"), str):
        return None, f"HTTP {answer.status}" if answer.status != 200 else "not a model list"
    owner = data[0].get("owned_by")
    return data[0]["id"], owner if isinstance(owner, str) else ""


def scrape(url: str, timeout: float = METRICS_TIMEOUT_S) -> Metrics | None:
    """GET /metrics, parsed; None when the server has none (404, switched off, not Prometheus text).
    A page that does not come whole in time, is over the cap or redirects elsewhere: ServerError."""
    answer = request("GET", url + "/metrics", timeout=timeout)
    if answer.status != 200:
        return None
    try:
        return parse_metrics(answer.body.decode("utf-8", errors="replace"))
    except FormatError:
        return None


def complete(url: str, model: str, prompt: str, *, max_tokens: int, seed: int, timeout: float,
             logprobs: int = 0, chat: dict[str, Any] | None = None) -> Completion:
    """POST /v1/completions at temperature 0 with a fixed seed, every token generated (ignore_eos); with
    ``logprobs``, the OpenAI API's top candidates of every token (in ``raw``: choices[0].logprobs). With
    ``chat`` (its extra fields: ``chat_template_kwargs`` that switch reasoning), POST /v1/chat/completions
    with the prompt as the one user message, formatted by the engine's chat template for the model (vLLM,
    SGLang and llama-server all serve it); the text is the reasoning (when split out) and the answer.

    Decode speed: the engine's own timings when it sends them (llama-server), else completion tokens
    over the request's wall time (vLLM, SGLang: prefill of these short prompts is a few ms of it).
    """
    path = "/v1/completions" if chat is None else "/v1/chat/completions"
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0.0, "seed": seed,
                            "ignore_eos": True, "stream": False}
    if chat is None:
        body["prompt"] = prompt
    else:
        body.update(messages=[{"role": "user", "content": prompt}], **chat)
    if logprobs:
        body["logprobs"] = logprobs
    began = time.perf_counter()
    answer = request("POST", url + path, timeout=timeout, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
    payload = answer.body
    if answer.status != 200:
        raise ServerError(f"{url}: POST {path} -> HTTP {answer.status}: "
                          f"{payload[:300].decode('utf-8', 'replace').strip()}")
    wall = time.perf_counter() - began
    raw = _json(payload)
    choices = raw.get("choices") if isinstance(raw, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerError(f"{url}: {path} answered without choices: {payload[:80]!r}")
    usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else {}
    timings = raw.get("timings") if isinstance(raw.get("timings"), dict) else {}
    tokens = int(_figure(url, "usage.completion_tokens", usage.get("completion_tokens") or timings.get("predicted_n") or 0,
                         max_tokens))
    measured = _figure(url, "timings.predicted_per_second", timings.get("predicted_per_second") or 0, math.inf)
    rate = measured or (tokens / wall if wall > 0 else 0.0)
    return Completion(
        text=_choice_text(choices[0]),
        timings=timings,
        raw=raw,
        predicted_per_second=rate,
        prompt_per_second=_figure(url, "timings.prompt_per_second", timings.get("prompt_per_second", 0.0), math.inf),
        predicted_n=tokens,
        draft_n=int(_figure(url, "timings.draft_n", timings.get("draft_n", 0), max_tokens * 1024)),
        draft_n_accepted=int(_figure(url, "timings.draft_n_accepted", timings.get("draft_n_accepted", 0), max_tokens * 1024)),
        wall_seconds=wall,
    )


def _choice_text(choice: dict[str, Any]) -> str:
    """A completion choice's text, or a chat choice's reasoning (vLLM: ``reasoning_content`` or ``reasoning``)
    followed by its answer."""
    message = choice.get("message")
    if not isinstance(message, dict):
        return str(choice.get("text", ""))
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    return str(reasoning) + str(message.get("content") or "")


def _figure(url: str, name: str, value: Any, most: float) -> float:
    """A figure of a completion's answer as a number from 0 to ``most`` (a token count is at most the
    tokens asked for); ServerError in one line for anything else (a string, a negative, infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= most or value != value:
        raise ServerError(f"{url}: /v1/completions answered {name} = {shown(value)}: not a figure from 0 to {most:g}")
    return float(value)


# -- the servers -------------------------------------------------------------------------------------


class EngineServer(Protocol):
    """One server the sweep measures: started from a command or attached at a URL."""

    spec: EngineSpec
    url: str
    command: list[str]
    log_path: Path | None
    model: str  # as /v1/models names it, for the requests

    @property
    def pid(self) -> int | None: ...

    def start(self) -> None: ...

    def counters(self) -> Metrics | None: ...

    def complete(self, prompt: str, *, max_tokens: int, seed: int, timeout: float, logprobs: int = 0,
                 chat: dict[str, Any] | None = None) -> Completion: ...

    def log_since(self, offset: int) -> tuple[str, int]: ...

    def stop(self) -> None: ...


class CommandServer:
    """The user's own server command, with {n}, {port} (and {model}) filled in, in its own process group."""

    def __init__(self, spec: EngineSpec, tokens: list[str], *, n: int | None, model: str | None, log_path: Path,
                 start_timeout: float, stop_grace: float = 15.0) -> None:
        self.spec = spec
        self._tokens = tokens
        self._n = n
        self._model_arg = model
        self.log_path: Path | None = log_path
        self.start_timeout = start_timeout
        self.stop_grace = stop_grace
        self.url = ""
        self.command: list[str] = []
        self.model = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: ServerLog | None = None
        self._scope: ServeScope | None = None  # every process the command starts, daemons included

    @property
    def pid(self) -> int | None:
        """The command's process; once it has exited (a command that daemonises), its oldest descendant's."""
        if self._proc is None or self._proc.poll() is None:
            return self._proc.pid if self._proc is not None else None
        rest = self._scope.processes() if self._scope is not None else []
        return rest[0].pid if rest else self._proc.pid

    def _exited(self) -> int | None:
        """The command's exit status when nothing it started runs any more (None while the server runs):
        a command that daemonises exits 0 at once and leaves its server running."""
        code = self._proc.poll() if self._proc is not None else None
        if code == 0 and self._scope is not None and self._scope.processes():
            return None
        return code

    def start(self) -> None:
        """Run the command and wait until /v1/models answers; ServerStartError with its last log lines."""
        port = free_port()
        self.url = f"http://{HOST}:{port}"
        command = fill(self._tokens, n=self._n, port=port, model=self._model_arg)
        self.command = command + [flag for flag in self.spec.required if flag not in command]
        assert self.log_path is not None
        self._log = ServerLog(self.log_path)  # capped: head and tail (runtime/server_log.py)
        self._scope = new_scope()
        try:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self._log,
                                          stderr=subprocess.STDOUT, start_new_session=os.name != "nt",
                                          preexec_fn=die_with_parent(), env=self._scope.environment())
        except OSError as exc:
            self.stop()
            raise ServerStartError(f"{self.command[0]}: cannot run it: {exc.strerror or exc}") from None
        self._log.started()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            assert self._proc is not None
            code = self._exited()
            if code is not None:
                raise self._start_error(f"exited ({describe_exit(code)}) before answering", code)
            model, _ = served_model(self.url, timeout=2.0)
            if model is not None:
                self.model = model
                return
            if time.monotonic() > deadline:
                raise self._start_error(f"did not answer /v1/models within {self.start_timeout:g} s (--start-timeout)", None)
            time.sleep(_POLL_S)

    def _start_error(self, what: str, code: int | None) -> ServerStartError:
        tail = self.log_tail()
        reason = f"{what}; last log lines: {tail}" if tail else f"{what}; it wrote nothing"
        return ServerStartError(f"{self.spec.engine.value} server {reason}", tail, code, reason)

    def log_tail(self) -> str:
        if self._log is not None and self._proc is not None and self._proc.poll() is not None:
            self._log.close()  # its last lines through the pipe and into the file first
        text = self._log.last_text() if self._log is not None else tail_text(self.log_path) if self.log_path else ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-LOG_TAIL_LINES:])

    def counters(self) -> Metrics | None:
        self._check_alive("GET /metrics")
        return scrape(self.url)

    def complete(self, prompt: str, *, max_tokens: int, seed: int, timeout: float, logprobs: int = 0,
                 chat: dict[str, Any] | None = None) -> Completion:
        self._check_alive("POST /v1/completions")
        try:
            return complete(self.url, self.model, prompt, max_tokens=max_tokens, seed=seed, timeout=timeout,
                            logprobs=logprobs, chat=chat)
        except ServerError:
            self._check_alive("POST /v1/completions")
            raise

    def _check_alive(self, during: str) -> None:
        code = self._exited()
        if code is not None:
            raise ServerDiedError(f"{self.spec.engine.value} server died during {during} ({describe_exit(code)}); "
                                  f"last log lines: {self.log_tail()}", returncode=code)

    def log_since(self, offset: int) -> tuple[str, int]:
        if self.log_path is None:
            return "", offset
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(offset)
                data = fh.read(_ANSWER_LIMIT)
        except OSError:
            return "", offset
        return data.decode("utf-8", errors="replace"), offset + len(data)

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after the grace period, then any child that left the group,
        then every process that carries the command's mark (serve_scope.py)."""
        if self._proc is not None:
            stop_group(self._proc, self.stop_grace)
        if self._scope is not None:
            # What left the group and the tree (a daemon, a double-forked helper) still carries the mark.
            self._scope.stop(self.stop_grace)
        if self._log is not None:
            self._log.close()
            self._log = None


class AttachedServer:
    """A server someone else started: measured where it runs, never started or stopped."""

    def __init__(self, spec: EngineSpec, url: str, model: str) -> None:
        self.spec = spec
        self.url = url
        self.model = model
        self.command: list[str] = []
        self.log_path: Path | None = None

    @property
    def pid(self) -> int | None:
        return None

    def start(self) -> None:
        model, why = served_model(self.url)
        if model is None:
            raise ServerStartError(f"{self.url}: /v1/models does not answer ({why})")

    def counters(self) -> Metrics | None:
        return scrape(self.url)

    def complete(self, prompt: str, *, max_tokens: int, seed: int, timeout: float, logprobs: int = 0,
                 chat: dict[str, Any] | None = None) -> Completion:
        return complete(self.url, self.model, prompt, max_tokens=max_tokens, seed=seed, timeout=timeout,
                        logprobs=logprobs, chat=chat)

    def log_since(self, offset: int) -> tuple[str, int]:
        return "", offset

    def stop(self) -> None:
        pass  # not ours to stop


# -- finding what runs at a URL ----------------------------------------------------------------------

_PREFIX_ENGINES = {"llamacpp": Engine.llama_cpp, "vllm": Engine.vllm, "sglang": Engine.sglang}


@dataclass(frozen=True)
class Identity:
    """What answers at a URL: the engine, the model it serves, its /metrics page (None: it has none)."""

    url: str
    engine: Engine
    model: str
    metrics: Metrics | None
    version: str


def identify(url: str, owners: dict[str, Engine]) -> Identity:
    """The engine at ``url``, from its /metrics prefix, /v1/models owner or llama-server's /props;
    SourceError in one line when it is not an OpenAI-compatible LLM server."""
    url, _ = endpoint_url(url)
    try:
        answer = request("GET", url + "/v1/models", timeout=IDENTIFY_TIMEOUT_S)
    except HttpFailure as exc:
        # Said as it is (TLS, a redirect, no answer in time), not as "not a server".
        raise SourceError(f"{url}: GET /v1/models: {exc.reason}") from None
    model, owner = _model_of(answer)  # the owner, or why there is no model
    if model is None:
        status, body = http_get(url + "/", 5.0)
        seen = "nothing answers there" if status == 0 else f"GET / -> HTTP {status}{' ' + repr(body[:40]) if body else ''}"
        raise SourceError(f"{url}: not an OpenAI-compatible LLM server (GET /v1/models: {owner}; {seen})")
    metrics = scrape(url)
    engine = (_PREFIX_ENGINES.get(metrics.source) if metrics is not None else None) or owners.get(owner or "")
    if engine is None:
        props = _json(http_get(url + "/props", 5.0)[1])
        if isinstance(props, dict) and "default_generation_settings" in props:
            engine = Engine.llama_cpp
    if engine is None:
        raise SourceError(f"{url}: an OpenAI-compatible server (model {model}, owned by {owner or 'nobody'}) that is not "
                          "llama-server, vLLM or SGLang by its /metrics, /v1/models or /props")
    return Identity(url, engine, model, metrics, engine_version(url, engine))


def engine_version(url: str, engine: Engine) -> str:
    """The engine's version as it reports it (vLLM /version, SGLang /get_server_info, llama-server /props)."""
    if engine is Engine.llama_cpp:
        props = _json(http_get(url + "/props", 5.0)[1])
        return str(props.get("build_info", "")) if isinstance(props, dict) else ""
    doc = _json(http_get(url + ("/version" if engine is Engine.vllm else "/get_server_info"), 5.0)[1])
    return str(doc.get("version", "")) if isinstance(doc, dict) else ""
