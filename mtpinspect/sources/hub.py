"""The Hugging Face Hub as a source: the listing (model_info's request) and range reads of files.

Every Hub access goes through huggingface_hub: its URLs, auth headers (token, saved login,
HF_ENDPOINT), error classes and HTTP session. Every request is made by sources.fetch: bounded in time
(timeout, deadline), retried when the failure is transient, bounded in bytes. Nothing here downloads a
weight file: GGUF and safetensors are read through HTTP Range requests, and every byte that comes back
is counted in a ByteMeter.

Round trips are what a remote check costs, so: reads of several files go out together (read_batch,
sources/waves.py); a file the Hub redirected to its CDN is read there directly the next time (the
redirect costs a round trip); and what was read is kept in the header cache (sources/header_cache.py),
so the next check of the same files at the same commit reads nothing but the listing.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
from huggingface_hub import constants, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalTokenNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from mtpinspect.errors import SourceError, shown
from mtpinspect.sources.fetch import Answer, fetch
from mtpinspect.sources.filenames import repo_id_error
from mtpinspect.sources.header_cache import CacheKey, HeaderCache, Spans
from mtpinspect.sources.policy import Clock, FetchPolicy
from mtpinspect.sources.reader import JSON_LIMITS, ByteMeter, JsonKind, RepoFile, parse_json
from mtpinspect.sources.waves import Waves

T = TypeVar("T")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_ETAG = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a git blob id (sha1) or an LFS sha256
COMMIT_SHA = re.compile(r"[0-9a-fA-F]{7,64}")  # a commit as listings give it


@dataclass(frozen=True)
class ListedMain:
    """What a model search said of a repo's main: its commit, and whether it is gated (None: not said)."""

    sha: str
    gated: bool | str | None = None


@dataclass
class HubRepo:
    """One repo at one resolved commit, with the file listing that model_info returns (a Tree)."""

    repo_id: str
    revision: str | None
    token: str | None
    endpoint: str
    sha: str
    files: dict[str, RepoFile]
    gated: bool | str = False
    private: bool = False
    meter: ByteMeter = field(default_factory=ByteMeter)
    clock: Clock = field(default_factory=Clock)  # the command's timeout, retries and deadline
    card_data: dict[str, Any] | None = None  # README.md's front matter as the Hub parsed it (model info cardData)
    waves: Waves = field(default_factory=Waves)  # the gate every request of the command passes
    cache: HeaderCache | None = None  # None: --no-cache
    # The auth headers, made once per command (Clock.auth_headers): build_hf_headers reads the token file
    # each time (3 ms), which every range read of a 2,000-file repo paid.
    auth: dict[str, str] = field(default_factory=dict, repr=False)
    # What was read of each file, shared by all its readers: jobs of one batch read rows of the same file at
    # once, and each stored only its own spans in the header cache (the last one won).
    _kept: dict[str, Spans] = field(default_factory=dict, repr=False)
    # Where the Hub redirected the last read of each file (its CDN) and the headers sent there: the next read
    # of that file, by any reader, goes there directly.
    _locations: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict, repr=False)
    _kept_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return self.repo_id

    def kept(self, path: str, key: CacheKey | None) -> Spans:
        """The bytes read of ``path`` so far (the header cache's entry, loaded once), shared by its readers."""
        with self._kept_lock:
            if path not in self._kept:
                self._kept[path] = (self.cache.load(key) if self.cache is not None and key else None) or Spans()
            return self._kept[path]

    def keep(self, path: str, key: CacheKey | None, offset: int, data: bytes) -> None:
        """Add bytes read of ``path`` to what its readers share, and store them in the header cache."""
        if key is None or self.cache is None:  # --no-cache, or no ETag: every read is a request
            return
        with self._kept_lock:
            spans = self._kept[path]
            spans.add(offset, data)
            self.cache.store(key, spans)

    def location(self, path: str) -> tuple[str, dict[str, str]] | None:
        with self._kept_lock:
            return self._locations.get(path)

    def relocate(self, path: str, where: tuple[str, dict[str, str]] | None) -> None:
        with self._kept_lock:
            if where is None:
                self._locations.pop(path, None)
            else:
                self._locations[path] = where

    def kept_bytes(self, path: str, offset: int, length: int) -> bytes | None:
        with self._kept_lock:
            return self._kept[path].get(offset, length)

    @property
    def total_size(self) -> int:
        return sum(f.size or 0 for f in self.files.values())

    def ref(self, path: str) -> str:
        return path

    def url(self, path: str) -> str:
        return hf_hub_url(self.repo_id, path, revision=self.sha, endpoint=self.endpoint)

    def headers(self) -> dict[str, str]:
        return dict(self.auth)

    def open(self, path: str) -> HubFileReader:
        if path not in self.files:
            raise SourceError(f"{self.repo_id}: no file '{path}' at revision {self.sha[:12]}")
        listed = self.files[path]
        if listed.size is None:
            self.files[path] = RepoFile(path, self._size_of(path), listed.etag)
        return HubFileReader(self, path)

    def read_batch(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run ``jobs`` together: their requests go out in waves (sources/waves.py)."""
        return self.waves.run(jobs)

    def cache_key(self, path: str) -> CacheKey | None:
        """The header cache's key of a file: None when it is not cached (--no-cache, no ETag listed)."""
        etag = self.files[path].etag
        return CacheKey(self.repo_id, self.sha, path, etag) if self.cache is not None and etag else None

    def _size_of(self, path: str) -> int:
        """The size of a file the listing gave none for (a mirror that ignores ?blobs=true): one HEAD."""
        name = f"{self.repo_id}/{path}"
        with _hub_errors(self.repo_id, self.revision, path):
            answer = fetch("HEAD", self.url(path), headers={**self.headers(), "Accept-Encoding": "identity"},
                           clock=self.clock, meter=self.meter, waves=self.waves, what=name, limit=0, to_cdn=True)
        # huggingface_hub's rule: X-Linked-Size for LFS files (on the redirect), else Content-Length.
        size = answer.headers.get("x-linked-size") or answer.headers.get("content-length")
        if size is None or not size.isdigit():
            raise SourceError(f"{name}: neither the listing nor the Hub's answer gives the file's size (Content-Length {shown(size)})")
        return int(size)


class HubFileReader:
    """A RangeReader over one file of a Hub repo: each read_at is one HTTP Range request (plus retries and
    a redirect), unless the header cache holds the bytes."""

    def __init__(self, repo: HubRepo, path: str) -> None:
        self.repo = repo
        self.path = path
        self.name = f"{repo.repo_id}/{path}"
        self._key = repo.cache_key(path)
        repo.kept(path, self._key)  # the header cache's entry, loaded once per file

    @property
    def size(self) -> int:
        size = self.repo.files[self.path].size
        assert size is not None, "HubRepo.open learns the size"
        return size

    def read_at(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset + length) of the file: from the header cache, else the one bounded, timed,
        retried range read (kept in the cache)."""
        if length <= 0 or offset >= self.size:
            return b""
        end = min(offset + length, self.size) - 1
        wanted = end - offset + 1
        cached = self.repo.kept_bytes(self.path, offset, wanted)
        if cached is not None:
            self.repo.meter.add_cached(len(cached))
            return cached
        data = self._fetch(offset, end)
        self.repo.keep(self.path, self._key, offset, data)
        return data

    def _fetch(self, offset: int, end: int) -> bytes:
        wanted = end - offset + 1
        span = {"Range": f"bytes={offset}-{end}", "Accept-Encoding": "identity"}
        with _hub_errors(self.repo.repo_id, self.repo.revision, self.path):
            answer = None
            location = self.repo.location(self.path)
            if location is not None:
                url, sent = location
                try:
                    answer = self._get(url, {**sent, **span}, wanted)
                except HfHubHTTPError:
                    self.repo.relocate(self.path, None)  # a signed CDN address that expired: ask the Hub again
            if answer is None:
                answer = self._get(self.repo.url(self.path), {**self.repo.headers(), **span}, wanted)
        if answer.url != self.repo.url(self.path):
            self.repo.relocate(self.path, (answer.url, {k: v for k, v in answer.sent.items() if k not in span}))
        if answer.status == 200 and offset > 0:
            # A server that ignores Range sends the whole file from byte 0: never read a weight file.
            raise SourceError(f"{self.name}: the server ignores HTTP Range requests (200 to bytes {offset}-{end}); "
                              "refusing to download the file")
        if answer.status != 200:  # at offset 0 a 200's first bytes are the ones asked for
            self._check_content_range(answer.headers.get("content-range"), offset, end)
        if len(answer.body) < wanted:
            raise SourceError(f"{self.name}: the Hub sent {len(answer.body):,} of the {wanted:,} bytes asked for "
                              f"(bytes {offset}-{end} of {self.size:,}); the connection ended early")
        return answer.body

    def _get(self, url: str, headers: dict[str, str], wanted: int) -> Answer:
        return fetch("GET", url, headers=headers, clock=self.repo.clock, meter=self.repo.meter, waves=self.repo.waves,
                     what=self.name, limit=wanted, to_cdn=True)

    def _check_content_range(self, value: str | None, offset: int, end: int) -> None:
        """The answer is the bytes asked for, of a file of the listed size; else the server is wrong."""
        match = _CONTENT_RANGE.fullmatch((value or "").strip())
        if match and (int(match[1]), int(match[2])) == (offset, end) and match[3] in ("*", str(self.size)):
            return
        raise SourceError(
            f"{self.name}: the server answered Content-Range {shown(value)} to a request for bytes {offset}-{end} "
            f"of a {self.size:,}-byte file: a broken server or proxy (the file itself was not read)"
        )


def gated_error(repo_id: str) -> str:
    return f"{repo_id}: gated repo; request access on the Hub, then pass a token (--token, HF_TOKEN or `hf auth login`)"


def refused_without_asking(repo: HubRepo, path: str) -> bool:
    """Whether reading ``path`` can only be refused: the Hub refuses every file of a gated repo to a request
    without a token (HTTP 401). Not when the header cache holds the file: a check with a token kept it, and it
    is read from there (docs/faults.md)."""
    if not repo.gated or any(name.lower() == "authorization" for name in repo.auth):
        return False
    key = repo.cache_key(path) if path in repo.files else None
    return key is None or repo.cache is None or not repo.cache.holds(key)


@contextlib.contextmanager
def _hub_errors(repo_id: str, revision: str | None, path: str | None = None) -> Iterator[None]:
    """huggingface_hub exceptions become one-line SourceErrors that say what to do."""
    where = f"{repo_id}/{path}" if path else repo_id
    try:
        yield
    except GatedRepoError:
        raise SourceError(gated_error(repo_id)) from None
    except RepositoryNotFoundError:
        raise SourceError(f"{repo_id}: repository not found (or private, and no token with access was given)") from None
    except RevisionNotFoundError:
        raise SourceError(f"{repo_id}: revision '{revision}' not found") from None
    except RemoteEntryNotFoundError:
        raise SourceError(f"{where}: file not found in the repo") from None
    except LocalTokenNotFoundError as exc:
        raise SourceError(f"{repo_id}: {exc}") from None
    except HFValidationError as exc:
        raise SourceError(f"{repo_id}: not a valid repo id or revision ({exc})") from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise SourceError(f"{where}: Hub request failed with HTTP {status}") from None
    except httpx2.HTTPError as exc:
        raise SourceError(f"{where}: cannot reach the Hub ({type(exc).__name__}: {exc})") from None


def open_repo(
    repo_id: str,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    policy: FetchPolicy | None = None,
    clock: Clock | None = None,
    listed: ListedMain | None = None,
) -> HubRepo:
    """Resolve the revision to a commit and list the repo's files with their sizes (model_info's request).
    ``clock``: the budget this repo's requests share with a larger command's (find); default: its own, from
    ``policy``. ``listed``: what a model search said of the repo's main (find): with the header cache on,
    the listing kept for that commit is used and nothing is asked; the search's gated state, fresh, stands
    over the kept one (a repo gated or opened since keeps its commit)."""
    if constants.HF_HUB_OFFLINE:
        raise SourceError(_offline(repo_id))
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    clock = clock or Clock(policy)
    meter = ByteMeter()
    waves = Waves()
    url = f"{endpoint}/api/models/{repo_id}"
    if revision is not None:
        url += f"/revision/{quote(revision, safe='')}"
    what = f"{repo_id} listing"
    refused = repo_id_error(repo_id)
    if refused is not None:
        raise SourceError(refused)
    with _hub_errors(repo_id, revision):
        auth = clock.auth_headers(token)
    cache = HeaderCache.default() if clock.policy.cache else None
    body = _kept_listing(cache, _listing_key(repo_id, listed.sha)) if listed and revision is None else None
    if body is not None:
        meter.add_cached(len(body))
        kind = "from the header cache"
    else:
        with _hub_errors(repo_id, revision):
            answer = fetch("GET", f"{url}?blobs=true", headers={**auth, "Accept-Encoding": "gzip"},
                           clock=clock, meter=meter, waves=waves, what=what, limit=JSON_LIMITS[JsonKind.listing].max_bytes)
        if not answer.complete:
            raise SourceError(f"{what}: the Hub's answer is larger than {JSON_LIMITS[JsonKind.listing].max_bytes >> 20} MiB "
                              "(no real listing is); not reading it")
        body, kind = answer.body, answer.headers.get("content-type", "no content type")
    listing = parse_json(body, f"{what} ({kind}, GET /api/models/{repo_id})", JsonKind.listing)
    sha, files = _parse_listing(listing, what)
    if cache is not None and revision is None and meter.requests:
        # Kept under the commit it lists: a later search that gives main at this commit needs no listing request.
        cache.store(_listing_key(repo_id, sha), Spans([(0, body)]))
    return HubRepo(
        repo_id=repo_id,
        revision=revision,
        token=token,
        endpoint=endpoint,
        sha=sha,
        files=files,
        gated=_gated(listed.gated if listed and listed.gated is not None else listing.get("gated")),
        private=listing.get("private") is True,
        meter=meter,
        card_data=listing.get("cardData") if isinstance(listing.get("cardData"), dict) else None,
        clock=clock,
        waves=waves,
        cache=cache,
        auth=auth,
    )


# The header cache keeps a repo's listing at a commit as an entry of its own: no file has an empty path.
_LISTING_PATH = ""
_LISTING_TAG = "model_info?blobs=true"


def _gated(value: Any) -> bool | str:
    """The Hub's gated field: False, True, or the approval mode ("auto", "manual"); anything else is False."""
    return value if isinstance(value, (bool, str)) else False


def _listing_key(repo_id: str, sha: str) -> CacheKey:
    """The header cache's key of ``repo_id``'s listing (model_info with blobs) at commit ``sha``: the files, their
    sizes and ids at a commit never change."""
    return CacheKey(repo_id, sha, _LISTING_PATH, _LISTING_TAG)


def _kept_listing(cache: HeaderCache | None, key: CacheKey) -> bytes | None:
    spans = cache.load(key) if cache is not None else None
    pieces = spans.pieces if spans is not None else []
    return pieces[0][1] if len(pieces) == 1 and pieces[0][0] == 0 else None


def _offline(repo_id: str) -> str:
    """Why an offline run cannot check a repo, and which of its snapshots the Hugging Face cache holds (those
    a check can read as local folders; the header cache needs the listing, which only the Hub gives)."""
    folder = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    try:
        snapshots = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    except OSError:
        snapshots = []
    cached = (f"the Hugging Face cache holds {len(snapshots)} snapshot(s) of it: check {snapshots[-1]} instead"
              if snapshots else "the Hugging Face cache holds no snapshot of it")
    return f"{repo_id}: HF_HUB_OFFLINE is set, so the Hub is not asked; {cached}"


def _parse_listing(listing: Any, what: str) -> tuple[str, dict[str, RepoFile]]:
    """The commit and the files of a model_info answer, each checked (a proxy or mirror may send anything)."""
    if not isinstance(listing, dict):
        raise SourceError(f"{what}: the Hub answered {shown(listing)}, not a JSON object")
    sha = listing.get("sha")
    if not isinstance(sha, str) or not COMMIT_SHA.fullmatch(sha):
        raise SourceError(f"{what}: the Hub's answer has no commit sha (sha: {shown(sha)})")
    siblings = listing.get("siblings", [])
    if not isinstance(siblings, list):
        raise SourceError(f"{what}: siblings is {shown(siblings)}, not a list of files")
    files: dict[str, RepoFile] = {}
    for i, sibling in enumerate(siblings):
        path = sibling.get("rfilename") if isinstance(sibling, dict) else None
        if not isinstance(path, str) or not path:
            raise SourceError(f"{what}: siblings[{i}] is {shown(sibling)}, not a file entry")
        lfs = sibling.get("lfs")
        size = sibling.get("size", lfs.get("size") if isinstance(lfs, dict) else None)
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise SourceError(f"{what}: the size of {path!r} is {shown(size)}, not a number of bytes")
        files[path] = RepoFile(path, size, _etag(sibling))
    return sha, files


def _etag(sibling: dict[str, Any]) -> str | None:
    """The content id the Hub serves a file's ETag from: the LFS sha256, else the git blob id; None when the
    listing has neither (or not in their form: then the file is not cached)."""
    lfs = sibling.get("lfs")
    etag = lfs.get("sha256") if isinstance(lfs, dict) else sibling.get("blobId")
    return etag if isinstance(etag, str) and _ETAG.fullmatch(etag) else None
