"""The header cache (sources/header_cache.py): what `check` read from the Hub stand-in is reused by the next
check, check --all and diagnose of the same files at the same commit, which then make only the listing
request; a new revision or ETag misses, --no-cache bypasses it, a damaged entry is read again and
rewritten, and the folder stays under its size cap."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import safetensors_header
from cli_child import run_cli
from gguf_factory import write_nextn_gguf
from hubstub import Fault, HubStub

import mtpinspect
from mtpinspect.cache_dir import CACHE_ENV
from mtpinspect.jsonable import to_jsonable
from mtpinspect.sources.header_cache import CacheKey, HeaderCache, Spans
from mtpinspect.sources.policy import FetchPolicy

CARD = b"---\nlicense: mit\nbase_model: acme/base\n---\n# model\n"
CONFIG = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 2,
          "num_nextn_predict_layers": 1, "hidden_size": 64, "vocab_size": 4096, "torch_dtype": "bfloat16"}
COST = ("bytes_read", "requests", "waves", "bytes_cached")  # the report fields a cache hit changes


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path | bytes]]:
    """A GGUF repo (two quantizations, config.json) and a sharded checkpoint with an index."""
    root = tmp_path_factory.mktemp("cached")
    gguf = {"config.json": json.dumps({"model_type": "glm4_moe"}).encode(), "README.md": CARD,
            "m-Q8_0.gguf": write_nextn_gguf(root / "m-Q8_0.gguf"), "m-Q4_K_M.gguf": write_nextn_gguf(root / "m-Q4_K_M.gguf", types={"attn_q.weight": "F16"})}
    shards = {"model-00001-of-00002.safetensors": [["model.embed_tokens.weight", "BF16", [4096, 64]]],
              "model-00002-of-00002.safetensors": [["model.layers.2.eh_proj.weight", "BF16", [64, 128]],
                                                   ["model.layers.2.enorm.weight", "BF16", [64]]]}
    ckpt: dict[str, Path | bytes] = {"config.json": json.dumps(CONFIG).encode()}
    for name, tensors in shards.items():
        header, _ = safetensors_header({"tensors": tensors})
        ckpt[name] = header
    weight_map = {t[0]: name for name, tensors in shards.items() for t in tensors}
    ckpt["model.safetensors.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    return {"gguf": gguf, "ckpt": ckpt}


@pytest.fixture(scope="module")
def stub() -> Iterator[HubStub]:
    with HubStub() as hub:
        yield hub


def serve(stub: HubStub, repos, kind: str, name: str, **options) -> str:
    repo = f"cache/{name}"
    stub.add_repo(repo, repos[kind], **options)
    return repo


def cache_root() -> Path:
    return Path(os.environ[CACHE_ENV]) / "headers"


def entries() -> list[Path]:
    return sorted(cache_root().glob("*/*.bin")) if cache_root().is_dir() else []


def check(stub: HubStub, source: str, **options) -> mtpinspect.CheckReport:
    return mtpinspect.check(source, endpoint=stub.url, verify=False, **options)


def same_but_cost(a: mtpinspect.CheckReport, b: mtpinspect.CheckReport) -> bool:
    strip = lambda r: {k: v for k, v in to_jsonable(r).items() if k not in COST}  # noqa: E731
    return strip(a) == strip(b)


@pytest.mark.parametrize("kind, source", [("gguf", "gguf:Q8_0"), ("ckpt", "ckpt")])
def test_second_check_makes_only_the_listing_request(stub: HubStub, repos, kind: str, source: str) -> None:
    repo = serve(stub, repos, kind, f"second-{kind}")
    target = repo + source[len(kind):]
    first = check(stub, target)
    assert first.requests > 1 and first.bytes_cached == 0 and entries()
    stub.reset_counters()
    second = check(stub, target)
    assert [r.path for r in stub.requests(repo)] == [None]  # the listing, nothing else
    assert (second.requests, second.waves, second.bytes_read) == (1, 1, stub.bytes_served(repo))
    assert second.bytes_cached == first.bytes_read - second.bytes_read  # every file byte came from the cache
    assert same_but_cost(first, second)


def test_a_new_revision_misses(stub: HubStub, repos) -> None:
    repo = serve(stub, repos, "ckpt", "revisions", extra_commits={"v2": repos["ckpt"]})
    check(stub, repo)
    stub.reset_counters()
    check(stub, repo, revision="v2")  # the same files at another commit: read again
    assert {r.path for r in stub.requests(repo)} >= {"config.json", "model.safetensors.index.json"}
    stub.reset_counters()
    check(stub, repo, revision="v2")
    assert [r.path for r in stub.requests(repo)] == [None]


def test_a_new_etag_misses(stub: HubStub, repos) -> None:
    repo = serve(stub, repos, "ckpt", "etag")
    check(stub, repo)
    # The same commit, but the listing now gives config.json another content id: only that file is read.
    with urllib.request.urlopen(f"{stub.url}/api/models/{repo}?blobs=true") as answer:
        listing = json.load(answer)
    for sibling in listing["siblings"]:
        if sibling["rfilename"] == "config.json":
            sibling["blobId"] = "0" * 40
    stub.add_fault(repo, Fault("replace", body=json.dumps(listing).encode(), times=1))
    stub.reset_counters()
    check(stub, repo)
    assert [r.path for r in stub.requests(repo)] == [None, "config.json"]


def test_no_cache_reads_everything_and_keeps_nothing(stub: HubStub, repos, tmp_path: Path) -> None:
    repo = serve(stub, repos, "gguf", "no-cache")
    env = {"HF_ENDPOINT": stub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    runs = [run_cli("check", f"{repo}:Q8_0", "--no-cache", "--no-verify", "--format", "json", env=env) for _ in range(2)]
    docs = [json.loads(run.stdout) for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    assert docs[0]["requests"] == docs[1]["requests"] > 1 and docs[1]["bytes_cached"] == 0
    assert not entries()
    # The same with the cache: the second run reads only the listing.
    runs = [run_cli("check", f"{repo}:Q8_0", "--no-verify", "--format", "json", env=env) for _ in range(2)]
    assert [json.loads(run.stdout)["requests"] for run in runs] == [docs[0]["requests"], 1]


def _damage(entry: Path, how: str) -> None:
    raw = entry.read_bytes()
    if how == "flipped-byte":
        entry.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0xFF]))
    elif how == "cut-short":
        entry.write_bytes(raw[: len(raw) // 2])
    elif how == "garbage":
        entry.write_bytes(os.urandom(len(raw)))
    elif how == "other-key":  # a whole, valid entry, but of another file
        head, _, rest = raw.partition(b"\n")
        meta, _, payload = rest.partition(b"\n")
        fields = json.loads(meta)
        fields["path"] = "other.json"
        entry.write_bytes(head + b"\n" + json.dumps(fields).encode() + b"\n" + payload)
    elif how == "empty":
        entry.write_bytes(b"")


@pytest.mark.parametrize("how", ["flipped-byte", "cut-short", "garbage", "other-key", "empty"])
def test_a_damaged_entry_is_read_again_and_rewritten(stub: HubStub, repos, how: str) -> None:
    repo = serve(stub, repos, "gguf", f"damaged-{how}")
    first = check(stub, f"{repo}:Q8_0")
    for entry in entries():
        _damage(entry, how)
    stub.reset_counters()
    second = check(stub, f"{repo}:Q8_0")
    assert (second.requests, second.bytes_cached) == (first.requests, 0)  # nothing of the damaged entries was used
    assert same_but_cost(first, second)
    stub.reset_counters()
    assert check(stub, f"{repo}:Q8_0").requests == 1  # rewritten whole
    assert [r.path for r in stub.requests(repo)] == [None]


def test_check_all_and_diagnose_reuse_the_headers(stub: HubStub, repos, tmp_path: Path) -> None:
    repo = serve(stub, repos, "gguf", "reuse")
    first = mtpinspect.check_all(repo, endpoint=stub.url, verify=False)
    assert len(first) == 2 and all(r.usable for r in first)
    stub.reset_counters()
    again = mtpinspect.check_all(repo, endpoint=stub.url, verify=False)
    assert [r.path for r in stub.requests(repo)] == [None]
    assert [r.bytes_cached > 0 for r in again] == [True, True]
    stub.reset_counters()
    env = {"HF_ENDPOINT": stub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    run = run_cli("diagnose", f"{repo}:Q8_0", "--no-probe", "--format", "json", env=env)
    assert run.returncode in (0, 1), run.stderr
    assert [r.path for r in stub.requests(repo)] == [None]


def test_the_cache_keeps_under_its_size_cap(tmp_path: Path) -> None:
    cache = HeaderCache(tmp_path / "headers", max_bytes=250_000)
    keys = [CacheKey("acme/m", "a" * 40, f"f{i}.gguf", "b" * 64) for i in range(3)]
    cache.store(keys[0], Spans([(0, os.urandom(100_000))]))
    cache.store(keys[1], Spans([(0, os.urandom(100_000))]))
    past = time.time() - 60
    os.utime(cache.path(keys[0]), (past, past))
    os.utime(cache.path(keys[1]), (past + 1, past + 1))
    assert cache.load(keys[0]) is not None  # used: now the most recent
    cache.store(keys[2], Spans([(0, os.urandom(100_000))]))  # over the cap: the least recently used goes
    assert [cache.load(k) is not None for k in keys] == [True, False, True]
    assert sum(p.stat().st_size for p in (tmp_path / "headers").glob("*/*.bin")) <= 250_000


def test_spans_merge_and_serve_only_what_they_hold() -> None:
    spans = Spans([(100, b"b" * 50)])
    spans.add(0, b"a" * 100)  # touches the first: merged
    spans.add(400, b"c" * 10)
    assert [(o, len(d)) for o, d in spans.pieces] == [(0, 150), (400, 10)]
    assert spans.get(90, 20) == b"a" * 10 + b"b" * 10
    assert spans.get(140, 20) is None and spans.get(405, 5) == b"c" * 5 and spans.get(405, 6) is None
    spans.add(140, b"x" * 300)  # overlaps both ends of the gap: one span
    assert [(o, len(d)) for o, d in spans.pieces] == [(0, 440)]
    assert spans.get(439, 1) == b"x" and spans.get(430, 10) == b"x" * 10


def test_an_unwritable_cache_changes_nothing_but_the_cost(stub: HubStub, repos, tmp_path: Path, monkeypatch) -> None:
    repo = serve(stub, repos, "gguf", "unwritable")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv(CACHE_ENV, str(blocked))
    first = check(stub, f"{repo}:Q8_0")
    second = check(stub, f"{repo}:Q8_0")
    assert first.requests == second.requests > 1 and same_but_cost(first, second)


def test_no_cache_policy_in_the_api(stub: HubStub, repos) -> None:
    repo = serve(stub, repos, "ckpt", "api-no-cache")
    check(stub, repo, policy=FetchPolicy(cache=False))
    assert not entries()
