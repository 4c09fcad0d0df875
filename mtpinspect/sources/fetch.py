"""One bounded, timed, retried HTTP request to the Hub: every Hub read of a command goes through ``fetch``.

huggingface_hub's shared client sets no timeout and reads whole bodies into memory. A Hub (or a proxy
in front of it) that stalls, trickles, answers 5xx for a moment, ignores Range or sends a gzip bomb
must still end in a verdict or in one line, in bounded time and memory. So each request here
- waits at most ``timeout`` seconds to connect and for each next piece of the answer, and never runs
  past the command's ``deadline`` (a trickle that never trips the timeout still ends);
- is retried after HTTP 429, 502, 503, 504 or a dropped connection, ``retries`` times, waiting 1, 2,
  4... seconds, or what a Retry-After header asks when that is at most RETRY_AFTER_CAP; a stall is not
  retried (it already cost ``timeout`` seconds); the wait holds back every request of the command (its
  Clock), not only the one retried: the Hub rate-limits a client, not a file;
- reads at most ``limit`` body bytes (after inflating a gzip answer), then closes the connection;
- follows at most MAX_REDIRECTS redirects itself, each hop a request of its own that passes the
  command's wave gate (sources/waves.py) and is counted, as the server sees it; the Authorization
  header is not sent to another origin (the Hub's CDN), as httpx does. As huggingface_hub does, only a
  file download (``to_cdn``: resolve/ URLs) may be redirected to another host; an API answer (listing,
  search) redirected elsewhere, a redirect to a scheme other than http(s) or from https down to http
  is one line that names the Location. The answer says where it came from, so that the next read of
  the same file goes there directly.
huggingface_hub still makes the URLs, the auth headers and the error classes (hf_raise_for_status),
and its session carries the requests. Its own retry loop (http_backoff: 5 retries, 1-8 s waits) is
not on this path, so the retries here are the only ones and the total stays bounded.
"""

from __future__ import annotations

import socket
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from mtpinspect.errors import SourceError, shown
from mtpinspect.sources.policy import MAX_BACKOFF, RETRY_AFTER_CAP, Clock
from mtpinspect.sources.reader import ByteMeter
from mtpinspect.sources.waves import Waves

if TYPE_CHECKING:
    import httpx2

RETRIED_STATUS = frozenset({429, 502, 503, 504})
ERROR_BODY_LIMIT = 64 * 1024  # what an error answer may send for its message
MAX_REDIRECTS = 5  # the Hub redirects a file once (to its CDN), a renamed repo once more
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Answer:
    """A 2xx answer: its status, headers and at most ``limit`` body bytes (``complete``: all of them);
    ``url`` and ``sent`` are where it came from after any redirect, and the headers sent there."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    complete: bool
    url: str
    sent: Mapping[str, str]


@dataclass(frozen=True)
class _Request:
    method: str
    url: str
    headers: Mapping[str, str]
    clock: Clock
    meter: ByteMeter
    waves: Waves
    what: str  # the thing, in messages: "org/name listing", "org/name/config.json"
    to_cdn: bool = False  # a file download: may be redirected to another host (the Hub's CDN)

    @property
    def shown(self) -> str:
        """The request as a message shows it: method, path and query (no host), and the byte range."""
        split = urlsplit(self.url)
        text = f"{self.method} {split.path}" + (f"?{split.query}" if split.query else "")
        span = next((v for k, v in self.headers.items() if k.lower() == "range"), None)
        return f"{text}, {span.replace('=', ' ')}" if span else text

    def error(self, problem: str) -> SourceError:
        return SourceError(f"{self.what}: {problem}")


def fetch(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    clock: Clock,
    meter: ByteMeter,
    waves: Waves,
    what: str,
    limit: int,
    to_cdn: bool = False,
) -> Answer:
    """One request, retried as the policy says; every hop and attempt passes ``waves``' gate and is
    counted in ``meter``. ``what`` names the thing in messages (repo/file). ``to_cdn``: a file download,
    which the Hub may redirect to another host (its CDN); any other request stays on its origin.

    A 4xx (or a 5xx that is not retried) raises huggingface_hub's error for it (hf_raise_for_status);
    a stall, the deadline, a transient failure that outlasts the retries, or an encoding we do not
    read raise SourceError naming ``what`` and the request.
    """
    import httpx2

    request = _Request(method, url, headers, clock, meter, waves, what, to_cdn)
    policy = clock.policy
    attempt = 0
    while True:
        attempt += 1
        clock.wait_turn()
        if clock.left() <= 0:
            raise _past_deadline(request)
        try:
            outcome = _attempt(request, limit, last=attempt > policy.retries)
        except httpx2.TimeoutException:
            if clock.left() <= 0:
                raise _past_deadline(request) from None
            raise request.error(
                f"no answer from the Hub for {policy.timeout:g} s ({request.shown}); the server stalled "
                "(raise --timeout or MTPINSPECT_TIMEOUT if it is only slow)"
            ) from None
        except (httpx2.InvalidURL, UnicodeError) as exc:  # a Location httpx cannot send (a host name IDNA refuses)
            raise request.error(f"the Hub's answer leads to an address that cannot be requested ({exc}; "
                                f"{request.shown})") from None
        except (httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
            if attempt > policy.retries or _name_unknown(exc):
                raise request.error(
                    f"cannot reach the Hub at {urlsplit(url).netloc} ({type(exc).__name__}: {exc}; "
                    f"{_attempts(attempt)}, {request.shown})"
                ) from None
            outcome = None
        if isinstance(outcome, Answer):
            return outcome
        delay = outcome if outcome is not None else min(MAX_BACKOFF, policy.backoff * 2 ** (attempt - 1))
        if delay >= clock.left():
            raise request.error(
                f"the Hub asks to wait {delay:g} s before retrying, past the {policy.deadline:g} s deadline "
                f"({request.shown}); try again later or raise --deadline"
            )
        clock.pause(delay)


def _attempt(request: _Request, limit: int, *, last: bool) -> Answer | float | None:
    """The answer; or, for a status worth retrying, the wait its Retry-After asks (None: the usual backoff)."""
    import httpx2
    from huggingface_hub.utils import get_session

    clock = request.clock
    url, headers = request.url, dict(request.headers)
    for _ in range(MAX_REDIRECTS + 1):
        request.meter.count_request(request.waves.gate())
        if clock.left() <= 0:
            raise _past_deadline(request)
        timeout = httpx2.Timeout(min(clock.policy.timeout, max(clock.left(), 0.001)))
        with get_session().stream(request.method, url, headers=headers, timeout=timeout, follow_redirects=False) as resp:
            location = resp.headers.get("location")
            if resp.status_code not in _REDIRECT_STATUS or not location:
                return _answer(request, resp, limit, last=last, url=url, sent=headers)
            _read_body(resp, request, ERROR_BODY_LIMIT)  # counted: the server counts what it sent
        try:
            target = urljoin(url, location)
            refused = _redirect_refused(url, target, to_cdn=request.to_cdn)
        except ValueError:  # urljoin's own refusal: "http://[::1"
            target, refused = location, "not an http(s) address"
        if refused:
            raise request.error(f"the Hub redirected {request.shown} to {shown(target)}: {refused}; not following it")
        headers = redirect_headers(headers, url, target)
        url = target
    raise request.error(f"more than {MAX_REDIRECTS} redirects ({request.shown})")


def _redirect_refused(source: str, target: str, *, to_cdn: bool) -> str | None:
    """Why a redirect from ``source`` to ``target`` is not followed, or None. huggingface_hub follows only
    relative redirects for its API and lets a download go to the CDN; a token never goes along to another
    host either way (redirect_headers)."""
    if len(target) > MAX_LOCATION:
        return f"an address of {len(target):,} characters"
    a, b = urlsplit(source), urlsplit(target)
    try:
        ports = (a.port or _PORTS.get(a.scheme), b.port or _PORTS.get(b.scheme))
    except ValueError:  # a port that is not a number
        return "not an http(s) address"
    if b.scheme not in _PORTS or not b.hostname:
        return "not an http(s) address"
    if (a.scheme, b.scheme) == ("https", "http"):
        return "a downgrade from https to http"
    upgrade = (a.scheme, b.scheme) == ("http", "https") and ports[1] == 443
    if a.hostname != b.hostname or (ports[0] != ports[1] and not upgrade):
        return None if to_cdn else f"another host than {a.netloc} (only a file download may go to the Hub's CDN)"
    return None


_PORTS = {"http": 80, "https": 443}
# A CDN's signed address is a few hundred characters; httpx refuses past 65,536 with a traceback.
MAX_LOCATION = 16 * 1024


def redirect_headers(headers: Mapping[str, str], source: str, target: str) -> dict[str, str]:
    """The headers of a request sent on to ``target``: no Authorization to another origin (httpx's rule:
    a token for the Hub is not the CDN's business), except an http -> https upgrade of the same host."""
    a, b = urlsplit(source), urlsplit(target)
    upgrade = (a.scheme, b.scheme) == ("http", "https") and a.hostname == b.hostname and b.port in (None, 443)
    if (a.scheme, a.netloc) == (b.scheme, b.netloc) or upgrade:
        return dict(headers)
    return {k: v for k, v in headers.items() if k.lower() != "authorization"}


def _answer(request: _Request, resp: httpx2.Response, limit: int, *, last: bool, url: str,
            sent: Mapping[str, str]) -> Answer | float | None:
    """What one final (not redirected) response gives: the answer, or the wait before a retry."""
    import httpx2
    from huggingface_hub.utils import hf_raise_for_status

    clock = request.clock
    status = resp.status_code
    if status in RETRIED_STATUS:
        retry_after = _retry_after(resp.headers.get("retry-after"))
        if status == 429 and retry_after is not None and retry_after > RETRY_AFTER_CAP:
            raise request.error(
                f"rate limited (HTTP 429): the Hub asks to retry after {retry_after:g} s, more than the "
                f"{RETRY_AFTER_CAP:g} s mtpinspect waits ({request.shown}); try again later"
            )
        if last:
            raise request.error(f"HTTP {status} from the Hub, {_attempts(clock.policy.retries + 1)} ({request.shown}); "
                                "try again later, or raise --retries")
        return retry_after
    if status >= 400:
        body, _ = _read_body(resp, request, ERROR_BODY_LIMIT)
        # huggingface_hub builds its error from a bounded copy of the answer.
        plain = {k: v for k, v in resp.headers.items() if k.lower() not in ("content-encoding", "content-length")}
        hf_raise_for_status(httpx2.Response(status, headers=plain, content=body, request=resp.request))
    if not 200 <= status < 300:
        raise request.error(f"unexpected HTTP {status} from the Hub ({request.shown})")
    body, complete = _read_body(resp, request, limit)
    return Answer(status, resp.headers, body, complete, url, sent)


def _read_body(resp: httpx2.Response, request: _Request, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the (inflated) body, and whether that was all of it."""
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        inflater = zlib.decompressobj(wbits=47)  # gzip or zlib framing, told apart by the header
    elif encoding in ("", "identity"):
        inflater = None
    else:
        raise request.error(f"the Hub answered with Content-Encoding '{encoding}', which mtpinspect does not read ({request.shown})")
    chunks: list[bytes] = []
    got = 0
    for raw in resp.iter_raw():
        request.meter.add(len(raw))
        if request.clock.left() <= 0:
            raise _past_deadline(request)
        while raw:
            if inflater is None:
                piece, raw = raw[: limit + 1 - got], b""
            else:
                try:
                    piece = inflater.decompress(raw, limit + 1 - got)
                except zlib.error as exc:
                    raise request.error(f"the Hub sent a corrupt {encoding} body ({exc}; {request.shown})") from None
                raw = inflater.unconsumed_tail
            chunks.append(piece)
            got += len(piece)
            if got > limit:
                return b"".join(chunks)[:limit], False
            if inflater is not None and inflater.eof:
                # Whatever follows the end of the stream is not part of the answer: not read, not kept.
                return b"".join(chunks), True
            if not piece:
                break
    return b"".join(chunks), True


def _retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After header asks for: delta-seconds or an HTTP date."""
    import email.utils  # only when a server asks to wait

    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _name_unknown(exc: BaseException) -> bool:
    """The host name does not resolve (EAI_NONAME): a fact about this machine's network, not a passing
    failure, so retrying it only delays the one line (8 s with the default backoff)."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain is short; bounded all the same
        if seen is None:
            return False
        if isinstance(seen, socket.gaierror) and seen.errno == socket.EAI_NONAME:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _past_deadline(request: _Request) -> SourceError:
    if request.clock.stopped:
        return request.error(f"not read: the command was interrupted ({request.shown})")
    return request.error(
        f"the Hub requests of this command ran past their {request.clock.policy.deadline:g} s deadline ({request.shown}); "
        "raise --deadline or MTPINSPECT_DEADLINE if the Hub is only slow"
    )
