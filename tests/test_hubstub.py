"""The Hub stand-in answers the real huggingface_hub client the way the Hub does.

Every test goes through huggingface_hub 2.4.0 itself (HfApi, hf_hub_download, HfFileSystem) or
raw HTTP, against a server on 127.0.0.1: if the stub drifts from what the client expects, these fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hubstub import Fault, HubStub, RequestRecord, Traffic, _Server, max_in_flight, traffic, waves
from huggingface_hub import HfApi, HfFileSystem, get_hf_file_metadata, hf_hub_download, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from mtpinspect.sources.waves import CONCURRENCY

GIB = 1024**3
MARK_OFFSET = 3 * GIB + 12345
MARK = b"MTPINSPECT-RANGE-MARKER"
CONFIG = b'{"model_type": "glm_moe_dsa", "num_nextn_predict_layers": 1}'
OLD_CONFIG = b'{"model_type": "glm_moe_dsa"}'


def _safetensors_header(n_tensors: int) -> bytes:
    """A safetensors prefix whose JSON header is larger than the client's first 100,000-byte read."""
    tensors = {
        f"model.layers.78.mlp.experts.{i}.gate_proj.weight": {
            "dtype": "F8_E4M3",
            "shape": [2048, 6144],
            "data_offsets": [i * 2048 * 6144, (i + 1) * 2048 * 6144],
        }
        for i in range(n_tensors)
    }
    header = json.dumps(tensors).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header


@pytest.fixture(scope="module")
def sparse_shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4 GiB sparse safetensors file with a marker deep inside its data section."""
    path = tmp_path_factory.mktemp("hubstub") / "model-00002-of-00002.safetensors"
    with open(path, "wb") as handle:
        handle.write(_safetensors_header(1500))
        handle.seek(MARK_OFFSET)
        handle.write(MARK)
    os.truncate(path, 4 * GIB)
    return path


@pytest.fixture(scope="module")
def stub(sparse_shard: Path):
    hub = HubStub(tokens={"reader": {"org/private", "org/gated"}, "other": set()})
    hub.add_repo(
        "org/model",
        {
            "config.json": CONFIG,
            "README.md": b"# stand-in\n",
            "MTP/notes.txt": b"nested",
            "model-00002-of-00002.safetensors": sparse_shard,
        },
        revisions={"v1.0": "old"},
        extra_commits={"old": {"config.json": OLD_CONFIG}},
    )
    hub.add_repo("org/private", {"config.json": CONFIG}, private=True)
    hub.add_repo("org/gated", {"config.json": CONFIG, "weights.gguf": b"GGUF" + bytes(60)}, gated=True)
    with hub:
        yield hub


@pytest.fixture
def api(stub: HubStub) -> HfApi:
    return HfApi(endpoint=stub.url, token=False)


def _raw(stub: HubStub, method: str, path: str, headers: dict[str, str] | None = None):
    request = urllib.request.Request(stub.url + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_model_info_main_and_revisions(stub: HubStub, api: HfApi) -> None:
    main_sha = stub.sha("org/model")
    old_sha = stub.sha("org/model", "old")
    assert len(main_sha) == 40 and set(main_sha) <= set("0123456789abcdef") and main_sha != old_sha

    info = api.model_info("org/model")
    assert info.id == "org/model" and info.sha == main_sha and info.private is False and not info.gated
    assert sorted(s.rfilename for s in info.siblings) == [
        "MTP/notes.txt",
        "README.md",
        "config.json",
        "model-00002-of-00002.safetensors",
    ]
    assert info.siblings[0].size is None  # sizes only with files_metadata=True

    assert api.model_info("org/model", revision="v1.0").sha == old_sha  # tag
    assert api.model_info("org/model", revision="old").sha == old_sha  # branch
    assert api.model_info("org/model", revision=old_sha).sha == old_sha  # commit sha
    assert [s.rfilename for s in api.model_info("org/model", revision="old").siblings] == ["config.json"]


def test_commit_shas_are_deterministic(sparse_shard: Path, stub: HubStub) -> None:
    again = HubStub()
    sha = again.add_repo(
        "org/model",
        {
            "config.json": CONFIG,
            "README.md": b"# stand-in\n",
            "MTP/notes.txt": b"nested",
            "model-00002-of-00002.safetensors": sparse_shard,
        },
    )
    assert sha == stub.sha("org/model")


def test_model_info_files_metadata(stub: HubStub, api: HfApi, sparse_shard: Path) -> None:
    siblings = {s.rfilename: s for s in api.model_info("org/model", files_metadata=True).siblings}
    config = siblings["config.json"]
    assert config.size == len(CONFIG) and config.lfs is None and len(config.blob_id) == 40
    shard = siblings["model-00002-of-00002.safetensors"]
    assert shard.size == 4 * GIB == sparse_shard.stat().st_size
    assert shard.lfs is not None and shard.lfs.size == 4 * GIB and len(shard.lfs.sha256) == 64


def test_list_repo_files_and_tree(api: HfApi) -> None:
    assert api.list_repo_files("org/model") == [
        "MTP/notes.txt",
        "README.md",
        "config.json",
        "model-00002-of-00002.safetensors",
    ]
    top = {entry.path: type(entry).__name__ for entry in api.list_repo_tree("org/model")}
    assert top == {
        "MTP": "RepoFolder",
        "README.md": "RepoFile",
        "config.json": "RepoFile",
        "model-00002-of-00002.safetensors": "RepoFile",
    }
    inside = [entry.path for entry in api.list_repo_tree("org/model", path_in_repo="MTP")]
    assert inside == ["MTP/notes.txt"]
    expanded = list(api.list_repo_tree("org/model", expand=True))
    assert {entry.last_commit.oid for entry in expanded} == {api.model_info("org/model").sha}
    assert api.list_repo_files("org/model", revision="v1.0") == ["config.json"]
    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree("org/model", path_in_repo="nope"))


def test_get_paths_info(api: HfApi) -> None:
    infos = api.get_paths_info("org/model", ["config.json", "MTP", "missing.bin"])
    assert [(type(i).__name__, i.path) for i in infos] == [("RepoFile", "config.json"), ("RepoFolder", "MTP")]
    assert infos[0].size == len(CONFIG)


def test_hf_hub_download_into_cache(stub: HubStub, tmp_path: Path) -> None:
    path = hf_hub_download("org/model", "config.json", cache_dir=tmp_path, endpoint=stub.url, token=False)
    assert Path(path).read_bytes() == CONFIG
    assert stub.sha("org/model") in path  # snapshot folder named after the commit
    old = hf_hub_download(
        "org/model", "config.json", revision="v1.0", cache_dir=tmp_path, endpoint=stub.url, token=False
    )
    assert Path(old).read_bytes() == OLD_CONFIG
    nested = hf_hub_download("org/model", "MTP/notes.txt", cache_dir=tmp_path, endpoint=stub.url, token=False)
    assert Path(nested).read_bytes() == b"nested"


def test_get_hf_file_metadata(stub: HubStub, api: HfApi) -> None:
    url = hf_hub_url("org/model", "model-00002-of-00002.safetensors", endpoint=stub.url)
    stub.reset_counters()
    meta = get_hf_file_metadata(url, token=False)
    assert meta.commit_hash == stub.sha("org/model")
    assert meta.size == 4 * GIB
    sibling = next(
        s for s in api.model_info("org/model", files_metadata=True).siblings if s.rfilename.endswith(".safetensors")
    )
    assert meta.etag == sibling.lfs.sha256
    heads = stub.requests("org/model", "model-00002-of-00002.safetensors")
    assert [(r.method, r.status, r.nbytes) for r in heads] == [("HEAD", 200, 0)]


def test_head_has_headers_and_no_body(stub: HubStub) -> None:
    status, headers, body = _raw(stub, "HEAD", "/org/model/resolve/main/config.json")
    assert status == 200 and body == b""
    assert headers["Content-Length"] == str(len(CONFIG))
    assert headers["X-Repo-Commit"] == stub.sha("org/model")
    assert headers["ETag"].strip('"') and headers["Accept-Ranges"] == "bytes"
    assert "X-Xet-Hash" not in headers and "Content-Encoding" not in headers


def test_safetensors_header_read_by_ranges_only(stub: HubStub, api: HfApi, sparse_shard: Path) -> None:
    stub.reset_counters()
    meta = api.parse_safetensors_file_metadata("org/model", "model-00002-of-00002.safetensors")
    assert len(meta.tensors) == 1500
    first = meta.tensors["model.layers.78.mlp.experts.0.gate_proj.weight"]
    assert first.dtype == "F8_E4M3" and first.shape == [2048, 6144]
    header_len = struct.unpack("<Q", sparse_shard.open("rb").read(8))[0]
    assert header_len > 100_000  # the client had to ask for the rest of the header
    records = stub.requests("org/model", "model-00002-of-00002.safetensors")
    assert [r.status for r in records] == [206, 206]
    assert stub.bytes_served("org/model", "model-00002-of-00002.safetensors") == 100_001 + header_len


def test_hf_file_system_range_read(stub: HubStub) -> None:
    fs = HfFileSystem(endpoint=stub.url, token=False, skip_instance_cache=True)
    name = "org/model/model-00002-of-00002.safetensors"
    assert fs.info(name)["size"] == 4 * GIB
    stub.reset_counters()
    with fs.open(name, "rb", block_size=64 * 1024) as handle:
        handle.seek(MARK_OFFSET)
        assert handle.read(len(MARK)) == MARK
    assert stub.bytes_served("org/model", "model-00002-of-00002.safetensors") < 1024 * 1024


def test_range_edge_cases(stub: HubStub) -> None:
    path = "/org/model/resolve/main/config.json"
    status, headers, body = _raw(stub, "GET", path, {"Range": "bytes=2-5"})
    assert (status, body, headers["Content-Range"]) == (206, CONFIG[2:6], f"bytes 2-5/{len(CONFIG)}")
    status, _, body = _raw(stub, "GET", path, {"Range": "bytes=-4"})
    assert (status, body) == (206, CONFIG[-4:])
    status, _, body = _raw(stub, "GET", path, {"Range": "bytes=10-"})
    assert (status, body) == (206, CONFIG[10:])
    status, _, body = _raw(stub, "GET", path, {"Range": "bytes=0-999999"})
    assert (status, body) == (206, CONFIG)
    status, headers, _ = _raw(stub, "GET", path, {"Range": f"bytes={len(CONFIG)}-"})
    assert (status, headers["Content-Range"]) == (416, f"bytes */{len(CONFIG)}")
    status, _, body = _raw(stub, "GET", path)
    assert (status, body) == (200, CONFIG)


def test_counters_per_repo_and_path(stub: HubStub, api: HfApi) -> None:
    stub.reset_counters()
    assert stub.bytes_served() == 0 and stub.requests() == []
    api.model_info("org/model")
    _raw(stub, "GET", "/org/model/resolve/main/README.md")
    assert stub.bytes_served("org/model", "README.md") == len(b"# stand-in\n")
    assert stub.bytes_served("org/model") > len(b"# stand-in\n")  # the model_info JSON counts too
    assert stub.bytes_served("org/gated") == 0
    assert [r.path for r in stub.requests("org/model")] == [None, "README.md"]


def test_private_repo_needs_a_granting_token(stub: HubStub, tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=stub.url, token=False).model_info("org/private")
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=stub.url, token="other").model_info("org/private")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/private", "config.json", cache_dir=tmp_path, endpoint=stub.url, token=False)
    assert HfApi(endpoint=stub.url, token="reader").model_info("org/private").private is True
    path = hf_hub_download("org/private", "config.json", cache_dir=tmp_path, endpoint=stub.url, token="reader")
    assert Path(path).read_bytes() == CONFIG


def test_gated_repo_lists_but_does_not_serve_files(stub: HubStub, tmp_path: Path) -> None:
    anonymous = HfApi(endpoint=stub.url, token=False)
    assert anonymous.model_info("org/gated").gated == "manual"
    assert anonymous.list_repo_files("org/gated") == ["config.json", "weights.gguf"]
    for token in (False, "other"):
        with pytest.raises(GatedRepoError):
            hf_hub_download("org/gated", "config.json", cache_dir=tmp_path, endpoint=stub.url, token=token)
    with pytest.raises(GatedRepoError):
        get_hf_file_metadata(hf_hub_url("org/gated", "weights.gguf", endpoint=stub.url), token=False)
    path = hf_hub_download("org/gated", "config.json", cache_dir=tmp_path, endpoint=stub.url, token="reader")
    assert Path(path).read_bytes() == CONFIG


def test_missing_repo_revision_and_file(stub: HubStub, api: HfApi, tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("org/absent")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/absent", "config.json", cache_dir=tmp_path, endpoint=stub.url, token=False)
    with pytest.raises(RevisionNotFoundError):
        api.model_info("org/model", revision="no-such-branch")
    with pytest.raises(RevisionNotFoundError):
        api.list_repo_files("org/model", revision="0" * 40)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(
            "org/model", "config.json", revision="no-such-branch", cache_dir=tmp_path, endpoint=stub.url, token=False
        )
    with pytest.raises(RemoteEntryNotFoundError):
        get_hf_file_metadata(hf_hub_url("org/model", "model.safetensors.index.json", endpoint=stub.url), token=False)
    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download("org/model", "tokenizer.json", cache_dir=tmp_path, endpoint=stub.url, token=False)
    status, headers, _ = _raw(stub, "HEAD", "/org/model/resolve/main/tokenizer.json")
    assert (status, headers["X-Error-Code"], headers["X-Repo-Commit"]) == (404, "EntryNotFound", stub.sha("org/model"))
    assert all(r.status < 500 for r in stub.requests())


def test_add_repo_rejects_bad_input() -> None:
    hub = HubStub()
    hub.add_repo("org/a", {"config.json": b"{}"})
    with pytest.raises(ValueError, match="already served"):
        hub.add_repo("org/a", {"config.json": b"{}"})
    with pytest.raises(ValueError, match="unknown"):
        hub.add_repo("org/b", {"config.json": b"{}"}, revisions={"v1": "nowhere"})
    with pytest.raises(ValueError, match="namespace/name"):
        hub.add_repo("gpt2", {"config.json": b"{}"})


# -- latency, the LFS redirect and the request log ---------------------------------------------------


def _record(start: float, end: float, nbytes: int = 1, status: int = 200) -> RequestRecord:
    return RequestRecord("GET", "f", None, status, nbytes, "org/model", "/u", "hub", start, end)


def test_traffic_counts_waves_and_overlap() -> None:
    # a and b overlap; c starts before b ends, so it joins their wave; d starts after all three ended.
    a, b, c, d = _record(0, 2), _record(1, 3, status=302), _record(2.5, 4), _record(4, 5, nbytes=10)
    assert waves([d, c, b, a]) == [[a, b, c], [d]]
    assert max_in_flight([a, b, c, d]) == 2  # d starts as c ends: not in flight together
    assert traffic([a, b, c, d]) == Traffic(requests=4, bytes=13, waves=2, max_in_flight=2, redirects=1, seconds=5)
    assert traffic([]) == Traffic(0, 0, 0, 0, 0, 0.0)
    chain = [_record(i, i + 1) for i in range(5)]  # back to back: five waves of one
    assert (traffic(chain).waves, traffic(chain).max_in_flight) == (5, 1)


@pytest.fixture(scope="module")
def slow_stub():
    hub = HubStub(latency=0.1)
    hub.add_repo("org/model", {"config.json": CONFIG})
    with hub:
        yield hub


def test_latency_is_added_to_every_request_and_logged(slow_stub: HubStub) -> None:
    path = "/org/model/resolve/main/config.json"
    slow_stub.reset_counters()
    began = time.perf_counter()
    assert _raw(slow_stub, "GET", path)[2] == CONFIG
    assert _raw(slow_stub, "GET", path, {"Range": "bytes=0-3"})[2] == CONFIG[:4]
    assert time.perf_counter() - began >= 0.2
    first, second = slow_stub.requests()
    assert first.end - first.start >= 0.1 and second.start >= first.end
    assert (second.range, second.nbytes, second.origin) == ("bytes=0-3", 4, "hub")
    assert slow_stub.traffic() == Traffic(2, len(CONFIG) + 4, 2, 1, 0, pytest.approx(second.end - first.start))


def test_concurrent_requests_make_one_wave(slow_stub: HubStub) -> None:
    slow_stub.reset_counters()
    with ThreadPoolExecutor(4) as pool:
        bodies = list(pool.map(lambda _: _raw(slow_stub, "GET", "/org/model/resolve/main/config.json")[2], range(4)))
    assert bodies == [CONFIG] * 4
    after = _raw(slow_stub, "GET", "/api/models/org/model")  # sent once all four were answered
    assert after[0] == 200
    found = slow_stub.traffic()
    assert (found.requests, found.waves, found.max_in_flight) == (5, 2, 4)
    assert [len(w) for w in waves(slow_stub.requests())] == [4, 1]


@pytest.fixture(scope="module")
def redirecting(sparse_shard: Path):
    hub = HubStub(lfs_redirect=True, tokens={"reader": {"org/private"}})
    hub.add_repo(
        "org/model",
        {"config.json": CONFIG, "small.safetensors": SMALL_LFS, "model-00002-of-00002.safetensors": sparse_shard},
    )
    hub.add_repo("org/private", {"small.safetensors": SMALL_LFS}, private=True)
    with hub:
        yield hub


SMALL_LFS = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      "


def test_lfs_files_redirect_to_the_cdn_with_their_metadata(redirecting: HubStub) -> None:
    sha = redirecting.sha("org/model")
    status, headers, body = _raw_no_redirect(redirecting, "HEAD", "/org/model/resolve/main/small.safetensors")
    assert status == 302 and body == b""
    assert headers["Location"].startswith(redirecting.cdn_url + "/repos/org/model/")
    assert not redirecting.cdn_url.startswith(redirecting.url)  # another origin: the client keeps the 302's metadata
    assert (headers["X-Repo-Commit"], headers["X-Linked-Size"]) == (sha, str(len(SMALL_LFS)))
    assert headers["X-Linked-Etag"].strip('"') == hashlib.sha256(SMALL_LFS).hexdigest() != headers["ETag"].strip('"')
    # Regular (non-LFS) files are served by the Hub itself.
    status, _, body = _raw_no_redirect(redirecting, "GET", "/org/model/resolve/main/config.json")
    assert (status, body) == (200, CONFIG)

    meta = get_hf_file_metadata(hf_hub_url("org/model", "small.safetensors", endpoint=redirecting.url), token=False)
    assert (meta.commit_hash, meta.etag, meta.size) == (sha, hashlib.sha256(SMALL_LFS).hexdigest(), len(SMALL_LFS))
    assert meta.location.startswith(redirecting.cdn_url)


def test_download_through_the_redirect(redirecting: HubStub, tmp_path: Path) -> None:
    redirecting.reset_counters()
    path = hf_hub_download("org/model", "small.safetensors", cache_dir=tmp_path, endpoint=redirecting.url, token=False)
    assert Path(path).read_bytes() == SMALL_LFS
    log = [(r.origin, r.method, r.status, r.nbytes) for r in redirecting.requests("org/model", "small.safetensors")]
    assert log == [("hub", "HEAD", 302, 0), ("cdn", "GET", 200, len(SMALL_LFS))]
    # Access is checked on the Hub, before the redirect: a private file needs the token there.
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/private", "small.safetensors", cache_dir=tmp_path, endpoint=redirecting.url, token=False)
    got = hf_hub_download("org/private", "small.safetensors", cache_dir=tmp_path, endpoint=redirecting.url, token="reader")
    assert Path(got).read_bytes() == SMALL_LFS


def test_range_reads_through_the_redirect(redirecting: HubStub, sparse_shard: Path) -> None:
    name = "model-00002-of-00002.safetensors"
    redirecting.reset_counters()
    meta = HfApi(endpoint=redirecting.url, token=False).parse_safetensors_file_metadata("org/model", name)
    assert len(meta.tensors) == 1500
    header_len = struct.unpack("<Q", sparse_shard.open("rb").read(8))[0]
    log = redirecting.requests("org/model", name)
    assert [(r.origin, r.status) for r in log] == [("hub", 302), ("cdn", 206), ("hub", 302), ("cdn", 206)]
    assert [r.range for r in log] == ["bytes=0-100000"] * 2 + [f"bytes=8-{header_len + 7}"] * 2  # Range survives
    assert redirecting.bytes_served("org/model", name) == 100_001 + header_len
    seconds = pytest.approx(log[-1].end - log[0].start)
    assert redirecting.traffic("org/model") == Traffic(4, 100_001 + header_len, 4, 1, 2, seconds)

    fs = HfFileSystem(endpoint=redirecting.url, token=False, skip_instance_cache=True)
    with fs.open(f"org/model/{name}", "rb", block_size=64 * 1024) as handle:
        handle.seek(MARK_OFFSET)
        assert handle.read(len(MARK)) == MARK


def test_cdn_refuses_unknown_objects(redirecting: HubStub) -> None:
    location = _raw_no_redirect(redirecting, "HEAD", "/org/model/resolve/main/small.safetensors")[1]["Location"]
    status, _, body = _raw_url("GET", location, {"Range": "bytes=0-7"})
    assert (status, body) == (206, SMALL_LFS[:8])
    assert _raw_url("GET", location.replace("/repos/org/model/", "/repos/org/model/0"))[0] == 404
    assert _raw_url("GET", redirecting.cdn_url + "/api/models/org/model")[0] == 404


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _raw_url(method: str, url: str, headers: dict[str, str] | None = None, *, follow: bool = True):
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _raw_no_redirect(stub: HubStub, method: str, path: str, headers: dict[str, str] | None = None):
    return _raw_url(method, stub.url + path, headers, follow=False)


# -- fault modes ---------------------------------------------------------------------------------------

DATA = bytes(range(256)) * 4


@pytest.fixture
def faulty():
    hub = HubStub()
    hub.add_repo("org/faulty", {"config.json": CONFIG, "w.bin": DATA, "tiny.txt": b"abcd"})
    with hub:
        yield hub


def _resolve(hub: HubStub, path: str) -> str:
    return f"/org/faulty/resolve/{hub.sha('org/faulty')}/{path}"


def test_fault_replace_for_a_number_of_requests(faulty: HubStub) -> None:
    faulty.add_fault("org/faulty", Fault("replace", status=502, body=b"<html>Bad Gateway</html>", times=1))
    assert _raw(faulty, "GET", "/api/models/org/faulty")[::2] == (502, b"<html>Bad Gateway</html>")
    status, _, body = _raw(faulty, "GET", "/api/models/org/faulty")
    assert status == 200 and json.loads(body)["sha"] == faulty.sha("org/faulty")


def test_fault_ignore_range_and_shifted_content_range(faulty: HubStub) -> None:
    faulty.add_fault("org/faulty", Fault("ignore-range", where="w.bin", times=1))
    status, headers, body = _raw(faulty, "GET", _resolve(faulty, "w.bin"), {"Range": "bytes=10-19"})
    assert status == 200 and body == DATA and "Content-Range" not in headers
    faulty.add_fault("org/faulty", Fault("content-range", where="w.bin", shift=5))
    status, headers, body = _raw(faulty, "GET", _resolve(faulty, "w.bin"), {"Range": "bytes=0-9"})
    assert status == 206 and headers["Content-Range"] == "bytes 5-14/1024" and body == DATA[5:15]


def test_fault_stall_before_and_after_the_headers(faulty: HubStub) -> None:
    faulty.add_fault("org/faulty", Fault("stall", where="config.json"))
    faulty.add_fault("org/faulty", Fault("stall-body", where="w.bin"))
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(faulty.url + _resolve(faulty, "config.json"), timeout=0.5)
    with urllib.request.urlopen(faulty.url + _resolve(faulty, "w.bin"), timeout=0.5) as response:
        assert response.status == 200 and response.headers["Content-Length"] == str(len(DATA))
        with pytest.raises(TimeoutError):
            response.read()


def test_fault_trickle_sends_the_answer_slowly(faulty: HubStub) -> None:
    faulty.add_fault("org/faulty", Fault("trickle", where="tiny.txt", seconds=0.1))
    start = time.monotonic()
    assert _raw(faulty, "GET", _resolve(faulty, "tiny.txt"))[2] == b"abcd"
    assert time.monotonic() - start >= 0.4


def test_connections_made_at_once_are_queued_until_the_server_accepts_them() -> None:
    """Sixteen clients connecting before the accept thread runs all get in at once: none waits for the 1 s
    SYN retry that socketserver's backlog of 5 causes (it turned a wave of 8 reads into 7 and 1)."""
    with HubStub() as stub:
        server = _Server(stub, "hub")  # never serving: nothing accepts while the clients connect
        try:
            host, port = server.server_address[:2]
            clients = [socket.create_connection((host, port), timeout=0.5) for _ in range(2 * CONCURRENCY)]
            for client in clients:
                client.close()
        finally:
            server.server_close()
