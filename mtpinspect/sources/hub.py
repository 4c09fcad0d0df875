"""The Hugging Face Hub as a source: listing, small JSON files, range reads and safetensors headers.

Every Hub access goes through huggingface_hub (auth, revisions, HF_ENDPOINT, error classes, its
safetensors header reader). Nothing here downloads a weight file: GGUF and safetensors are read
through HTTP Range requests, and every byte that comes back is counted in a ByteMeter.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from huggingface_hub import HfApi, constants, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalTokenNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    SafetensorsParsingError,
)
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status
from huggingface_hub.utils._safetensors import SafetensorsFileMetadata

from mtpinspect.errors import FormatError, SourceError
from mtpinspect.sources.reader import ByteMeter, RepoFile

# huggingface_hub keeps one shared HTTP client; a response hook on it feeds the meter of the check
# that is running in this context, so calls made inside huggingface_hub are counted too.
_ACTIVE_METER: contextvars.ContextVar[ByteMeter | None] = contextvars.ContextVar("mtpinspect_meter", default=None)


def _count_response(response: httpx2.Response) -> None:
    meter = _ACTIVE_METER.get()
    if meter is None or response.request.method == "HEAD":
        return
    length = response.headers.get("content-length")
    meter.add(int(length) if length and length.isdigit() else 0)


def _install_counter() -> None:
    hooks = get_session().event_hooks
    if _count_response not in hooks.setdefault("response", []):
        hooks["response"] = [*hooks["response"], _count_response]


@contextlib.contextmanager
def metered(meter: ByteMeter) -> Iterator[None]:
    """Count every Hub response body received in this block into ``meter``."""
    _install_counter()
    token = _ACTIVE_METER.set(meter)
    try:
        yield
    finally:
        _ACTIVE_METER.reset(token)


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
    card_data: dict[str, Any] | None = None  # README.md's front matter as the Hub parsed it (model info cardData)

    @property
    def name(self) -> str:
        return self.repo_id

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files.values())

    def ref(self, path: str) -> str:
        return path

    def url(self, path: str) -> str:
        return hf_hub_url(self.repo_id, path, revision=self.sha, endpoint=self.endpoint)

    def _headers(self) -> dict[str, str]:
        return build_hf_headers(token=self.token)

    def open(self, path: str) -> HubFileReader:
        if path not in self.files:
            raise SourceError(f"{self.repo_id}: no file '{path}' at revision {self.sha[:12]}")
        return HubFileReader(self, path)

    def safetensors_header(self, path: str) -> SafetensorsFileMetadata:
        """The shard's header, read with huggingface_hub's own reader (two range requests at most)."""
        api = HfApi(endpoint=self.endpoint, token=self.token)
        with metered(self.meter), _hub_errors(self.repo_id, self.revision, path):
            self.meter.requests += 1
            try:
                return api.parse_safetensors_file_metadata(self.repo_id, path, revision=self.sha)
            except SafetensorsParsingError as exc:
                raise FormatError(f"{self.repo_id}/{path}: bad safetensors header ({exc})") from None


class HubFileReader:
    """A RangeReader over one file of a Hub repo: each read_at is one HTTP Range request."""

    def __init__(self, repo: HubRepo, path: str) -> None:
        self.repo = repo
        self.path = path
        self.name = f"{repo.repo_id}/{path}"

    @property
    def size(self) -> int:
        return self.repo.files[self.path].size

    def read_at(self, offset: int, length: int) -> bytes:
        if length <= 0 or offset >= self.size:
            return b""
        end = min(offset + length, self.size) - 1
        headers = {**self.repo._headers(), "Range": f"bytes={offset}-{end}", "Accept-Encoding": "identity"}
        wanted = end - offset + 1
        with _hub_errors(self.repo.repo_id, self.repo.revision, self.path):
            with get_session().stream("GET", self.repo.url(self.path), headers=headers, follow_redirects=True) as resp:
                hf_raise_for_status(resp)
                if resp.status_code == 200 and offset > 0:
                    # A server that ignores Range would send the whole file; never read a weight file.
                    raise SourceError(f"{self.name}: the server ignores HTTP Range requests; refusing to download the file")
                chunks, got = [], 0
                for chunk in resp.iter_bytes():
                    chunks.append(chunk[: wanted - got])
                    got += len(chunks[-1])
                    if got >= wanted:
                        break
        self.repo.meter.requests += 1
        self.repo.meter.add(got)
        return b"".join(chunks)


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
        raise SourceError(f"{where}: cannot reach the Hub at {constants.ENDPOINT} ({type(exc).__name__}: {exc})") from None


def open_repo(repo_id: str, *, revision: str | None = None, token: str | None = None, endpoint: str | None = None) -> HubRepo:
    """Resolve the revision to a commit and list the repo's files with their sizes."""
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    meter = ByteMeter()
    api = HfApi(endpoint=endpoint, token=token)
    with metered(meter), _hub_errors(repo_id, revision):
        meter.requests += 1
        info = api.model_info(repo_id, revision=revision, files_metadata=True)
    files = {
        s.rfilename: RepoFile(s.rfilename, int(s.size or (s.lfs.size if s.lfs else 0) or 0)) for s in info.siblings or []
    }
    return HubRepo(
        repo_id=repo_id,
        revision=revision,
        token=token,
        endpoint=endpoint,
        sha=info.sha or "",
        files=files,
        gated=info.gated or False,
        private=bool(info.private),
        meter=meter,
        card_data=info.card_data.to_dict() if info.card_data is not None else None,
    )
