"""The one HTTP client every request to an engine goes through (llama-server, vLLM, SGLang; started here
or at an --endpoint): /health, /v1/models, /props, /metrics and completions.

Every request is bounded as a whole, not per socket read: a server that trickles one byte every few
seconds never trips a per-read timeout, so a timer cuts the connection when the request's total time
is up. The answer is read to a cap (16 MiB), and an answer over it is said to be over it. Redirects
are never followed: a redirected POST would arrive as a GET without its prompt, and another host is not
the server the user named; the Location is named instead. Credentials in a URL
(``http://user:pass@host``) go out as a basic Authorization header and are never printed: every URL
this module is given or says is masked by :func:`mask_url`, and the secret is held here only.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from mtpinspect.errors import ServerError, UsageError

# A /metrics page or JSON answer larger than this is not one an engine wrote.
ANSWER_LIMIT = 16 * 1024 * 1024
MASK = "***"
_LOCAL = ("127.0.0.1", "localhost", "::1")
# The secret of each masked URL authority (``user:***@host:port``), so that no string carries it.
_SECRETS: dict[str, str] = {}
_SECRETS_LOCK = threading.Lock()


class HttpFailure(ServerError):
    """No usable HTTP answer: nothing listens, TLS failed, no whole answer in time, a redirect, over the cap.
    ``kind`` says which (refused, timeout, tls, redirect, too-big, bad-answer, cancelled, other)."""

    def __init__(self, shown: str, reason: str, kind: str) -> None:
        super().__init__(f"{shown}: {reason}")
        self.reason = reason
        self.kind = kind


@dataclass(frozen=True)
class Answer:
    """An HTTP status and its body (within the cap); 4xx and 5xx answers are answers too."""

    status: int
    body: bytes
    # A streamed answer: seconds from sending the request to the first line ``first`` accepted (the first
    # token, as the client sees it); None for a request not read as a stream, or a stream without one.
    first_seconds: float | None = None


class Cancel:
    """Requests in flight that one stop cuts at once (Ctrl-C, SIGTERM during concurrent requests).

    Each request registers its socket while it runs; :meth:`cancel` shuts them all, so every thread blocked
    on an answer returns within milliseconds (HttpFailure "cancelled") instead of waiting for the server to
    finish; a request started after the cancel fails at once. The server sees its clients disconnect and
    drops their tasks.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self.cancelled = False

    def register(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.add(sock)
            cancelled = self.cancelled
        if cancelled:
            _shut(sock)

    def unregister(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sockets.discard(sock)  # type: ignore[arg-type]

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (the one masking rule: what is printed or recorded)."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return url.split("@")[-1] if "@" in url else url  # unparseable: keep only what follows any userinfo
    if password is None:
        return url
    user = parts.netloc.rpartition("@")[0].partition(":")[0]
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def hide_secret(url: str) -> str:
    """``mask_url``, keeping the secret (here only) for the requests to that URL."""
    masked = mask_url(url)
    if masked == url:
        return url
    try:
        secret = urllib.parse.urlsplit(url).password or ""
    except ValueError:
        return masked  # not a URL: the caller says so, with what mask_url kept of it
    if secret and secret != MASK:
        with _SECRETS_LOCK:
            _SECRETS[urllib.parse.urlsplit(masked).netloc] = secret
    return masked


def _authorization(parts: urllib.parse.SplitResult) -> dict[str, str]:
    if parts.username is None:
        return {}
    password = parts.password or ""
    if password == MASK:
        with _SECRETS_LOCK:
            password = _SECRETS.get(parts.netloc, password)
    pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(password)}"
    return {"Authorization": "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")}


def _target(parts: urllib.parse.SplitResult) -> tuple[str, int]:
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"{mask_url(parts.geturl())}: the port is not a number from 0 to 65535") from None
    if not parts.hostname:
        raise UsageError(f"{mask_url(parts.geturl())}: no host in the URL")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _connection(parts: urllib.parse.SplitResult, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection to the host (or through the environment's proxy, never for a loopback host) and the
    request target to send on it."""
    host, port = _target(parts)
    path = parts.path or "/"
    target = path + (f"?{parts.query}" if parts.query else "")
    proxy = None if host in _LOCAL or urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(parts.scheme)
    if proxy:
        proxied = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
        proxy_host, proxy_port = _target(proxied)
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=timeout, context=ssl.create_default_context())
            conn.set_tunnel(host, port)
            return conn, target
        netloc = host if ":" not in host else f"[{host}]"
        return http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout), f"http://{netloc}:{port}{target}"
    if parts.scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context()), target
    return http.client.HTTPConnection(host, port, timeout=timeout), target


class _Cutoff:
    """Shuts the connection's socket when the request's time is up, whatever read is blocked on it."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.fired = False
        self._conn = conn
        # The socket, kept: a connection that will close hands it to the response and forgets it.
        self.sock: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        self.fired = True
        sock = self.sock or self._conn.sock
        if sock is not None:
            _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def request(method: str, url: str, *, timeout: float, body: bytes | None = None,
            headers: dict[str, str] | None = None, limit: int = ANSWER_LIMIT, cancel: Cancel | None = None,
            first: Callable[[bytes], bool] | None = None) -> Answer:
    """One request, all of it (connect, send, headers, body) within ``timeout`` seconds; HttpFailure in
    one line (the URL masked) when there is no usable answer, or "cancelled" when ``cancel`` cut it.

    With ``first``, the answer is read line by line as it arrives (a server-sent event stream), and the
    time from sending to the first line ``first`` accepts is the answer's ``first_seconds``."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        raise UsageError(f"{mask_url(url)}: not a URL ({exc})") from None
    # "http://host:8000: GET /metrics", as every line about the request names it.
    shown = f"{mask_url(urllib.parse.urlunsplit(parts[:2] + ('', '', '')))}: {method} {parts.path or '/'}"
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{mask_url(url)}: not an http:// or https:// URL")
    if cancel is not None and cancel.cancelled:
        raise HttpFailure(shown, "cancelled (the measurement was stopped)", "cancelled")
    conn, target = _connection(parts, timeout)
    cutoff = _Cutoff(conn, timeout)
    began = time.monotonic()
    try:
        conn.connect()
        cutoff.sock = conn.sock
        if cancel is not None:
            cancel.register(conn.sock)
        if cutoff.fired:
            raise TimeoutError
        conn.request(method, target, body=body, headers={**(headers or {}), **_authorization(parts)})
        resp = conn.getresponse()
        if 300 <= resp.status < 400:
            location = mask_url(resp.getheader("Location", "") or "")[:300]
            raise HttpFailure(shown, f"HTTP {resp.status} redirect to {location or '(no Location)'}: not followed "
                              "(give the URL the server itself answers at)", "redirect")
        first_seconds = None
        if first is None:
            payload = resp.read(limit + 1)
        else:
            payload, first_seconds = _read_stream(resp, limit, first, began)
        if cancel is not None and cancel.cancelled:
            raise HttpFailure(shown, "cancelled (the measurement was stopped)", "cancelled")
        if cutoff.fired:
            raise TimeoutError
        if len(payload) > limit:
            raise HttpFailure(shown, f"the answer is over {limit // (1024 * 1024)} MiB (the cap): not one an "
                              "engine writes", "too-big")
        return Answer(resp.status, payload, first_seconds)
    except HttpFailure:
        raise
    except ssl.SSLError as exc:
        raise HttpFailure(shown, f"TLS failed: {getattr(exc, 'verify_message', None) or exc.reason or exc}", "tls") from None
    except (OSError, http.client.HTTPException) as exc:
        if cancel is not None and cancel.cancelled:
            raise HttpFailure(shown, "cancelled (the measurement was stopped)", "cancelled") from None
        if cutoff.fired or isinstance(exc, TimeoutError) or time.monotonic() - began >= timeout:
            raise HttpFailure(shown, f"no whole answer within {timeout:g} s", "timeout") from None
        if isinstance(exc, ConnectionRefusedError):
            raise HttpFailure(shown, "nothing answers there (connection refused)", "refused") from None
        if isinstance(exc, socket.gaierror):
            raise HttpFailure(shown, f"cannot resolve the host ({exc.strerror or exc})", "other") from None
        if isinstance(exc, http.client.HTTPException):
            raise HttpFailure(shown, f"not an HTTP answer ({type(exc).__name__})", "bad-answer") from None
        raise HttpFailure(shown, f"{getattr(exc, 'strerror', None) or exc}", "other") from None
    finally:
        cutoff.cancel()
        if cancel is not None:
            cancel.unregister(cutoff.sock)
        conn.close()


def _read_stream(resp: http.client.HTTPResponse, limit: int, first: Callable[[bytes], bool],
                 began: float) -> tuple[bytes, float | None]:
    """A streamed body read line by line, to the cap, and when its first accepted line arrived."""
    lines: list[bytes] = []
    size = 0
    first_seconds = None
    while size <= limit:
        line = resp.readline(limit + 1 - size)
        if not line:
            break
        if first_seconds is None and first(line):
            first_seconds = time.monotonic() - began
        lines.append(line)
        size += len(line)
    return b"".join(lines), first_seconds
