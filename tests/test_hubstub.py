"""The Hub stand-in answers the real huggingface_hub client the way the Hub does.

Every test goes through huggingface_hub 2.4.0 itself (HfApi, hf_hub_download, HfFileSystem) or
raw HTTP, against a server on 127.0.0.1: if the stub drifts from what the client expects, these fail.
"""

from __future__ import annotations

import json
import os
import struct
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hubstub import Fault, HubStub
from huggingface_hub import HfApi, HfFileSystem, get_hf_file_metadata, hf_hub_download, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

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
