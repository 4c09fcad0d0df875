"""A stand-in for a vLLM or SGLang server: the OpenAI completions API, /health, /v1/models and a Prometheus
/metrics page with those engines' own metric names and label sets, for the engine paths of `sweep`
and `diagnose` on a machine without a GPU.

It decodes nothing; it counts like the engine would. Each verification step drafts n tokens and
accepts a known number of them (``ACCEPTED``, cycled, capped at n), so a request's acceptance,
mean length and per-position figures are known in advance. Each step costs a fixed time, so fewer
steps (accepted drafts) are faster, as on a real engine.

Run as the user's server command (what `sweep --serve` starts):
    python tests/enginestub.py vllm --port 8000 --speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'
    python tests/enginestub.py sglang --port 8000 --speculative-algorithm EAGLE --speculative-num-steps 3 ...
or in-process with :func:`serve_in_thread` (what `--endpoint` attaches to).

Metric names and labels as the engines define them: vLLM V1 (vllm/v1/metrics/loggers.py, 0.9-0.11:
``model_name`` and ``engine`` labels, per-position counters labelled ``position``, prometheus_client's
``_total`` and ``_created`` samples); vLLM V0 (``--v0``: no drafts and no per-position counters,
``spec_decode_num_emitted_tokens``); SGLang (python/sglang/srt/metrics/collector.py, 0.5: gauges
``spec_accept_length`` and ``spec_accept_rate`` with a ``model_name`` label, with --enable-metrics only,
and its scheduler's ``Decode batch`` log line).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "stub/mtp-model"
ACCEPTED = (3, 1, 0, 2)  # accepted draft tokens per verification step, cycled
STEP_SECONDS = 0.002
VERSIONS = {"vllm": "0.11.0", "sglang": "0.5.4"}
# What a hostile or broken server does instead of answering honestly (StubState.fault):
FAULTS = {
    "trickle-metrics": "/metrics sends its page one byte every 0.5 s",
    "huge-metrics": "/metrics answers a 17 MiB page",
    "long-position": "/metrics has a per-position sample whose position label has 5,000 digits",
    "counters-jump": "after the first request the draft counters jump by a million",
    "counters-negative": "after the first request the counters are published negative",
    "redirect": "every request is answered 307 to another host",
    "bad-usage": "completions answer usage.completion_tokens as a string",
    "basic-auth": "every request without 'Authorization: Basic' for user:s3cret is answered 401",
}
# What an MTP run whose verification is broken answers instead of the baseline's text (StubState.mtp_output,
# cycled per request): `drift` must judge each a breakdown, not drift.
MTP_OUTPUTS = {
    "loop": "the first five tokens, then one word over and over",
    "empty": "nothing",
    "answer": "the baseline's text with the number of its ninth token changed",
    "flip": "the baseline's text with its ninth token the second choice, a near-tie (drift)",
}
# The log-probabilities a request with "logprobs" gets: each token a clear first choice, except the ninth,
# a near-tie with the second (NEAR_TIE apart).
FIRST_LOGPROB, CLEAR_GAP, NEAR_TIE = -0.1, 2.0, 0.001
AUTH = "Basic dXNlcjpzM2NyZXQ="  # user:s3cret


@dataclass
class StubState:
    engine: str  # "vllm" or "sglang"
    n: int  # draft length; 0: no speculative decoding
    v0: bool = False  # vLLM's V0 counters
    spec_metrics: bool = True  # False: /metrics without any speculative series
    metrics_on: bool = True  # False: no /metrics page (SGLang without --enable-metrics)
    accepted: tuple[int, ...] = ACCEPTED  # accepted draft tokens per step, cycled
    counts: dict[str, float] = field(default_factory=dict)
    per_pos: list[float] = field(default_factory=list)
    gauge_length: float = 0.0
    gauge_rate: float = 0.0
    created: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A hostile server (issue 29): one of FAULTS, or "" for an honest one.
    fault: str = ""
    requests: int = 0  # completions answered
    # With speculative decoding on (n > 0): what each request answers instead, cycled (MTP_OUTPUTS); () honest.
    mtp_output: tuple[str, ...] = ()
    chat_bodies: list[dict] = field(default_factory=list)  # every /v1/chat/completions request's body

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """What a server restart does to its counters: back to zero."""
        with self.lock:
            self.counts = {"drafts": 0.0, "draft_tokens": 0.0, "accepted": 0.0, "generation": 0.0, "prompt": 0.0}
            self.per_pos = [0.0] * self.n
            self.created = time.time()

    def generate(self, prompt: str, max_tokens: int) -> tuple[str, int, float]:
        """Counts one request; returns its text, its token count and its mean length."""
        emitted, steps, accepted = 1, 0, 0
        while emitted < max_tokens:
            j = min(self.accepted[steps % len(self.accepted)], self.n) if self.n else 0
            j = min(j, max_tokens - emitted - 1)
            time.sleep(STEP_SECONDS * (1 + 0.1 * self.n))
            steps += 1
            accepted += j
            emitted += j + 1
            with self.lock:
                if self.n:
                    self.counts["drafts"] += 1
                    self.counts["draft_tokens"] += self.n
                    self.counts["accepted"] += j
                    for position in range(j):
                        self.per_pos[position] += 1
        with self.lock:
            self.counts["generation"] += emitted
            self.counts["prompt"] += len(prompt.split())
            if self.n and steps:
                self.gauge_length = 1 + accepted / steps
                self.gauge_rate = accepted / (steps * self.n)
        words = [f"t{(len(prompt) + i) % 97}" for i in range(emitted)]
        if self.n and self.mtp_output:
            words = _gone_wrong(words, self.mtp_output[self.requests % len(self.mtp_output)])
        return " ".join(words), emitted, (1 + accepted / steps) if steps else 1.0


    def metrics_page(self) -> str:
        with self.lock:
            page = _vllm_page(self) if self.engine == "vllm" else _sglang_page(self)
        if self.fault == "long-position":
            page += f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="{"9" * 5000}"}} 1.0\n'
        elif self.fault == "huge-metrics":
            page = "# " + "x" * (17 << 20) + "\n" + page
        elif self.fault in ("counters-jump", "counters-negative") and self.requests > 1:
            # The warm-up and the first request honest, then counters no engine publishes.
            sign, shift = (-1, 0) if self.fault == "counters-negative" else (1, 1_000_000)
            page = "\n".join(_shifted(line, sign, shift) for line in page.splitlines()) + "\n"
        return page


def _second(word: str) -> str:
    """The stub's second choice after a word's first: the next number."""
    return f"t{(int(word[1:]) + 1) % 97}"


def logprobs_of(text: str, top: int) -> dict[str, Any]:
    """The OpenAI completions API's ``logprobs`` object for the stub's text: its words as tokens."""
    words = text.split(" ") if text else []
    tokens = [w if i == 0 else " " + w for i, w in enumerate(words)]
    tops, offsets, at = [], [], 0
    for i, token in enumerate(tokens):
        gap = NEAR_TIE if i == 8 else CLEAR_GAP
        second = (" " if i else "") + _second(words[i])
        tops.append(dict(list({token: FIRST_LOGPROB, second: FIRST_LOGPROB - gap}.items())[:top]))
        offsets.append(at)
        at += len(token)
    return {"tokens": tokens, "token_logprobs": [FIRST_LOGPROB] * len(tokens), "top_logprobs": tops,
            "text_offset": offsets}

def _gone_wrong(words: list[str], how: str) -> list[str]:
    if how == "empty":
        return []
    if how == "loop":
        return words[:5] + ["again"] * (len(words) - 5)
    changed = list(words)
    if len(changed) > 8:
        changed[8] = _second(changed[8]) if how == "flip" else f"t{(int(changed[8][1:]) + 50) % 97}"
    return changed


def _counter(lines: list[str], name: str, labels: str, value: float, created: float) -> None:
    lines += [f"# HELP {name}_total stub", f"# TYPE {name}_total counter", f"{name}_total{{{labels}}} {value}",
              f"{name}_created{{{labels}}} {created}"]


def _vllm_page(state: StubState) -> str:
    labels = f'engine="0",model_name="{MODEL}"'
    lines = ["# HELP vllm:num_requests_running Number of requests in model execution batches.",
             "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{labels}}} 0.0"]
    _counter(lines, "vllm:prompt_tokens", labels, state.counts["prompt"], state.created)
    _counter(lines, "vllm:generation_tokens", labels, state.counts["generation"], state.created)
    if state.n and state.spec_metrics:
        if not state.v0:
            _counter(lines, "vllm:spec_decode_num_drafts", labels, state.counts["drafts"], state.created)
        _counter(lines, "vllm:spec_decode_num_draft_tokens", labels, state.counts["draft_tokens"], state.created)
        _counter(lines, "vllm:spec_decode_num_accepted_tokens", labels, state.counts["accepted"], state.created)
        if state.v0:
            emitted = state.counts["accepted"] + state.counts["drafts"]
            _counter(lines, "vllm:spec_decode_num_emitted_tokens", labels, emitted, state.created)
        else:
            for position, value in enumerate(state.per_pos):
                _counter(lines, "vllm:spec_decode_num_accepted_tokens_per_pos", f'{labels},position="{position}"',
                         value, state.created)
    return "\n".join(lines) + "\n"


def _sglang_page(state: StubState) -> str:
    labels = f'model_name="{MODEL}"'
    lines: list[str] = []
    _counter(lines, "sglang:prompt_tokens", labels, state.counts["prompt"], state.created)
    _counter(lines, "sglang:generation_tokens", labels, state.counts["generation"], state.created)
    lines += ["# HELP sglang:token_usage The token usage.", "# TYPE sglang:token_usage gauge", f"sglang:token_usage{{{labels}}} 0.0"]
    if state.spec_metrics:
        lines += ["# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.",
                  "# TYPE sglang:spec_accept_length gauge", f"sglang:spec_accept_length{{{labels}}} {state.gauge_length}",
                  "# HELP sglang:spec_accept_rate The average acceptance rate of speculative decoding.",
                  "# TYPE sglang:spec_accept_rate gauge", f"sglang:spec_accept_rate{{{labels}}} {state.gauge_rate}"]
    return "\n".join(lines) + "\n"


def _shifted(line: str, sign: int, shift: int) -> str:
    if line.startswith("vllm:spec_decode_num_") and "_created" not in line:
        name, value = line.rsplit(" ", 1)
        return f"{name} {sign * float(value) + shift}"
    return line


def handler_for(state: StubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: str | dict, content_type: str = "application/json") -> None:
            data = (json.dumps(body) if isinstance(body, dict) else body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _refused(self) -> bool:
            """A fault that answers instead of the endpoint: a redirect, or 401 without the credentials."""
            if state.fault == "redirect":
                self.send_response(307)
                self.send_header("Location", "http://other-host.invalid:8000" + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return True
            if state.fault == "basic-auth" and self.headers.get("Authorization") != AUTH:
                self._send(401, {"detail": "Unauthorized"})
                return True
            return False

        def _trickle(self, page: str) -> None:
            data = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for byte in data[:240]:  # two minutes at most, then the connection drops
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return  # the client gave up
                time.sleep(0.5)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self._refused():
                return
            if self.path == "/metrics" and state.metrics_on and state.fault == "trickle-metrics":
                self._trickle(state.metrics_page())
            elif self.path == "/health":
                self._send(200, "")
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": state.engine}]})
            elif self.path == "/metrics" and state.metrics_on:
                self._send(200, state.metrics_page(), "text/plain; version=0.0.4")
            elif self.path == "/version" and state.engine == "vllm":
                self._send(200, {"version": VERSIONS["vllm"]})
            elif self.path == "/get_server_info" and state.engine == "sglang":
                self._send(200, {"version": VERSIONS["sglang"]})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self._refused():
                return
            if self.path == "/stub/restart":
                state.restart()
                self._send(200, {})
                return
            chat = self.path == "/v1/chat/completions"
            if self.path != "/v1/completions" and not chat:
                self._send(404, {"detail": "Not Found"})
                return
            if chat:
                state.chat_bodies.append(body)
                messages = body.get("messages") or [{}]
                prompt = str(messages[-1].get("content", ""))
            else:
                prompt = str(body.get("prompt", ""))
            text, tokens, mean_length = state.generate(prompt, int(body.get("max_tokens", 16)))
            state.requests += 1
            if state.engine == "sglang" and state.n:
                # The scheduler's interval line, as SGLang 0.5 prints it.
                print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] Decode batch. #running-req: 1, #token: {tokens}, "
                      f"token usage: 0.00, accept len: {mean_length:.2f}, accept rate: {state.gauge_rate:.2f}, "
                      "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0,", flush=True)
            logprobs = logprobs_of(text, int(body["logprobs"])) if body.get("logprobs") else None
            # vLLM's and SGLang's chat answer: the text in choices[0].message (a reasoning parser puts the
            # thinking block in reasoning_content).
            choice = ({"index": 0, "message": {"role": "assistant", "content": text, "reasoning_content": None},
                       "finish_reason": "length"} if chat else
                      {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": "length"})
            self._send(200, {"id": "cmpl-1", "object": "chat.completion" if chat else "text_completion", "model": MODEL,
                             "choices": [choice],
                             "usage": {"prompt_tokens": 3, "total_tokens": tokens + 3,
                                       "completion_tokens": "many" if state.fault == "bad-usage" else tokens}})

    return Handler


def write_prompts(path: Path) -> Path:
    """The two-prompt set (code, English prose) the engine tests sweep with."""
    items = [{"id": "c1", "class": "code", "prompt": "def fibonacci(n):"},
             {"id": "e1", "class": "prose-en", "prompt": "The history of the city"}]
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


class StubServer(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops the SYN of a seventh concurrent client, which connects 1 s later.
    request_queue_size = 64


def serve_in_thread(state: StubState) -> tuple[ThreadingHTTPServer, str]:
    """The stub on a free loopback port, answering from a daemon thread; returns it and its URL."""
    server = StubServer(("127.0.0.1", 0), handler_for(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _draft_length(engine: str, args: argparse.Namespace) -> int:
    if engine == "vllm" and args.speculative_config:
        return int(json.loads(args.speculative_config)["num_speculative_tokens"])
    if engine == "sglang" and args.speculative_algorithm:
        return int(args.speculative_num_steps)
    return 0


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("engine", choices=["vllm", "sglang"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--speculative-config")
    parser.add_argument("--speculative-algorithm")
    parser.add_argument("--speculative-num-steps", default="0")
    parser.add_argument("--speculative-num-draft-tokens")
    parser.add_argument("--speculative-eagle-topk")
    parser.add_argument("--enable-metrics", action="store_true")
    parser.add_argument("--v0", action="store_true")
    parser.add_argument("--exit-at-start", action="store_true", help="fail like a model that does not load")
    parser.add_argument("--load-seconds", type=float, default=0.0, help="answer only after this long")
    parser.add_argument("--fault", choices=sorted(FAULTS), default="", help="answer as a hostile server would")
    parser.add_argument("--mtp-output", default="", help="with MTP on, answer wrong: a comma list of "
                        + ", ".join(MTP_OUTPUTS) + ", cycled per request")
    args = parser.parse_args(argv)
    print(f"stub {args.engine} starting on port {args.port}", flush=True)
    if args.exit_at_start:
        print("ValueError: MTP speculative decoding layer 61 weights missing from checkpoint.", flush=True)
        sys.exit(1)
    time.sleep(args.load_seconds)
    state = StubState(args.engine, _draft_length(args.engine, args), v0=args.v0,
                      metrics_on=args.engine == "vllm" or args.enable_metrics, fault=args.fault,
                      mtp_output=tuple(how for how in args.mtp_output.split(",") if how))
    server = StubServer(("127.0.0.1", args.port), handler_for(state))
    print("Application startup complete.", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
