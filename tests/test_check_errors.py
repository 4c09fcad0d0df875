"""Bad input to `mtpinspect check`: one clear line naming the thing, exit 2, no traceback, bounded memory.

Every case runs the real CLI in a subprocess, against real files on disk or the loopback Hub stand-in.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_child import MEASURED, assert_one_line_error, clean_env, run_cli
from gguf_factory import write_bad_gguf, write_nextn_gguf
from hubstub import HubStub

MAX_RSS_MB = 200  # `check` on a local GGUF peaks near 60 MB (numpy and gguf-py); a 2**60 array would be far more


def run_check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mtpinspect", "check", *args],
        capture_output=True, text=True, timeout=120, env=clean_env(env),
    )


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("errhub")
    gguf = write_nextn_gguf(root / "tiny-Q8_0.gguf")
    files = {"config.json": b'{"model_type": "glm4_moe", "num_hidden_layers": 2}', "tiny-Q8_0.gguf": gguf}
    with HubStub(tokens={"hf_good": {"acme/gated", "acme/private"}}) as stub:
        stub.add_repo("acme/public", files, revisions={"v1": "main"})
        stub.add_repo("acme/gated", files, gated=True)
        stub.add_repo("acme/private", files, private=True)
        stub.add_repo("acme/badjson", {"config.json": b"{not json", "model.safetensors.index.json": b"{}"})
        yield stub


def hub_env(stub: HubStub, home: Path, token: str | None = None) -> dict[str, str]:
    env = {"HF_ENDPOINT": stub.url, "HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1"}
    if token:
        env["HF_TOKEN"] = token
    return env


def test_gated_repo_without_token(hub: HubStub, tmp_path: Path) -> None:
    assert_one_line_error(run_check("acme/gated", env=hub_env(hub, tmp_path)), "acme/gated", "gated", "token")


def test_gated_repo_with_token_works(hub: HubStub, tmp_path: Path) -> None:
    proc = run_check("acme/gated", "--format", "json", env=hub_env(hub, tmp_path, "hf_good"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["layout"] == "bundled"


def test_private_repo_without_token(hub: HubStub, tmp_path: Path) -> None:
    assert_one_line_error(run_check("acme/private", env=hub_env(hub, tmp_path)), "acme/private", "not found")


def test_private_repo_with_token_flag(hub: HubStub, tmp_path: Path) -> None:
    proc = run_check("acme/private", "--token", "hf_good", "--format", "json", env=hub_env(hub, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["revision"] == hub.sha("acme/private")


def test_missing_repo(hub: HubStub, tmp_path: Path) -> None:
    assert_one_line_error(run_check("acme/nothing-here", env=hub_env(hub, tmp_path)), "acme/nothing-here", "not found")


def test_missing_file(hub: HubStub, tmp_path: Path) -> None:
    line = assert_one_line_error(run_check("acme/public", "--file", "nope.gguf", env=hub_env(hub, tmp_path)), "nope.gguf")
    assert "acme/public" in line


def test_missing_quant(hub: HubStub, tmp_path: Path) -> None:
    line = assert_one_line_error(run_check("acme/public:Q2_K", env=hub_env(hub, tmp_path)), "Q2_K")
    assert "Q8_0" in line  # says what is available


def test_unknown_revision(hub: HubStub, tmp_path: Path) -> None:
    assert_one_line_error(run_check("acme/public", "--revision", "v9", env=hub_env(hub, tmp_path)), "revision", "v9")


def test_revision_tag_resolves_to_sha(hub: HubStub, tmp_path: Path) -> None:
    proc = run_check("acme/public", "--revision", "v1", "--format", "json", env=hub_env(hub, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["revision"] == hub.sha("acme/public", "v1")


def test_remote_config_not_json(hub: HubStub, tmp_path: Path) -> None:
    assert_one_line_error(run_check("acme/badjson", env=hub_env(hub, tmp_path)), "config.json", "JSON")


def test_local_config_not_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"num_nextn_predict_layers": 1,')
    assert_one_line_error(run_check(str(tmp_path)), "config.json", "JSON")


def test_wrong_flag() -> None:
    proc = run_check("x/y", "--no-such-flag")
    assert_one_line_error(proc, "--no-such-flag")


def test_nonexistent_path() -> None:
    assert_one_line_error(run_check("./missing/model.gguf"), "missing/model.gguf", "no such file")


@pytest.mark.parametrize(
    "problem, needle",
    [
        ("truncated-header", "truncated"),
        ("empty", ""),
        ("zip", "not a GGUF"),
        ("safetensors", "not a GGUF"),
        ("version-99", "version"),
        ("huge-array", ""),
        ("huge-string-array", ""),
        ("huge-string", ""),
        ("huge-key", ""),
        ("unknown-value-type", "type"),
        ("unknown-ggml-type", "type"),
        ("absurd-n-dims", "dim"),
        ("huge-tensor-count", ""),
        ("huge-kv-count", ""),
    ],
)
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")
def test_bad_gguf(tmp_path: Path, problem: str, needle: str) -> None:
    path = write_bad_gguf(tmp_path / f"{problem}.gguf", problem)
    run = run_cli("check", str(path))
    line = assert_one_line_error(run, path.name, needle)
    assert run.peak_mb < MAX_RSS_MB, f"{problem}: child peak RSS {run.peak_mb:.0f} MB"
    assert "\x1b" not in line


def test_peak_rss_is_the_childs_own(tmp_path: Path) -> None:
    """The measurement sees memory the child itself allocates (so the bound above can fail)."""
    allocate = "block = b\"x\" * (300 << 20); sys.exit(2)"
    proc = subprocess.run([sys.executable, "-c", MEASURED.format(run=allocate), str(tmp_path / "peak")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert int((tmp_path / "peak").read_text()) / 1024 > 300


def test_gated_repo_with_saved_login(hub: HubStub, tmp_path: Path) -> None:
    # `hf auth login` stores the token in HF_HOME/token; huggingface_hub picks it up, and so do we.
    (tmp_path / "token").write_text("hf_good")
    proc = run_check("acme/gated", "--format", "json", env=hub_env(hub, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["revision"] == hub.sha("acme/gated")


# The child's resolver answers "no such name" for one host, as glibc does for a name no DNS knows, without
# sending a query anywhere (the tests reach only the loopback addresses).
_UNRESOLVED = """
import runpy, socket, sys
real = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if host == "hub.example.invalid":
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return real(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
sys.argv = ["mtpinspect", *sys.argv[1:]]
runpy.run_module("mtpinspect", run_name="__main__", alter_sys=True)
"""


def _check_with_resolver(endpoint: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _UNRESOLVED, "check", "acme/public"], capture_output=True, text=True,
                          timeout=120, env=clean_env({"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf")}))


def test_a_host_name_that_does_not_resolve_is_said_at_once(tmp_path: Path) -> None:
    """No Hub (no network, a mistyped HF_ENDPOINT): one line after one attempt, not after 8 s of backoff."""
    proc = _check_with_resolver("http://hub.example.invalid", tmp_path)
    assert_one_line_error(proc, "cannot reach the Hub at hub.example.invalid", "1 attempt,")


def test_a_refused_connection_is_still_retried(tmp_path: Path) -> None:
    """A server that is down for a moment (a refused connection) is worth the retries; only an unknown name is not."""
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = _check_with_resolver(f"http://127.0.0.1:{port}", tmp_path)
    assert_one_line_error(proc, "cannot reach the Hub at 127.0.0.1", "4 attempts")
