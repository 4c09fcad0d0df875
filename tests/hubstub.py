"""A loopback stand-in for the Hugging Face Hub, for tests.

The Hub cannot be reached where this project is built and tested, so every remote-path test talks to
this threaded stdlib HTTP server on 127.0.0.1. It implements what huggingface_hub 2.4.0 asks of the
Hub: model_info (with and without a revision, `blobs`, `cardData` parsed from README.md's front matter),
the tree and paths-info APIs, the model search by model-tree tag (`list_models(filter=...)`, pages linked by
a `Link` header), and `resolve` with HEAD and byte ranges, with the error headers that
huggingface_hub turns into its exception classes. It counts every body byte it sends, per repo and
file, which is how a test proves that no weight file was downloaded.

Two options make it behave like the real Hub seen from a user's machine, for benchmarks and for tests
that count round trips:
- `latency`: seconds added to every request before it is answered (the real Hub is 50-150 ms away);
- `lfs_redirect`: `resolve` answers a 302 for LFS files, to a second loopback origin (the "CDN") that
  serves the bytes, as the Hub does; the 302 carries X-Repo-Commit, ETag, X-Linked-Etag and
  X-Linked-Size, which is where huggingface_hub reads a cross-origin file's metadata from.
Every request is logged with its origin, Range, bytes sent and start and end times; `traffic()` turns
a log into requests, bytes, sequential waves and the most requests in flight.

Files given as a `Path` are streamed from disk in chunks and never read whole, so multi-GiB sparse
stand-ins are cheap. Their git/LFS ids are real content hashes up to `HASH_LIMIT` bytes; above that
they are deterministic stand-ins derived from the size and the first and last MiB (hashing the
zeros of a sparse 20 GiB file would take minutes and no client checks them).

It never answers 5xx unless told to: huggingface_hub retries those for seconds, which would make
failures slow. Told to, it misbehaves as real servers and proxies do (`Fault`, `add_fault`): it stalls
before or after the headers, trickles a byte at a time, answers 502/503/429 (with Retry-After) a few
times, ignores Range, sends a wrong Content-Range, or replaces an answer (an HTML page, bad JSON, a
gzip bomb).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import yaml
from huggingface_hub.repocard import REGEX_YAML_BLOCK

HASH_LIMIT = 10 * 1024 * 1024
LFS_MIN_SIZE = 10 * 1024 * 1024
LFS_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".onnx", ".msgpack", ".h5", ".npz")
CHUNK = 1024 * 1024
CARD_HEAD = 64 * 1024  # where a README's front matter must end for the stub to parse it
COMMIT_DATE = "2026-09-01T00:00:00.000Z"

FileSource = Path | bytes
# "hub": the endpoint (API and resolve); "cdn": the origin LFS files are redirected to.
Origin = Literal["hub", "cdn"]
FaultMode = Literal["stall", "stall-body", "trickle", "ignore-range", "content-range", "replace"]


@dataclass(frozen=True)
class RequestRecord:
    """One request the stub answered. `path` is the file in the repo for `resolve` and the CDN, else None.

    `start` is when the request had been read, `end` just before the last write of the reply
    (time.perf_counter seconds): a request the client sends after reading a reply starts after its end.
    """

    method: str
    path: str | None
    range: str | None
    status: int
    nbytes: int
    repo_id: str | None
    url: str
    origin: Origin = "hub"
    start: float = 0.0
    end: float = 0.0


@dataclass(frozen=True)
class Traffic:
    """What a request log adds up to. Requests that overlap in time form one wave; a request that
    starts after every request of the current wave has ended starts the next."""

    requests: int
    bytes: int
    waves: int
    max_in_flight: int
    redirects: int  # 3xx answers (each costs a round trip before the bytes)
    seconds: float  # first start to last end

    def to_dict(self) -> dict[str, int | float]:
        return {
            "requests": self.requests,
            "bytes": self.bytes,
            "waves": self.waves,
            "max_in_flight": self.max_in_flight,
            "redirects": self.redirects,
            "seconds": round(self.seconds, 4),
        }


def waves(records: Sequence[RequestRecord]) -> list[list[RequestRecord]]:
    """The log split into sequential waves, each in start order."""
    result: list[list[RequestRecord]] = []
    wave_end = float("-inf")
    for record in sorted(records, key=lambda r: (r.start, r.end)):
        if record.start >= wave_end:
            result.append([])
        result[-1].append(record)
        wave_end = max(wave_end, record.end) if record.start < wave_end else record.end
    return result


def max_in_flight(records: Sequence[RequestRecord]) -> int:
    """The most requests being answered at one instant (a request ending as another starts is not overlap)."""
    events = sorted([(r.start, 1) for r in records] + [(r.end, -1) for r in records], key=lambda e: (e[0], e[1]))
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


def traffic(records: Sequence[RequestRecord]) -> Traffic:
    return Traffic(
        requests=len(records),
        bytes=sum(r.nbytes for r in records),
        waves=len(waves(records)),
        max_in_flight=max_in_flight(records),
        redirects=sum(1 for r in records if 300 <= r.status < 400),
        seconds=max((r.end for r in records), default=0.0) - min((r.start for r in records), default=0.0),
    )


@dataclass(frozen=True)
class Fault:
    """One way to misbehave, on the requests it matches.

    `where` is "listing" (model_info, with or without a revision), "search" (the pages of a model search by
    the tag base_model:RELATION:REPO, on the base's faults) or a file of the repo (its `resolve`
    URL, GET and HEAD). `times` matching requests misbehave (None: every one); then the stub answers
    normally again, which is how "502, then 200" is made. `after`: only reads of a file that start at or
    past that byte match (the reads after a header's: a tensor's rows).
    - stall: read the request and answer nothing (for `seconds`, or until the stub stops);
    - stall-body: send the real answer's status line and headers, then nothing;
    - trickle: send the real answer one body byte every `seconds`;
    - ignore-range: answer a Range request with 200 and the whole file, as if Range were unknown;
    - content-range: a 206 with other bytes than asked for, `shift` bytes further into the file, and a
      Content-Range that says so (a broken cache or proxy);
    - replace: answer `status` with `headers` and `body` instead (a 502 page, a 429 with Retry-After,
      an HTML login page, JSON of the wrong shape, a gzip bomb with Content-Encoding: gzip).
    """

    mode: FaultMode
    where: str = "listing"
    times: int | None = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 3600.0
    shift: int = 0
    after: int = 0


@dataclass(frozen=True)
class _Blob:
    source: FileSource
    size: int
    git_oid: str
    sha256: str | None  # set for LFS files
    pointer_size: int

    @property
    def etag(self) -> str:
        return self.sha256 or self.git_oid

    def entry(self, path: str) -> dict:
        entry: dict = {"type": "file", "oid": self.git_oid, "size": self.size, "path": path}
        if self.sha256:
            entry["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": self.pointer_size}
        return entry

    def sibling(self, path: str, with_blobs: bool) -> dict:
        sibling: dict = {"rfilename": path}
        if with_blobs:
            sibling.update(size=self.size, blobId=self.git_oid)
            if self.sha256:
                sibling["lfs"] = {"sha256": self.sha256, "size": self.size, "pointerSize": self.pointer_size}
        return sibling

    def chunks(self, start: int, end: int) -> Iterable[bytes]:
        """Bytes [start, end) of the file, in chunks of at most CHUNK bytes."""
        if isinstance(self.source, bytes):
            for offset in range(start, end, CHUNK):
                yield self.source[offset : min(end, offset + CHUNK)]
            return
        with open(self.source, "rb") as handle:
            handle.seek(start)
            remaining = end - start
            while remaining > 0:
                chunk = handle.read(min(CHUNK, remaining))
                if not chunk:
                    return
                remaining -= len(chunk)
                yield chunk


@dataclass(frozen=True)
class _Commit:
    sha: str
    files: Mapping[str, _Blob]

    def directories(self) -> set[str]:
        dirs: set[str] = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return dirs

    def entry(self, path: str) -> dict | None:
        if path in self.files:
            return self.files[path].entry(path)
        if path in self.directories():
            return {"type": "directory", "oid": _git_oid(path.encode()), "size": 0, "path": path}
        return None


@dataclass(frozen=True)
class _Repo:
    repo_id: str
    private: bool
    gated: bool
    commits: Mapping[str, _Commit]  # by sha
    refs: Mapping[str, str]  # branch or tag name -> sha
    card_data: bool = True  # model_info carries README.md's front matter as cardData, as the Hub does
    base_model: tuple[str, str] | None = None  # (relation, base repo id): the model tree's tag
    downloads: int = 0

    @property
    def tags(self) -> list[str]:
        """The model-tree tags the Hub gives a derivative: base_model:BASE and base_model:RELATION:BASE."""
        if self.base_model is None:
            return []
        relation, base = self.base_model
        return [f"base_model:{base}", f"base_model:{relation}:{base}"]

    def resolve(self, revision: str) -> _Commit | None:
        sha = self.refs.get(revision, revision)
        return self.commits.get(sha)


@dataclass(frozen=True)
class _Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes = b""
    blob: _Blob | None = None
    span: tuple[int, int] = (0, 0)  # byte range of `blob` to send
    pace: Fault | None = None  # a stall or trickle fault: how the answer is (not) sent


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _is_lfs(path: str, size: int) -> bool:
    return path.endswith(LFS_SUFFIXES) or size > LFS_MIN_SIZE


def _content_digest(source: FileSource, size: int) -> bytes | None:
    """The whole content when it is small enough to hash, else None."""
    if isinstance(source, bytes):
        return source
    if size <= HASH_LIMIT:
        return source.read_bytes()
    return None


def _stand_in_sha256(source: Path, size: int) -> str:
    digest = hashlib.sha256(b"mtpinspect-hubstub-stand-in\0%d\0" % size)
    with open(source, "rb") as handle:
        digest.update(handle.read(CHUNK))
        handle.seek(max(0, size - CHUNK))
        digest.update(handle.read(CHUNK))
    return digest.hexdigest()


def _make_blob(path: str, source: FileSource) -> _Blob:
    size = len(source) if isinstance(source, bytes) else os.stat(source).st_size
    content = _content_digest(source, size)
    # Files above LFS_MIN_SIZE (== HASH_LIMIT) are always LFS, so a regular file always has content.
    if content is not None and not _is_lfs(path, size):
        return _Blob(source, size, _git_oid(content), None, 0)
    sha256 = hashlib.sha256(content).hexdigest() if content is not None else _stand_in_sha256(Path(source), size)
    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    return _Blob(source, size, _git_oid(pointer), sha256, len(pointer))


def _make_commit(repo_id: str, label: str, files: Mapping[str, FileSource]) -> _Commit:
    return _commit_of(repo_id, label, {path: _make_blob(path, source) for path, source in files.items()})


def _commit_of(repo_id: str, label: str, blobs: Mapping[str, _Blob]) -> _Commit:
    blobs = dict(sorted(blobs.items()))
    digest = hashlib.sha1(f"{repo_id}\0{label}\0".encode())
    for path, blob in blobs.items():
        digest.update(f"{path}\0{blob.etag}\n".encode())
    return _Commit(digest.hexdigest(), blobs)


def _card_data(commit: _Commit) -> dict | None:
    """README.md's YAML front matter, parsed as the Hub does for model_info's cardData."""
    blob = commit.files.get("README.md")
    if blob is None:
        return None
    head = b"".join(blob.chunks(0, min(blob.size, CARD_HEAD))).decode("utf-8", errors="replace")
    match = REGEX_YAML_BLOCK.search(head)
    data = yaml.safe_load(match.group(2)) if match else None
    return data if isinstance(data, dict) else None


def _parse_range(header: str, size: int) -> tuple[int, int] | None | str:
    """[start, end) for a single `bytes=` range; None to ignore the header; "unsatisfiable" for 416."""
    unit, _, spec = header.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return None
    first, _, last = spec.strip().partition("-")
    try:
        if not first:  # suffix range: the last N bytes
            count = int(last)
            return (max(0, size - count), size) if count > 0 and size > 0 else "unsatisfiable"
        start = int(first)
        end = int(last) + 1 if last else size
    except ValueError:
        return None
    if start >= size or end <= start:
        return "unsatisfiable"
    return start, min(end, size)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver listens with a backlog of 5: the kernel queues 6 connections, drops the SYN of a seventh
    # made before the accept thread runs, and the client sends it again 1 s later. Eight readers connecting
    # at once then show the server a late request, a wave of its own (seen in CI as [1, 7, 1, 5]).
    request_queue_size = 64

    def __init__(self, stub: HubStub, origin: Origin) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stub = stub
        self.origin = origin

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Silent: pytest output stays readable."""

    def do_GET(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        start = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        stub, origin = self.server.stub, self.server.origin
        stub._begin()
        try:
            route = stub._route if origin == "hub" else stub._route_cdn
            repo_id, file_path, reply = route(self.command, self.path, self.headers, body)
            reply = stub._misbehave(repo_id, file_path if file_path is not None else _listing(self.command, self.path), reply)
        except Exception as exc:  # a stub bug must fail fast, never as a retried 5xx
            repo_id, file_path = None, None
            reply = _error(400, "StubError", f"hub stub error: {type(exc).__name__}: {exc}")
        if stub.latency > 0:
            time.sleep(stub.latency)

        logged: list[RequestRecord] = []

        def log(nbytes: int) -> RequestRecord:
            record = RequestRecord(
                method=self.command,
                path=file_path,
                range=self.headers.get("Range"),
                status=reply.status,
                nbytes=nbytes,
                repo_id=repo_id,
                url=self.path,
                origin=origin,
                start=start,
                end=time.perf_counter(),
            )
            logged.append(record)
            stub._record(record)
            return record

        try:
            self._send(reply, log)
        finally:
            if not logged:  # the client went away before the reply was written
                log(0)

    def _send(self, reply: _Reply, log: Callable[[int], RequestRecord]) -> None:
        """Send the reply. `log(body bytes)` is called just before the last write, so a client that has
        read the whole reply always finds its request in the log, and a request it sends next starts
        after this one's end. A stalled or trickled answer is logged as it starts, with no bytes: it
        may never end."""
        if reply.pace is not None and reply.pace.mode == "stall":
            log(0)
            self._hold(reply.pace)
            return
        self.send_response(reply.status)
        length = reply.span[1] - reply.span[0] if reply.blob else len(reply.body)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(length))
        if self.command == "HEAD" or length == 0:
            log(0)
            self.end_headers()
            return
        self.end_headers()
        if reply.pace is not None:
            log(0)
            self.wfile.flush()
            if reply.pace.mode == "stall-body":
                self._hold(reply.pace)
            else:
                self._trickle(reply)
            return
        if reply.blob is None:
            log(length)
            self.wfile.write(reply.body)
            return
        sent, logged = 0, None
        try:
            for chunk in reply.blob.chunks(*reply.span):
                if sent + len(chunk) >= length:
                    logged = log(length)
                self.wfile.write(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        if logged is None:
            log(sent)
        elif sent != length:  # the client went away during the last chunk
            self.server.stub._amend(logged, replace(logged, nbytes=sent))


    def _hold(self, fault: Fault) -> None:
        """Keep the connection open and silent until the fault's time is up or the stub stops."""
        self.server.stub._stopping.wait(fault.seconds)
        self.close_connection = True

    def _trickle(self, reply: _Reply) -> None:
        body = b"".join(reply.blob.chunks(*reply.span)) if reply.blob else reply.body
        try:
            for i in range(len(body)):
                if self.server.stub._stopping.wait(reply.pace.seconds if reply.pace else 0):
                    break
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def _listing(method: str, raw_url: str) -> str | None:
    """"listing" for a model_info request (GET /api/models/NS/NAME[/revision/REV]), "search" for a model search
    (GET /api/models?filter=...), else None."""
    segments = urlsplit(raw_url).path.split("/")[1:]
    if method == "GET" and segments == ["api", "models"]:
        return "search"
    if method == "GET" and segments[:2] == ["api", "models"] and (len(segments) == 4 or (len(segments) == 6 and segments[4] == "revision")):
        return "listing"
    return None


def _json(data: object, status: int = 200, headers: Mapping[str, str] | None = None) -> _Reply:
    return _Reply(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(data).encode())


def _error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> _Reply:
    return _json({"error": message}, status, {"X-Error-Code": code, "X-Error-Message": message, **(headers or {})})


class HubStub:
    """Context manager serving repos like the Hub; `.url` is the endpoint, e.g. http://127.0.0.1:PORT.

    `tokens` maps a token to the repo ids it may read (private and gated repos). A token the stub
    does not know is treated as no token, so a token in the developer's environment changes nothing.
    `latency` (seconds, may be changed while serving) delays every answer, on both origins.
    `lfs_redirect` sends `resolve` requests for LFS files to the CDN origin (`.cdn_url`) with a 302.
    """

    def __init__(self, *, tokens: dict[str, set[str]] | None = None, latency: float = 0.0, lfs_redirect: bool = False) -> None:
        self._tokens = {token: set(repos) for token, repos in (tokens or {}).items()}
        self._repos: dict[str, _Repo] = {}
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()
        # Requests being answered but not yet in the log: the counters wait for them.
        self._in_flight = 0
        self._received = 0  # requests read so far, answered or not (never reset)
        self._settled = threading.Condition(self._lock)
        self.latency = latency
        self.lfs_redirect = lfs_redirect
        self._servers: list[tuple[_Server, threading.Thread]] = []
        self._faults: dict[str, list[list]] = {}  # repo id -> [[fault, times left or None], ...]
        self._stopping = threading.Event()  # set on stop: stalled answers end
        self.search_page_size = 1000  # models per page of the model search, as the Hub sends them

    # -- set-up -------------------------------------------------------------------------------------

    def add_repo(
        self,
        repo_id: str,
        files: Mapping[str, FileSource],
        *,
        revisions: Mapping[str, str] | None = None,
        private: bool = False,
        gated: bool = False,
        extra_commits: Mapping[str, Mapping[str, FileSource]] | None = None,
        card_data: bool = True,
        base_model: tuple[str, str] | None = None,
        downloads: int = 0,
    ) -> str:
        """Serve `files` as branch `main` of `repo_id`; return its commit sha.

        Each `extra_commits` entry is another full snapshot, served as a branch of that name.
        `revisions` adds tags: name -> "main", an extra commit's name, or a commit sha.
        `card_data=False` leaves cardData out of model_info, as mirrors that do not parse cards do.
        `base_model=(relation, base)` tags the repo as a derivative of `base` ("quantized", "finetune", "adapter",
        "merge"): the model search (`GET /api/models?filter=base_model:RELATION:BASE`) lists it, with `downloads`.
        """
        if repo_id.count("/") != 1:
            raise ValueError(f"{repo_id!r}: repo ids must be 'namespace/name'")
        commits = {"main": _make_commit(repo_id, "main", files)}
        for label, snapshot in (extra_commits or {}).items():
            commits[label] = _make_commit(repo_id, label, snapshot)
        refs = {label: commit.sha for label, commit in commits.items()}
        by_sha = {commit.sha: commit for commit in commits.values()}
        for name, target in (revisions or {}).items():
            sha = refs.get(target, target)
            if sha not in by_sha:
                raise ValueError(f"{repo_id}: revision {name!r} points to unknown {target!r}")
            refs[name] = sha
        with self._lock:
            if repo_id in self._repos:
                raise ValueError(f"{repo_id}: already served")
            self._repos[repo_id] = _Repo(repo_id, private, gated, by_sha, refs, card_data, base_model, downloads)
        return refs["main"]

    def push(self, repo_id: str, files: Mapping[str, FileSource], label: str) -> str:
        """A new commit on `main` of `repo_id`: its files with `files` added or replaced (`label` makes the sha).
        Return the new sha."""
        with self._lock:
            repo = self._repos[repo_id]
            blobs = {**repo.commits[repo.refs["main"]].files, **{p: _make_blob(p, s) for p, s in files.items()}}
            commit = _commit_of(repo_id, label, blobs)
            self._repos[repo_id] = replace(repo, commits={**repo.commits, commit.sha: commit},
                                           refs={**repo.refs, "main": commit.sha})
        return commit.sha

    def set_gated(self, repo_id: str, gated: bool) -> None:
        """Gate `repo_id`, or open it, as its owner does in its settings: no new commit."""
        with self._lock:
            self._repos[repo_id] = replace(self._repos[repo_id], gated=gated)

    def add_fault(self, repo_id: str, fault: Fault) -> None:
        """Misbehave on `repo_id`'s requests that `fault` matches (see Fault); faults apply in order added."""
        with self._lock:
            self._faults.setdefault(repo_id, []).append([fault, fault.times])

    def clear_faults(self, repo_id: str | None = None) -> None:
        with self._lock:
            if repo_id is None:
                self._faults.clear()
            else:
                self._faults.pop(repo_id, None)

    def files(self, repo_id: str, revision: str = "main") -> list[str]:
        """The paths of the files `revision` of `repo_id` holds."""
        commit = self._repos[repo_id].resolve(revision)
        if commit is None:
            raise KeyError(f"{repo_id}@{revision}")
        return sorted(commit.files)

    def sha(self, repo_id: str, revision: str = "main") -> str:
        """The commit sha that `revision` of `repo_id` resolves to."""
        commit = self._repos[repo_id].resolve(revision)
        if commit is None:
            raise KeyError(f"{repo_id}@{revision}")
        return commit.sha

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._origin_server("hub").url

    @property
    def cdn_url(self) -> str:
        """The origin LFS files are redirected to (started with the stub, used when `lfs_redirect` is on)."""
        return self._origin_server("cdn").url

    def _origin_server(self, origin: Origin) -> _Server:
        for server, _ in self._servers:
            if server.origin == origin:
                return server
        raise RuntimeError("HubStub is not started")

    def start(self) -> HubStub:
        if not self._servers:
            self._stopping.clear()
            for origin in ("hub", "cdn"):
                server = _Server(self, origin)
                thread = threading.Thread(
                    target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"hubstub-{origin}", daemon=True
                )
                thread.start()
                self._servers.append((server, thread))
        return self

    def stop(self) -> None:
        self._stopping.set()
        for server, thread in self._servers:
            server.shutdown()
            server.server_close()
            thread.join()
        self._servers = []

    def __enter__(self) -> HubStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- counters -----------------------------------------------------------------------------------

    def requests(self, repo_id: str | None = None, path: str | None = None) -> list[RequestRecord]:
        """Requests answered so far, optionally only those for one repo and/or one file."""
        with self._settled:
            # A request being answered is logged just before its last write: wait for those.
            self._settled.wait_for(lambda: self._in_flight == 0, timeout=5.0)
            records = list(self._records)
        return [
            r for r in records if (repo_id is None or r.repo_id == repo_id) and (path is None or r.path == path)
        ]

    def bytes_served(self, repo_id: str | None = None, path: str | None = None) -> int:
        """Body bytes sent (API JSON included), optionally only for one repo and/or one file."""
        return sum(r.nbytes for r in self.requests(repo_id, path))

    def traffic(self, repo_id: str | None = None) -> Traffic:
        """Requests, bytes, waves and most in flight of the log so far (both origins)."""
        return traffic(self.requests(repo_id))

    def reset_counters(self) -> None:
        with self._settled:
            # A request still being answered would otherwise land in the fresh count.
            self._settled.wait_for(lambda: self._in_flight == 0, timeout=5.0)
            self._records.clear()

    def received(self) -> int:
        """Requests read so far, answered or not, since the stub started; unlike ``requests`` it never waits
        (a stalled answer keeps a request in flight for as long as its fault says)."""
        with self._lock:
            return self._received

    def _begin(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._received += 1

    def _record(self, record: RequestRecord) -> None:
        with self._settled:
            self._records.append(record)
            self._in_flight -= 1
            self._settled.notify_all()

    def _amend(self, old: RequestRecord, new: RequestRecord) -> None:
        with self._lock:
            for i, record in enumerate(self._records):
                if record is old:
                    self._records[i] = new

    def _misbehave(self, repo_id: str | None, where: str | None, reply: _Reply) -> _Reply:
        """The reply as the first matching fault changes it (one use of the fault counted)."""
        with self._lock:
            for entry in self._faults.get(repo_id or "", []):
                fault, left = entry
                if fault.where != where or left == 0 or reply.span[0] < fault.after:
                    continue
                if fault.mode in ("ignore-range", "content-range") and reply.status != 206:
                    continue
                if left is not None:
                    entry[1] = left - 1
                break
            else:
                return reply
        if fault.mode in ("stall", "stall-body", "trickle"):
            return replace(reply, pace=fault)
        if fault.mode == "ignore-range":
            headers = {k: v for k, v in reply.headers.items() if k != "Content-Range"}
            return replace(reply, status=200, headers=headers, span=(0, reply.blob.size if reply.blob else 0))
        if fault.mode == "content-range" and reply.blob is not None:
            start = min(reply.span[0] + fault.shift, reply.blob.size - 1)
            end = min(reply.span[1] + fault.shift, reply.blob.size)
            content_range = f"bytes {start}-{end - 1}/{reply.blob.size}"
            return replace(reply, headers={**reply.headers, "Content-Range": content_range}, span=(start, end))
        return _Reply(fault.status, {"Content-Type": "application/json", **fault.headers}, fault.body)

    # -- routing ------------------------------------------------------------------------------------

    def _route(self, method: str, raw_url: str, headers, body: bytes) -> tuple[str | None, str | None, _Reply]:
        split = urlsplit(raw_url)
        query = parse_qs(split.query)
        segments = [unquote(s) for s in split.path.split("/")[1:]]
        token = self._token(headers.get("Authorization"))
        if segments == ["api", "models"] and method == "GET":
            return self._search_base(query), None, self._search(query)
        if len(segments) >= 4 and segments[0] == "api" and segments[1] == "models":
            repo_id = f"{segments[2]}/{segments[3]}"
            return repo_id, None, self._api(method, repo_id, segments[4:], query, body, token)
        if len(segments) >= 5 and segments[2] == "resolve" and method in ("GET", "HEAD"):
            repo_id = f"{segments[0]}/{segments[1]}"
            file_path = "/".join(segments[4:])
            return repo_id, file_path, self._resolve(repo_id, segments[3], file_path, headers, token)
        return None, None, _json({"error": "Not Found"}, 404)

    def _token(self, authorization: str | None) -> str | None:
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization[len("Bearer ") :].strip()
        return token if token in self._tokens else None

    def _access(self, repo_id: str, token: str | None, *, download: bool) -> _Repo | _Reply:
        repo = self._repos.get(repo_id)
        granted = token is not None and repo_id in self._tokens[token]
        if repo is None or (repo.private and not granted):
            # The Hub answers 401 to anonymous callers, 404 to authenticated ones, for both cases.
            return _error(401 if token is None else 404, "RepoNotFound", f"Repository not found: {repo_id}")
        if download and repo.gated and not granted:
            return _error(
                401 if token is None else 403, "GatedRepo", f"Access to model {repo_id} is restricted."
            )
        return repo

    def _api(self, method: str, repo_id: str, rest: list[str], query, body: bytes, token: str | None) -> _Reply:
        repo = self._access(repo_id, token, download=False)
        if isinstance(repo, _Reply):
            return repo
        kind = rest[0] if rest else ""
        if method == "GET" and not rest:
            return self._model_info(repo, "main", query)
        if method == "GET" and kind == "revision" and len(rest) == 2:
            return self._model_info(repo, rest[1], query)
        if method == "GET" and kind == "tree" and len(rest) >= 2:
            return self._tree(repo, rest[1], "/".join(rest[2:]), query)
        if method == "POST" and kind == "paths-info" and len(rest) == 2:
            return self._paths_info(repo, rest[1], parse_qs(body.decode()))
        return _json({"error": "Not Found"}, 404)

    def _commit_or_error(self, repo: _Repo, revision: str) -> _Commit | _Reply:
        commit = repo.resolve(revision)
        if commit is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return commit

    def _model_info(self, repo: _Repo, revision: str, query) -> _Reply:
        commit = self._commit_or_error(repo, revision)
        if isinstance(commit, _Reply):
            return commit
        with_blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
        return _json(
            {
                "_id": commit.sha[:24],
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "author": repo.repo_id.split("/")[0],
                "sha": commit.sha,
                "lastModified": COMMIT_DATE,
                "createdAt": COMMIT_DATE,
                "private": repo.private,
                "gated": "manual" if repo.gated else False,
                "disabled": False,
                "tags": repo.tags,
                "siblings": [blob.sibling(path, with_blobs) for path, blob in commit.files.items()],
                "usedStorage": sum(blob.size for blob in commit.files.values()),
                **({"cardData": card} if repo.card_data and (card := _card_data(commit)) is not None else {}),
            }
        )

    @staticmethod
    def _search_base(query) -> str | None:
        """The base a model-tree search asks about: faults on it (where="search") apply to its pages."""
        tag = query.get("filter", [""])[0]
        return tag.split(":", 2)[2] if tag.count(":") >= 2 else None

    def _search(self, query) -> _Reply:
        """The Hub's model search, as HfApi.list_models asks it: the public repos carrying every `filter` tag,
        `sort=downloads` most downloaded first, `search_page_size` per page, the next page by a
        `Link: <...&cursor=N>; rel="next"` header."""
        wanted = set(query.get("filter", []))
        with self._lock:
            repos = [r for r in self._repos.values() if not r.private and wanted <= set(r.tags)]
        if query.get("sort", [""])[0] == "downloads":
            repos.sort(key=lambda r: (-r.downloads, r.repo_id))
        start = int(query.get("cursor", ["0"])[0])
        page = repos[start : start + self.search_page_size]
        items = [{"_id": r.repo_id, "id": r.repo_id, "modelId": r.repo_id, "likes": 0, "downloads": r.downloads,
                  "private": False, "tags": r.tags, "createdAt": COMMIT_DATE, "sha": r.refs["main"], "gated": "manual" if r.gated else False}
                 for r in page]
        # By default the Hub leaves the sha out; with expand it sends only the fields asked for, besides the ids.
        expand = query.get("expand[]") or query.get("expand")
        keep = {"_id", "id", *expand} if expand else {"_id", "id", "modelId", "likes", "downloads", "private", "tags",
                                                      "createdAt"}
        items = [{k: v for k, v in item.items() if k in keep} for item in items]
        headers = {}
        if start + self.search_page_size < len(repos):
            rest = [(k, v) for k, values in query.items() if k != "cursor" for v in values]
            link = f"{self.url}/api/models?{urlencode([*rest, ('cursor', start + self.search_page_size)])}"
            headers["Link"] = f'<{link}>; rel="next"'
        return _json(items, headers=headers)

    def _tree(self, repo: _Repo, revision: str, path: str, query) -> _Reply:
        commit = self._commit_or_error(repo, revision)
        if isinstance(commit, _Reply):
            return commit
        path = path.strip("/")
        if path and path not in commit.directories():
            return _error(404, "EntryNotFound", f"{path} does not exist on {revision}", {"X-Repo-Commit": commit.sha})
        recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
        expand = query.get("expand", ["false"])[0].lower() in ("1", "true")
        prefix = f"{path}/" if path else ""
        names = [p for p in sorted(commit.directories() | set(commit.files)) if p.startswith(prefix)]
        if not recursive:
            names = [p for p in names if "/" not in p[len(prefix) :]]
        entries = [commit.entry(p) for p in names]
        if expand:
            for entry in entries:
                entry["lastCommit"] = {"id": commit.sha, "title": "Upload", "date": COMMIT_DATE}
        return _json(entries)

    def _paths_info(self, repo: _Repo, revision: str, form) -> _Reply:
        commit = self._commit_or_error(repo, revision)
        if isinstance(commit, _Reply):
            return commit
        entries = [commit.entry(p.strip("/")) for p in form.get("paths", [])]
        return _json([e for e in entries if e is not None])

    def _resolve(self, repo_id: str, revision: str, path: str, headers, token: str | None) -> _Reply:
        repo = self._access(repo_id, token, download=True)
        if isinstance(repo, _Reply):
            return repo
        commit = self._commit_or_error(repo, revision)
        if isinstance(commit, _Reply):
            return commit
        blob = commit.files.get(path)
        if blob is None:
            return _error(404, "EntryNotFound", f"{path} does not exist on {revision}", {"X-Repo-Commit": commit.sha})
        if self.lfs_redirect and blob.sha256:
            # The Hub's answer for an LFS file: metadata on the 302 itself, bytes from a signed CDN URL.
            query = f"commit={commit.sha}&file={quote(path, safe='')}"
            return _Reply(
                302,
                {
                    "Location": f"{self.cdn_url}/repos/{repo_id}/{blob.sha256}?{query}",
                    "ETag": f'"{blob.git_oid}"',
                    "X-Linked-Etag": f'"{blob.sha256}"',
                    "X-Linked-Size": str(blob.size),
                    "X-Repo-Commit": commit.sha,
                },
            )
        return _blob_reply(blob, headers, {"ETag": f'"{blob.etag}"', "X-Repo-Commit": commit.sha})

    def _route_cdn(self, method: str, raw_url: str, headers, body: bytes) -> tuple[str | None, str | None, _Reply]:
        """`/repos/{ns}/{name}/{sha256}?commit=SHA&file=PATH`: the URL a 302 from `resolve` points to."""
        split = urlsplit(raw_url)
        segments = [unquote(s) for s in split.path.split("/")[1:]]
        query = parse_qs(split.query)
        if method not in ("GET", "HEAD") or len(segments) != 4 or segments[0] != "repos":
            return None, None, _json({"error": "Not Found"}, 404)
        repo_id, sha256 = f"{segments[1]}/{segments[2]}", segments[3]
        path = query.get("file", [""])[0]
        repo = self._repos.get(repo_id)
        commit = repo.commits.get(query.get("commit", [""])[0]) if repo else None
        blob = commit.files.get(path) if commit else None
        if blob is None or blob.sha256 != sha256:
            return repo_id, path or None, _json({"error": "NoSuchKey"}, 404)
        return repo_id, path, _blob_reply(blob, headers, {"ETag": f'"{sha256}"'})


def _blob_reply(blob: _Blob, headers, extra: Mapping[str, str]) -> _Reply:
    """The file, or the byte range the request asks for."""
    base = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes", **extra}
    requested = headers.get("Range")
    span = _parse_range(requested, blob.size) if requested else None
    if span == "unsatisfiable":
        return _Reply(416, {**base, "Content-Range": f"bytes */{blob.size}"})
    if span is None:
        return _Reply(200, base, blob=blob, span=(0, blob.size))
    start, end = span
    return _Reply(206, {**base, "Content-Range": f"bytes {start}-{end - 1}/{blob.size}"}, blob=blob, span=span)
