"""The Hugging Face Hub as a source: the listing (model_info's request) and range reads of files.

Every Hub access goes through huggingface_hub: its URLs, auth headers (token, saved login,
HF_ENDPOINT), error classes and HTTP session. Every request is made by sources.fetch: bounded in time
(timeout, deadline), retried when the failure is transient, bounded in bytes. Nothing here downloads a
weight file: GGUF and safetensors are read through HTTP Range requests, and every byte that comes back
is counted in a ByteMeter.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
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
from huggingface_hub.utils import build_hf_headers, validate_repo_id

from mtpinspect.errors import SourceError, shown
from mtpinspect.sources.fetch import Clock, FetchPolicy, fetch
from mtpinspect.sources.reader import JSON_LIMITS, ByteMeter, JsonKind, RepoFile, parse_json

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


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

    @property
    def name(self) -> str:
        return self.repo_id

    @property
    def total_size(self) -> int:
        return sum(f.size or 0 for f in self.files.values())

    def ref(self, path: str) -> str:
        return path

    def url(self, path: str) -> str:
        return hf_hub_url(self.repo_id, path, revision=self.sha, endpoint=self.endpoint)

    def headers(self) -> dict[str, str]:
        return build_hf_headers(token=self.token)

    def open(self, path: str) -> HubFileReader:
        if path not in self.files:
            raise SourceError(f"{self.repo_id}: no file '{path}' at revision {self.sha[:12]}")
        if self.files[path].size is None:
            self.files[path] = RepoFile(path, self._size_of(path))
        return HubFileReader(self, path)

    def _size_of(self, path: str) -> int:
        """The size of a file the listing gave none for (a mirror that ignores ?blobs=true): one HEAD."""
        name = f"{self.repo_id}/{path}"
        with _hub_errors(self.repo_id, self.revision, path):
            answer = fetch("HEAD", self.url(path), headers={**self.headers(), "Accept-Encoding": "identity"},
                           clock=self.clock, meter=self.meter, what=name, limit=0)
        # huggingface_hub's rule: X-Linked-Size for LFS files (on the redirect), else Content-Length.
        size = answer.headers.get("x-linked-size") or answer.headers.get("content-length")
        if size is None or not size.isdigit():
            raise SourceError(f"{name}: neither the listing nor the Hub's answer gives the file's size (Content-Length {shown(size)})")
        return int(size)


class HubFileReader:
    """A RangeReader over one file of a Hub repo: each read_at is one HTTP Range request (plus retries)."""

    def __init__(self, repo: HubRepo, path: str) -> None:
        self.repo = repo
        self.path = path
        self.name = f"{repo.repo_id}/{path}"

    @property
    def size(self) -> int:
        size = self.repo.files[self.path].size
        assert size is not None, "HubRepo.open learns the size"
        return size

    def read_at(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset + length) of the file: the one bounded, timed, retried range read."""
        if length <= 0 or offset >= self.size:
            return b""
        end = min(offset + length, self.size) - 1
        wanted = end - offset + 1
        headers = {**self.repo.headers(), "Range": f"bytes={offset}-{end}", "Accept-Encoding": "identity"}
        with _hub_errors(self.repo.repo_id, self.repo.revision, self.path):
            answer = fetch("GET", self.repo.url(self.path), headers=headers, clock=self.repo.clock,
                           meter=self.repo.meter, what=self.name, limit=wanted)
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

    def _check_content_range(self, value: str | None, offset: int, end: int) -> None:
        """The answer is the bytes asked for, of a file of the listed size; else the server is wrong."""
        match = _CONTENT_RANGE.fullmatch((value or "").strip())
        if match and (int(match[1]), int(match[2])) == (offset, end) and match[3] in ("*", str(self.size)):
            return
        raise SourceError(
            f"{self.name}: the server answered Content-Range {shown(value)} to a request for bytes {offset}-{end} "
            f"of a {self.size:,}-byte file: a broken server or proxy (the file itself was not read)"
        )


@contextlib.contextmanager
def _hub_errors(repo_id: str, revision: str | None, path: str | None = None) -> Iterator[None]:
    """huggingface_hub exceptions become one-line SourceErrors that say what to do."""
    where = f"{repo_id}/{path}" if path else repo_id
    try:
        yield
    except GatedRepoError:
        raise SourceError(
            f"{repo_id}: gated repo; request access on the Hub, then pass a token (--token, HF_TOKEN or `hf auth login`)"
        ) from None
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
) -> HubRepo:
    """Resolve the revision to a commit and list the repo's files with their sizes (model_info's request)."""
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    clock = Clock(policy)
    meter = ByteMeter()
    url = f"{endpoint}/api/models/{repo_id}"
    if revision is not None:
        url += f"/revision/{quote(revision, safe='')}"
    what = f"{repo_id} listing"
    with _hub_errors(repo_id, revision):
        validate_repo_id(repo_id)
        answer = fetch("GET", f"{url}?blobs=true", headers={**build_hf_headers(token=token), "Accept-Encoding": "gzip"},
                       clock=clock, meter=meter, what=what, limit=JSON_LIMITS[JsonKind.listing].max_bytes)
    if not answer.complete:
        raise SourceError(f"{what}: the Hub's answer is larger than {JSON_LIMITS[JsonKind.listing].max_bytes >> 20} MiB "
                          "(no real listing is); not reading it")
    kind = answer.headers.get("content-type", "no content type")
    listing = parse_json(answer.body, f"{what} ({kind}, GET /api/models/{repo_id})", JsonKind.listing)
    sha, files = _parse_listing(listing, what)
    return HubRepo(
        repo_id=repo_id,
        revision=revision,
        token=token,
        endpoint=endpoint,
        sha=sha,
        files=files,
        gated=listing.get("gated") if isinstance(listing.get("gated"), (bool, str)) else False,
        private=listing.get("private") is True,
        meter=meter,
        card_data=listing.get("cardData") if isinstance(listing.get("cardData"), dict) else None,
        clock=clock,
    )


def _parse_listing(listing: Any, what: str) -> tuple[str, dict[str, RepoFile]]:
    """The commit and the files of a model_info answer, each checked (a proxy or mirror may send anything)."""
    if not isinstance(listing, dict):
        raise SourceError(f"{what}: the Hub answered {shown(listing)}, not a JSON object")
    sha = listing.get("sha")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha):
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
        files[path] = RepoFile(path, size)
    return sha, files
