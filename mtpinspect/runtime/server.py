"""One llama-server process on 127.0.0.1: start it, wait until it is ready, send requests, stop it.

Use it as a context manager: whatever happens in the block (an error, Ctrl-C), the server and every
process it started are terminated when the block ends. The server runs in its own process group so a
terminal's Ctrl-C reaches only mtpinspect, which then stops the server in order (SIGTERM, a grace
period, SIGKILL). Its stdout and stderr go to a log file, which is where the reasons for a failed
start and the draft acceptance lines are read from.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from mtpinspect.errors import ServerError, UsageError
from mtpinspect.runtime.find import ServerBinary
from mtpinspect.runtime.flags import HOST as HOST_FLAG
from mtpinspect.runtime.flags import LAUNCHER_FLAGS, METRICS, MODEL, PARALLEL, PORT, ServerArgs
from mtpinspect.runtime.http import Answer, Cancel, HttpFailure, request
from mtpinspect.runtime.logs import failure_reason, last_line
from mtpinspect.runtime.metrics import Metrics, parse_metrics
from mtpinspect.runtime.process import die_with_parent, stop_group, tree_cpu_seconds
from mtpinspect.runtime.server_log import ServerLog
from mtpinspect.runtime.timeouts import SILENCE_TIMEOUT_S

HOST = "127.0.0.1"
_POLL_S = 0.1
# /health is polled often at first (the tiny model is up in 20 ms) and less as the wait grows, so the
# time from ready to noticed stays within a tenth of the wait, and within _POLL_S.
_FIRST_POLL_S = 0.005
_LOG_TAIL_LINES = 40
_PORT_ATTEMPTS = 3
_FIRST_SIGNAL_WAIT_S = 2.0
# Logged by a slot when it is released, after the request's timing and draft acceptance lines.
REQUEST_DONE = re.compile(r"stop processing: n_tokens")


class ServerProcessError(ServerError):
    """A server process that failed: the one-line message, plus what its log says for a closer look."""

    def __init__(self, message: str, log_tail: str = "", returncode: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail
        self.returncode = returncode
        self.reason = reason or message


class ServerStartError(ServerProcessError):
    """The server exited or did not become ready; the message is the reason read from its log."""


class ServerDiedError(ServerProcessError):
    """A request was sent to a server that has exited (crashed, killed, out of memory)."""


@dataclass(frozen=True)
class Completion:
    """The answer to one POST /completion."""

    text: str
    timings: dict
    raw: dict
    predicted_per_second: float
    prompt_per_second: float
    predicted_n: int
    draft_n: int
    draft_n_accepted: int
    wall_seconds: float = 0.0
    # A streamed request: seconds from sending it to its first generated token, as the client saw it
    # (queueing, tokenization, the prompt and the first decode step); None when not streamed.
    first_token_seconds: float | None = None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def describe_exit(returncode: int | None) -> str:
    """"exit code 1" or "killed by SIGKILL"."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _complete_utf8(data: bytes) -> int:
    """Length of the prefix that does not end inside a UTF-8 sequence (the rest is still being written)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":
            return exc.start
    return len(data)


def _answer_text(raw: dict) -> str:
    """The generated text of a /completion answer (``content``) or a chat answer (reasoning, then content)."""
    choices = raw.get("choices")
    if not isinstance(choices, list):
        return str(raw.get("content", ""))
    message = (choices[0] if choices and isinstance(choices[0], dict) else {}).get("message") or {}
    return str(message.get("reasoning_content") or "") + str(message.get("content") or "")


def _events(body: bytes) -> list[dict]:
    """The JSON objects of a server-sent event stream (``data: {...}`` lines; ``[DONE]`` and others skipped)."""
    events = []
    for line in body.splitlines():
        if not line.startswith(b"data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _event_text(event: dict) -> str:
    """The generated text one streamed event carries: /completion's ``content``, a chat chunk's delta
    (reasoning and answer)."""
    choices = event.get("choices")
    if not isinstance(choices, list):
        return str(event.get("content") or "")
    delta = (choices[0] if choices and isinstance(choices[0], dict) else {}).get("delta") or {}
    return str(delta.get("reasoning_content") or "") + str(delta.get("content") or "")


def is_token_event(line: bytes) -> bool:
    """Does this line of a stream carry generated text (the first token, when it is the first)? A chat
    stream opens with a chunk that only names the role, which is not a token."""
    events = _events(line)
    return bool(events) and bool(_event_text(events[0]))


def stream_answer(body: bytes, path: str) -> tuple[dict, str]:
    """A streamed answer as one: its last event that carries ``timings`` (llama-server sends them with the
    final event of both endpoints), and the text of all events."""
    events = _events(body)
    if not events:
        raise ServerError(f"llama-server: {path} streamed no JSON event: {body[:80]!r}")
    if "error" in events[-1]:
        error = events[-1]["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ServerError(f"llama-server: POST {path} failed mid-stream: {message}")
    final = next((e for e in reversed(events) if isinstance(e.get("timings"), dict)), events[-1])
    return final, "".join(_event_text(e) for e in events)


class LlamaServer:
    """A llama-server child process serving one model with one set of arguments."""

    def __init__(
        self,
        binary: ServerBinary,
        model: Path,
        args: ServerArgs | Sequence[str] = (),
        *,
        log_path: Path,
        startup_timeout: float = 120.0,
        silence_timeout: float = SILENCE_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        stop_grace: float = 5.0,
    ) -> None:
        args = args if isinstance(args, ServerArgs) else ServerArgs.of(args)
        taken = args.present(LAUNCHER_FLAGS)
        if taken:
            raise UsageError(
                f"llama-server arguments: {', '.join(taken)} cannot be passed through "
                "(mtpinspect sets the model, 127.0.0.1 and a free port itself)"
            )
        self.binary = binary
        self.model = Path(model)
        self.args = args
        self.log_path = Path(log_path)
        self.startup_timeout = startup_timeout
        self.silence_timeout = silence_timeout
        self.stop_grace = stop_grace
        self.env = dict(env) if env is not None else None
        self.port = 0
        self.command: list[str] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: ServerLog | None = None
        self._stopped = False

    # -- lifecycle -----------------------------------------------------------------------------

    def _build_command(self) -> list[str]:
        command = [str(self.binary.path), *MODEL.spelled(self.model), *HOST_FLAG.spelled(HOST),
                   *PORT.spelled(self.port), *METRICS.spelled()]
        # One slot: requests are measured one at a time and per-slot stats must not mix.
        if not self.args.has(PARALLEL):
            command += PARALLEL.spelled(1)
        return command + list(self.args)

    def start(self) -> None:
        """Launch the server and wait for GET /health to say ok; ServerStartError if it exits or times out."""
        if self._proc is not None:
            raise ServerError("llama-server: start() called twice on the same LlamaServer")
        for attempt in range(_PORT_ATTEMPTS):
            try:
                self._launch()
                self._wait_ready()
                return
            except ServerStartError as exc:
                self.stop()
                # Another program may take the free port between our probe and the server's bind.
                if "couldn't bind" not in str(exc) or attempt == _PORT_ATTEMPTS - 1:
                    raise
                self._proc = None
            except BaseException:
                self.stop()
                raise

    def _launch(self) -> None:
        self._stopped = False
        self.port = free_port()
        self.command = self._build_command()
        self._log = ServerLog(self.log_path)  # capped: head and tail (server_log.py)
        env = {**os.environ, **self.env} if self.env is not None else None
        try:
            self._proc = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=os.name != "nt",
                preexec_fn=die_with_parent(),
            )
        except OSError as exc:
            self._close_log()
            raise ServerError(f"{self.binary.path}: cannot run it: {exc.strerror or exc}") from None
        self._log.started()

    def _wait_ready(self) -> None:
        began = time.monotonic()
        deadline = began + self.startup_timeout
        activity, active_at = self._activity(), time.monotonic()
        while True:
            code = self.returncode
            if code is not None:
                text = self.read_log()
                reason = failure_reason(text) or f"last log line: {last_line(text)}"
                raise ServerStartError(
                    f"llama-server failed to start ({describe_exit(code)}): {reason}", self._tail(text), code, reason
                )
            if self._health_ok():
                return
            now, current = time.monotonic(), self._activity()
            if current != activity:
                activity, active_at = current, now
            elif now - active_at > self.silence_timeout:
                text = self.read_log()
                reason = f"wrote nothing and used no CPU for {self.silence_timeout:g} s (hung?); last log line: {last_line(text)}"
                raise ServerStartError(f"llama-server not ready: {reason}", self._tail(text), reason=reason)
            if now > deadline:
                text = self.read_log()
                raise ServerStartError(
                    f"llama-server not ready after {self.startup_timeout:g} s; last log line: {last_line(text)}", self._tail(text)
                )
            time.sleep(min(_POLL_S, max(_FIRST_POLL_S, (now - began) / 10)))

    def _activity(self) -> tuple[int, float]:
        """Log size and CPU seconds of the server's process tree: a loading server moves one of them."""
        try:
            size = self._log.received if self._log is not None else 0  # all it wrote, past the log's cap too
        except OSError:
            size = 0
        return size, tree_cpu_seconds(self._proc.pid) if self._proc is not None else 0.0

    def _health_ok(self) -> bool:
        try:
            answer = request("GET", self.url + "/health", timeout=2.0)
            doc = json.loads(answer.body or b"{}")
        except (HttpFailure, ValueError, RecursionError):
            return False  # not listening yet
        # 503 "Loading model" until the weights are in.
        return answer.status == 200 and isinstance(doc, dict) and doc.get("status") == "ok"

    def stop(self) -> None:
        """Terminate the server and all its children: SIGTERM (twice: llama-server waits for requests in
        flight after the first), then SIGKILL after the grace period; children that left the group
        (router mode spawns servers) one by one."""
        proc = self._proc
        if proc is None:
            self._close_log()
            return
        self._stopped = True
        stop_group(proc, self.stop_grace, nudge=_FIRST_SIGNAL_WAIT_S)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- state ---------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise ServerError("llama-server: not started")
        return self._proc.pid

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def read_log(self) -> str:
        log = self._log
        if log is not None and self.returncode is not None:
            self._close_log()  # its last lines (the crash) through the pipe and into the file first
        try:
            data = self.log_path.read_bytes()
            if log is not None:
                data += log.unwritten()  # past the cap: its last lines, not (yet) in the file
            return data.decode("utf-8", errors="replace")
        except OSError:
            return ""

    def log_since(self, offset: int) -> tuple[str, int]:
        """New log text since a byte offset, and the offset to pass next time."""
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except OSError:
            return "", offset
        end = _complete_utf8(data)
        return data[:end].decode("utf-8", errors="replace"), offset + end

    def wait_for_log(
        self, offset: int, pattern: re.Pattern[str] = REQUEST_DONE, timeout: float = 10.0
    ) -> tuple[str, int]:
        """Like log_since, but waits until the new text matches `pattern` (or the timeout passes).

        llama-server writes its log from a thread, a moment after it answers; by default this waits
        for the slot's "stop processing" line, which follows a request's timing and draft lines.
        """
        deadline = time.monotonic() + timeout
        text, end = self.log_since(offset)
        while not pattern.search(text) and time.monotonic() < deadline and self.alive():
            time.sleep(0.01)
            more, end = self.log_since(end)
            text += more
        return text, end

    @staticmethod
    def _tail(text: str) -> str:
        return "\n".join(text.splitlines()[-_LOG_TAIL_LINES:])

    # -- requests ------------------------------------------------------------------------------

    def _died(self, during: str) -> ServerDiedError:
        text = self.read_log()
        reason = failure_reason(text) or f"last log line: {last_line(text)}"
        code = self.returncode
        return ServerDiedError(
            f"llama-server (pid {self.pid}) died during {during} ({describe_exit(code)}): {reason}",
            self._tail(text),
            code,
            reason,
        )

    def _wait_exit(self, seconds: float) -> bool:
        # A killed server closes its sockets a moment before the OS reports its exit.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.returncode is not None:
                return True
            time.sleep(0.02)
        return self.returncode is not None

    def _request(self, method: str, path: str, body: dict | None, timeout: float, *, cancel: Cancel | None = None,
                 first: Callable[[bytes], bool] | None = None) -> Answer:
        if not self.alive():
            if self._proc is None or self._stopped:
                raise ServerError(f"llama-server: {method} {path} sent to a server that is not running (never started or stopped)")
            raise self._died(f"{method} {path}")
        data = json.dumps(body).encode() if body is not None else None
        try:
            answer = request(method, self.url + path, timeout=timeout, body=data,
                             headers={"Content-Type": "application/json"}, cancel=cancel, first=first)
        except HttpFailure as exc:
            if exc.kind == "cancelled":
                raise ServerError(f"llama-server: {method} {path} cancelled: the measurement was stopped") from None
            if self._stopped:
                raise ServerError(f"llama-server: {method} {path} interrupted: the server was stopped") from None
            if exc.kind != "too-big" and self._wait_exit(2.0):
                raise self._died(f"{method} {path}") from None
            if exc.kind == "timeout":
                raise ServerError(f"llama-server: {method} {path} got no whole answer within {timeout:g} s") from None
            raise ServerError(f"llama-server: {method} {path} failed: {exc.reason}") from None
        if answer.status >= 400:
            payload = answer.body.decode("utf-8", errors="replace")
            try:
                message = json.loads(payload)["error"]["message"]
            except (ValueError, KeyError, TypeError, RecursionError):
                message = payload.strip()[:200] or f"HTTP {answer.status}"
            raise ServerError(f"llama-server: {method} {path} -> HTTP {answer.status}: {message}")
        return answer

    def complete(
        self,
        prompt: str,
        *,
        n_predict: int,
        seed: int = 42,
        temperature: float = 0.0,
        timeout: float = 600.0,
        stream: bool = False,
        cancel: Cancel | None = None,
        **extra: Any,
    ) -> Completion:
        """POST /completion with the prompt cache off, so every request does the same work; ``stream``
        reads the answer as it is generated and times its first token."""
        body = {"prompt": prompt, "n_predict": n_predict, **_same_work(seed, temperature), **extra}
        return self._timed("/completion", body, timeout, stream, cancel)

    def chat(
        self,
        prompt: str,
        *,
        n_predict: int,
        seed: int = 42,
        temperature: float = 0.0,
        timeout: float = 600.0,
        stream: bool = False,
        cancel: Cancel | None = None,
        **extra: Any,
    ) -> Completion:
        """POST /v1/chat/completions with ``prompt`` as the one user message, formatted by the server's chat
        template (the model's, else its ChatML fallback), prompt cache off; the text is the reasoning block
        (when the server splits it out) followed by the answer."""
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": n_predict,
                **_same_work(seed, temperature), **extra}
        return self._timed("/v1/chat/completions", body, timeout, stream, cancel)

    def _timed(self, path: str, body: dict, timeout: float, stream: bool = False,
               cancel: Cancel | None = None) -> Completion:
        """One request and its answer's figures (llama-server puts ``timings`` in both endpoints' answers,
        streamed or not: in a stream, in its last event)."""
        started = time.perf_counter()
        first_token = None
        if stream:
            answer = self._request("POST", path, {**body, "stream": True}, timeout, cancel=cancel,
                                   first=is_token_event)
            raw, text = stream_answer(answer.body, path)
            first_token = answer.first_seconds
        else:
            payload = self._request("POST", path, body, timeout, cancel=cancel).body
            try:
                raw = json.loads(payload)
            except ValueError:
                raise ServerError(f"llama-server: {path} answered with non-JSON: {payload[:80]!r}") from None
            if not isinstance(raw, dict):
                raise ServerError(f"llama-server: {path} answered with JSON that is not an object")
            text = _answer_text(raw)
        wall = time.perf_counter() - started
        timings = raw.get("timings") or {}
        return Completion(
            text=text,
            timings=timings,
            raw=raw,
            predicted_per_second=float(timings.get("predicted_per_second", 0.0)),
            prompt_per_second=float(timings.get("prompt_per_second", 0.0)),
            predicted_n=int(timings.get("predicted_n", 0)),
            draft_n=int(timings.get("draft_n", 0)),
            draft_n_accepted=int(timings.get("draft_n_accepted", 0)),
            wall_seconds=wall,
            first_token_seconds=first_token,
        )

    def metrics(self, timeout: float = 30.0) -> Metrics:
        """GET /metrics, parsed."""
        return parse_metrics(self._request("GET", "/metrics", None, timeout).body.decode("utf-8", errors="replace"))


def _same_work(seed: int, temperature: float) -> dict[str, Any]:
    """The fields both endpoints take alike: the sampling, and the prompt cache off so every request does the
    same work."""
    return {"seed": seed, "temperature": temperature, "cache_prompt": False}
