"""`mtpinspect check` against a Hub that misbehaves: every wait and read is bounded, every failure is one line.

Each test serves a repo from the loopback Hub stand-in with one fault (tests/hubstub.py `Fault`): a
stall before or after the headers, a trickle, 502/503/429 answers, Range ignored, a wrong Content-Range,
a listing that is HTML, JSON of the wrong shape, or a gzip bomb. The real CLI runs in a child process;
its wall time and its own peak memory are measured.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import safetensors_header
from cli_child import CliRun, assert_one_line_error, run_cli
from gguf_factory import write_nextn_gguf
from hubstub import Fault, HubStub

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")

MAX_RSS_MB = 200  # a check of a repo peaks near 90 MB (huggingface_hub, httpx, gguf-py)
GIB = 1024**3
CONFIG = {"model_type": "glm4_moe", "num_hidden_layers": 2}
CKPT_CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "hidden_size": 64,
    "vocab_size": 4096,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path | bytes]]:
    """Repo contents: a GGUF repo and a safetensors checkpoint whose one shard is 1 GiB (sparse)."""
    root = tmp_path_factory.mktemp("faulthub")
    gguf = write_nextn_gguf(root / "tiny-Q8_0.gguf")
    header, data_size = safetensors_header({
        "tensors": [
            ["model.embed_tokens.weight", "BF16", [GIB // (2 * 4096) - 1024, 4096]],
            ["model.layers.0.self_attn.q_proj.weight", "BF16", [64, 64]],
            ["model.layers.2.eh_proj.weight", "BF16", [64, 128]],
            ["model.layers.2.enorm.weight", "BF16", [64]],
            ["model.layers.2.hnorm.weight", "BF16", [64]],
            ["model.layers.2.shared_head.norm.weight", "BF16", [64]],
            ["model.layers.2.self_attn.q_proj.weight", "BF16", [64, 64]],
        ]
    })
    shard = root / "model.safetensors"
    shard.write_bytes(header)
    os.truncate(shard, len(header) + data_size)
    return {
        "gguf": {"config.json": json.dumps(CONFIG).encode(), "tiny-Q8_0.gguf": gguf},
        "ckpt": {"config.json": json.dumps(CKPT_CONFIG).encode(), "model.safetensors": shard},
    }


@pytest.fixture(scope="module")
def stub() -> Iterator[HubStub]:
    with HubStub() as hub:
        yield hub


def serve(stub: HubStub, files: dict[str, dict[str, Path | bytes]], name: str, kind: str, *faults: Fault) -> str:
    """Serve the ``kind`` repo as acme/NAME with ``faults``; return its repo id."""
    repo_id = f"acme/{name}"
    stub.add_repo(repo_id, files[kind])
    for fault in faults:
        stub.add_fault(repo_id, fault)
    return repo_id


def check(stub: HubStub, tmp_path: Path, *args: str, env: dict[str, str] | None = None, command: str = "check") -> CliRun:
    hub_env = {"HF_ENDPOINT": stub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    return run_cli(command, *args, env={**hub_env, **(env or {})}, timeout=90)


def assert_bounded(run: CliRun, seconds: float) -> None:
    assert run.seconds < seconds, f"took {run.seconds:.1f} s"
    assert run.peak_mb < MAX_RSS_MB, f"child peak RSS {run.peak_mb:.0f} MB"


def assert_ok(run: CliRun) -> dict:
    assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
    assert "Traceback" not in run.stderr
    return json.loads(run.stdout)


# -- item 6: timeouts on every Hub request --------------------------------------------------------------


def test_listing_that_never_answers_times_out(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "never-answers", "gguf", Fault("stall"))
    run = check(stub, tmp_path, repo, "--timeout", "2")
    line = assert_one_line_error(run, repo, "listing", f"/api/models/{repo}", "2 s", "--timeout")
    assert "stalled" in line or "no answer" in line
    assert_bounded(run, 15)


def test_headers_then_nothing_times_out_on_the_file(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "stall-body", "gguf", Fault("stall-body", where="tiny-Q8_0.gguf"))
    run = check(stub, tmp_path, repo, "--timeout", "2")
    assert_one_line_error(run, f"{repo}/tiny-Q8_0.gguf", "/resolve/", "bytes 0-", "2 s")
    assert_bounded(run, 15)


def test_timeout_from_the_environment(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "stall-config", "gguf", Fault("stall-body", where="config.json"))
    run = check(stub, tmp_path, repo, env={"MTPINSPECT_TIMEOUT": "1.5"})
    assert_one_line_error(run, f"{repo}/config.json", "1.5 s")
    assert_bounded(run, 15)


def test_diagnose_bounds_its_hub_reads_too(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "diagnose-stall", "gguf", Fault("stall-body", where="config.json"))
    run = check(stub, tmp_path, repo, "--no-probe", "--timeout", "2", command="diagnose")
    assert_one_line_error(run, f"{repo}/config.json", "2 s")
    assert_bounded(run, 15)


def test_trickle_stops_at_the_deadline(stub: HubStub, files, tmp_path: Path) -> None:
    # A byte every 0.2 s never trips a 5 s read timeout; the total deadline ends it.
    repo = serve(stub, files, "trickle", "gguf", Fault("trickle", where="tiny-Q8_0.gguf", seconds=0.2))
    run = check(stub, tmp_path, repo, "--timeout", "5", "--deadline", "4")
    assert_one_line_error(run, f"{repo}/tiny-Q8_0.gguf", "deadline", "4 s", "--deadline")
    assert_bounded(run, 15)


# -- item 7: retries with backoff, Retry-After honoured up to a cap -----------------------------------------


def test_listing_502_then_200_is_retried(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "listing-502", "gguf", Fault("replace", status=502, body=b"<html>Bad Gateway</html>", times=1))
    report = assert_ok(check(stub, tmp_path, repo, "--format", "json"))
    assert report["usable"] is True
    assert [r.status for r in stub.requests(repo) if r.path is None] == [502, 200]


def test_range_read_503_then_200_is_retried(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "range-503", "gguf", Fault("replace", where="tiny-Q8_0.gguf", status=503, times=2))
    report = assert_ok(check(stub, tmp_path, repo, "--format", "json"))
    assert report["layout"] == "bundled"
    assert [r.status for r in stub.requests(repo, "tiny-Q8_0.gguf")][:3] == [503, 503, 206]


def test_429_retry_after_is_honoured(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "rate-limited", "gguf",
                 Fault("replace", where="config.json", status=429, headers={"Retry-After": "2"}, times=1))
    run = check(stub, tmp_path, repo, "--format", "json")
    assert_ok(run)
    assert run.seconds >= 2
    assert [r.status for r in stub.requests(repo, "config.json")] == [429, 206]


def test_429_retry_after_beyond_the_cap_fails_at_once(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "rate-limited-long", "gguf",
                 Fault("replace", where="config.json", status=429, headers={"Retry-After": "3600"}))
    run = check(stub, tmp_path, repo)
    assert_one_line_error(run, f"{repo}/config.json", "429", "3600 s")
    assert_bounded(run, 15)
    assert len(stub.requests(repo, "config.json")) == 1


def test_persistent_503_gives_up_after_the_retries(stub: HubStub, files, tmp_path: Path) -> None:
    # Only our retries: huggingface_hub's own retry loop (5 retries, 1-8 s waits) is not in the path.
    repo = serve(stub, files, "always-503", "gguf", Fault("replace", status=503, body=b"Service Unavailable"))
    run = check(stub, tmp_path, repo, "--retries", "2")
    assert_one_line_error(run, repo, "listing", "HTTP 503", "3 attempts")
    assert_bounded(run, 20)
    assert len([r for r in stub.requests(repo) if r.path is None]) == 3


# -- item 8: a server that ignores Range ---------------------------------------------------------------------


def test_safetensors_header_from_a_server_that_ignores_range(stub: HubStub, files, tmp_path: Path) -> None:
    # The 1 GiB shard is answered with 200 and the whole file: only the header's prefix may be read.
    repo = serve(stub, files, "ignores-range", "ckpt", Fault("ignore-range", where="model.safetensors"))
    run = check(stub, tmp_path, repo, "--format", "json")
    report = assert_ok(run)
    assert report["mtp_layers"] == 1
    assert report["bytes_read"] < 200_000
    assert_bounded(run, 30)


def test_range_ignored_after_the_first_read_is_an_error(stub: HubStub, files, tmp_path: Path) -> None:
    # The GGUF's first read (offset 0) may take a prefix of a 200; a read further in cannot.
    header = json.dumps({f"t{i}": {"dtype": "BF16", "shape": [1], "data_offsets": [2 * i, 2 * i + 2]} for i in range(8000)})
    header += " " * (-len(header) % 8)
    shard = len(header).to_bytes(8, "little") + header.encode() + bytes(16000)
    repo = "acme/ignores-range-long-header"
    stub.add_repo(repo, {"config.json": json.dumps(CKPT_CONFIG).encode(), "model.safetensors": shard})
    stub.add_fault(repo, Fault("ignore-range", where="model.safetensors"))
    run = check(stub, tmp_path, repo)
    assert_one_line_error(run, f"{repo}/model.safetensors", "ignores HTTP Range")


# -- item 18: a wrong Content-Range ----------------------------------------------------------------------------


def test_wrong_content_range_is_the_servers_fault(stub: HubStub, files, tmp_path: Path) -> None:
    # Asked for bytes 0-..., the server sends bytes 100-... and says so in Content-Range.
    repo = serve(stub, files, "content-range", "gguf", Fault("content-range", where="tiny-Q8_0.gguf", shift=100))
    line = assert_one_line_error(check(stub, tmp_path, repo), f"{repo}/tiny-Q8_0.gguf", "Content-Range", "bytes 100-")
    assert "truncated" not in line and "corrupt" not in line


# -- item 15: a malformed listing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, status, headers, body, needles",
    [
        ("html", 200, {"Content-Type": "text/html"}, b"<!DOCTYPE html><html><body>Sign in to the Wi-Fi</body></html>",
         ("listing", "not valid JSON", "text/html")),
        ("list", 200, {}, b"[]", ("listing", "[]", "not a JSON object")),
        ("null", 200, {}, b"null", ("listing", "null")),
        ("siblings-str", 200, {}, json.dumps({"id": "x", "sha": "a" * 40, "siblings": "config.json"}).encode(),
         ("listing", "siblings", "'config.json'")),
        ("sibling-int", 200, {}, json.dumps({"id": "x", "sha": "a" * 40, "siblings": [7]}).encode(),
         ("listing", "siblings[0]", "7")),
        ("size-str", 200, {}, json.dumps({"id": "x", "sha": "a" * 40,
                                           "siblings": [{"rfilename": "config.json", "size": "12kB"}]}).encode(),
         ("listing", "config.json", "size", "'12kB'")),
        ("no-sha", 200, {}, json.dumps({"id": "x", "siblings": []}).encode(), ("listing", "no commit sha")),
    ],
)
def test_malformed_listing(stub: HubStub, files, tmp_path: Path, name: str, status: int, headers: dict, body: bytes,
                           needles: tuple[str, ...]) -> None:
    repo = serve(stub, files, f"bad-answer-{len(stub.requests())}", "gguf", Fault("replace", status=status, headers=headers, body=body))
    run = check(stub, tmp_path, repo)
    assert_one_line_error(run, repo, *needles)
    assert_bounded(run, 15)


def _gzip_bomb(size: int) -> bytes:
    """A gzip stream of a JSON object about ``size`` bytes long (about size / 1000 compressed)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(b'{"id": "acme/x", "pad": "')]
    block = b" " * (1 << 20)
    parts += [packer.compress(block) for _ in range(size >> 20)]
    return b"".join([*parts, packer.compress(b'"}'), packer.flush()])


def test_gzip_bomb_listing_is_bounded(stub: HubStub, files, tmp_path: Path) -> None:
    # About 1 MiB on the wire, 1 GiB once inflated.
    bomb = _gzip_bomb(GIB)
    repo = serve(stub, files, "gzip-bomb", "gguf", Fault("replace", headers={"Content-Encoding": "gzip"}, body=bomb))
    run = check(stub, tmp_path, repo)
    assert_one_line_error(run, repo, "listing", "MiB")
    assert_bounded(run, 30)


def test_gzip_listing_ends_where_its_stream_ends(stub: HubStub, files, tmp_path: Path) -> None:
    # A real listing, gzipped, then 256 MiB that are not part of it: never read, never kept.
    repo = serve(stub, files, "gzip-trailer", "gguf")
    listing = {"id": repo, "sha": stub.sha(repo),
               "siblings": [{"rfilename": p, "size": len(v) if isinstance(v, bytes) else v.stat().st_size} for p, v in files["gguf"].items()]}
    body = zlib.compress(json.dumps(listing).encode(), wbits=31) + bytes(256 << 20)
    stub.add_fault(repo, Fault("replace", headers={"Content-Encoding": "gzip"}, body=body))
    run = check(stub, tmp_path, repo, "--format", "json")
    assert assert_ok(run)["layout"] == "bundled"
    assert_bounded(run, 30)


def test_listing_without_sizes_reads_the_sizes(stub: HubStub, files, tmp_path: Path) -> None:
    # A mirror that ignores ?blobs=true lists names only: the sizes come from the files themselves.
    repo = serve(stub, files, "no-sizes", "gguf")
    listing = {"id": repo, "sha": stub.sha(repo), "siblings": [{"rfilename": p} for p in files["gguf"]]}
    stub.add_fault(repo, Fault("replace", body=json.dumps(listing).encode()))
    report = assert_ok(check(stub, tmp_path, repo, "--format", "json"))
    assert report["layout"] == "bundled" and report["usable"] is True
    assert report["bytes_total"] == files["gguf"]["tiny-Q8_0.gguf"].stat().st_size
