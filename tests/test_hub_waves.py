"""Concurrent Hub reads (sources/waves.py) against the loopback Hub stand-in: at most CONCURRENCY requests in
flight, waves counted as the server's log has them, and a stalled or failing request among concurrent ones
still ends the check with one clear line, in bounded time, with no reader thread left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_child import assert_one_line_error, clean_env, run_cli
from gguf_factory import Glm4MoeDims, glm4moe_metadata, glm4moe_tensors, write_split_gguf
from hubstub import Fault, HubStub, max_in_flight, waves

import mtpinspect
from mtpinspect.errors import INTERRUPTED, SourceError
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.sources.waves import CONCURRENCY

SHARDS = 12  # more than CONCURRENCY: the first batch cannot go out at once
LATENCY = 0.03


def _shard(i: int) -> str:
    return f"m-{i:05d}-of-{SHARDS:05d}.gguf"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | bytes]:
    """A tiny glm4moe GGUF with its MTP block, split in 12 shards by gguf-py's writer, and a config.json."""
    folder = tmp_path_factory.mktemp("split12")
    dims = Glm4MoeDims()
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    shards = write_split_gguf(folder / "m.gguf", arch="glm4moe", metadata=meta, tensors=glm4moe_tensors(dims), n_shards=SHARDS)
    return {"config.json": json.dumps({"model_type": "glm4_moe"}).encode(), **{p.name: p for p in shards}}


@pytest.fixture(scope="module")
def stub() -> Iterator[HubStub]:
    with HubStub(latency=LATENCY) as hub:
        yield hub


def serve(stub: HubStub, files: dict[str, Path | bytes], name: str, *faults: Fault) -> str:
    repo = f"acme/{name}"
    stub.add_repo(repo, files)
    for fault in faults:
        stub.add_fault(repo, fault)
    return repo


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mtpinspect-read")]


def test_requests_in_flight_never_exceed_the_bound(stub: HubStub, files) -> None:
    repo = serve(stub, files, "split12")
    # Waves are read off the server's log, so each answer must outlast the start of every reader thread
    # of its wave, even on a loaded machine.
    stub.latency = 0.4
    try:
        report = mtpinspect.check(repo, endpoint=stub.url, verify=False)
    finally:
        stub.latency = LATENCY
    assert report.usable and report.files["gguf"] == [_shard(i) for i in range(1, SHARDS + 1)]
    records = stub.requests(repo)
    # The listing; config.json and 7 shards; the 5 shards left (each tiny header fits its first read).
    assert [len(w) for w in waves(records)] == [1, CONCURRENCY, SHARDS + 1 - CONCURRENCY]
    assert max_in_flight(records) == CONCURRENCY
    assert (report.requests, report.waves, report.bytes_read) == (len(records), 3, stub.bytes_served(repo))
    assert not reader_threads()


def test_a_stalled_read_among_concurrent_ones_ends_at_the_timeout(stub: HubStub, files) -> None:
    repo = serve(stub, files, "split12-stall", Fault("stall-body", where=_shard(3)))
    start = time.monotonic()
    with pytest.raises(SourceError) as failure:
        mtpinspect.check(repo, endpoint=stub.url, verify=False, policy=FetchPolicy(timeout=1.5))
    assert time.monotonic() - start < 10
    message = str(failure.value)
    assert message.startswith(f"{repo}/{_shard(3)}: ") and "1.5 s" in message and "\n" not in message
    assert not reader_threads()  # every reader thread ended before check returned


def test_a_failed_read_stops_the_batch(stub: HubStub, files) -> None:
    # Shard 2 fails at once; shard 5, sent in the same wave, stalls until the timeout; shards 8-12, not
    # started when shard 2 failed, are never asked for. The error is shard 2's.
    repo = serve(stub, files, "split12-fail", Fault("replace", where=_shard(2), status=500, body=b"oops"),
                 Fault("stall-body", where=_shard(5)))
    start = time.monotonic()
    with pytest.raises(SourceError, match=f"^{repo}/{_shard(2)}: Hub request failed with HTTP 500$"):
        mtpinspect.check(repo, endpoint=stub.url, verify=False, policy=FetchPolicy(timeout=2))
    assert time.monotonic() - start < 10
    asked = {r.path for r in stub.requests(repo)}
    assert _shard(5) in asked and not asked & {_shard(i) for i in range(8, SHARDS + 1)}
    assert not reader_threads()


def test_the_cli_says_one_line_about_the_stalled_shard(stub: HubStub, files, tmp_path: Path) -> None:
    repo = serve(stub, files, "split12-stall-cli", Fault("stall-body", where=_shard(4)))
    env = {"HF_ENDPOINT": stub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    run = run_cli("check", repo, "--timeout", "2", "--no-verify", env=env, timeout=60)
    assert_one_line_error(run, f"{repo}/{_shard(4)}", "/resolve/", "bytes 0-", "2 s")
    assert run.seconds < 15


def test_ctrl_c_during_a_stalled_read_ends_check_without_tearing_down_around_it(stub: HubStub, files,
                                                                                tmp_path: Path) -> None:
    """Ctrl-C while a batch's read waits on a silent server: check exits 130 with its one line, and the reader
    thread left in that read is not torn down with the interpreter (verbose Python says "thread still has a
    frame" for each one it is; a thread inside C code then can crash the process: issue 47)."""
    repo = serve(stub, files, "split12-stall-ctrl-c", Fault("stall-body", where=_shard(1), seconds=30))
    env = clean_env({"HF_ENDPOINT": stub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1",
                     "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONFAULTHANDLER": "1", "PYTHONVERBOSE": "1"})
    log = tmp_path / "stderr"  # verbose: every import is a line, more than a pipe holds while nobody reads it
    with log.open("w") as stderr:
        seen = stub.received()
        proc = subprocess.Popen([sys.executable, "-m", "mtpinspect", "check", repo, "--timeout", "120", "--no-verify"],
                                stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stub.received() < seen + 3:  # the listing, then the batch's first reads
            time.sleep(0.02)
        time.sleep(1.0)  # the first wave out: shard 1's header read is waiting on its body
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    err = log.read_text()
    assert proc.returncode == INTERRUPTED, err[-2000:]
    assert "mtpinspect: interrupted\n" in err, err[-2000:]
    assert "thread still has a frame" not in err and "Fatal Python error" not in err, err[-3000:]
