"""Issue 45: the pinned sdist is fetched as one file from the index pip is configured with (PEP 691 JSON or
PEP 503 HTML, a file:// folder, find-links), never by `pip download`, which installs the sdist's build
backend to prepare its metadata (5 min 46 s of a first run). A loopback index serves the real sdist."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cliproc import run_cli
from conftest import SHARED_SERVERS

from mtpinspect.runtime.pin import PINNED_SDIST_NAME
from mtpinspect.runtime.sdist import PipIndexes, fetch_from_index, pip_indexes


@pytest.fixture(scope="module")
def sdist() -> Path:
    found = SHARED_SERVERS / PINNED_SDIST_NAME
    if not found.is_file():
        pytest.skip("the pinned sdist is not in the shared cache yet (the first pinned build puts it there)")
    return found


class _Index(http.server.ThreadingHTTPServer):
    """A simple index on 127.0.0.1 with one project page: JSON when asked for it, else HTML."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self.requests: list[tuple[str, str]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Index

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        accept = self.headers.get("Accept", "")
        self.server.requests.append((self.path, accept))
        if self.path == "/simple/llama-cpp-python/":
            if "application/vnd.pypi.simple.v1+json" in accept:
                body = json.dumps({"meta": {"api-version": "1.0"}, "name": "llama-cpp-python",
                                   "files": [{"filename": n, "url": f"/files/{n}", "hashes": {}} for n in self.server.files]}).encode()
                kind = "application/vnd.pypi.simple.v1+json"
            else:
                body = "".join(f'<a href="../../files/{n}#sha256=x">{n}</a><br>' for n in self.server.files).encode()
                kind = "text/html"
            self._answer(200, kind, body)
        elif self.path.startswith("/files/") and self.path[7:] in self.server.files:
            path = self.server.files[self.path[7:]]
            self.send_response(200)
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()
            with path.open("rb") as fh:
                shutil.copyfileobj(fh, self.wfile)
        else:
            self._answer(404, "text/plain", b"not found")

    def _answer(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def index(sdist: Path) -> Iterator[_Index]:
    server = _Index({PINNED_SDIST_NAME: sdist})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _pip_env(index_url: str) -> dict[str, str]:
    """pip reads no configuration file and only this index."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": index_url, "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": ""}


def test_pips_settings_in_their_order() -> None:
    listed = ("global.index-url='https://mirror.example/simple'\nglobal.extra-index-url='file:///a file:///b'\n"
              ":env:.index-url='http://127.0.0.1:1/simple'\ndownload.find-links='/w'\nglobal.cert='/ca.pem'\n")
    found = pip_indexes(listed)
    assert found.indexes == ("http://127.0.0.1:1/simple", "file:///a", "file:///b")
    assert found.find_links == ("/w",) and found.cert == "/ca.pem"
    assert pip_indexes("global.no-index='true'\n").indexes == ()
    assert pip_indexes("").indexes == ("https://pypi.org/simple",)


def test_the_build_fetches_the_file_alone_from_pips_index(index: _Index, tmp_path: Path) -> None:
    """`runtime build` with pip pointed at a loopback index: the page is asked for (as JSON first), the
    sdist taken from it, and pip never runs (the build log has no `pip download`). cmake is a stand-in
    that fails at once: this test is about the download."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("cmake", "c++"):
        (bin_dir / name).write_text("#!/bin/sh\necho 'CMake Error: stand-in'; exit 1\n")
        (bin_dir / name).chmod(stat.S_IRWXU)
    cache = tmp_path / "cache"
    proc = run_cli("runtime", "build", "--backend", "cpu", timeout=300,
                   env={**os.environ, **_pip_env(index.url), "PATH": f"{bin_dir}:{os.environ['PATH']}",
                        "MTPINSPECT_CACHE_DIR": str(cache)})
    assert proc.returncode == 2 and "failed at cmake configure" in proc.stderr, proc.stderr
    log = (cache / "llama-server" / "build-cpu.log").read_text()
    assert f"fetched http://127.0.0.1:{index.server_address[1]}/files/{PINNED_SDIST_NAME}" in log
    assert "pip download" not in log and "pip download" not in proc.stderr
    assert index.requests[0][0] == "/simple/llama-cpp-python/" and "vnd.pypi.simple.v1+json" in index.requests[0][1]
    got = cache / "llama-server" / PINNED_SDIST_NAME
    assert got.stat().st_size == (SHARED_SERVERS / PINNED_SDIST_NAME).stat().st_size and got.stat().st_mode & 0o044


def test_an_html_index_a_file_folder_and_find_links(index: _Index, sdist: Path, tmp_path: Path) -> None:
    where = PipIndexes((index.url,), (), None, 30)
    dest = tmp_path / "a"
    dest.mkdir()
    # PEP 503: an index that answers HTML only.
    index.files = {"other.tar.gz": sdist, PINNED_SDIST_NAME: sdist}
    fetched = fetch_from_index(dest, where)
    assert fetched is not None and fetched[1].endswith(f"/files/{PINNED_SDIST_NAME}")
    # A file:// index folder (pip's own layout: simple/<project>/<file>) and a find-links folder.
    folder = tmp_path / "simple" / "llama-cpp-python"
    folder.mkdir(parents=True)
    (folder / PINNED_SDIST_NAME).symlink_to(sdist)
    for where in (PipIndexes(((tmp_path / "simple").as_uri(),), (), None, 30), PipIndexes((), (str(folder),), None, 30)):
        dest = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
        dest.mkdir()
        fetched = fetch_from_index(dest, where)
        assert fetched is not None and (dest / PINNED_SDIST_NAME).is_file()


def test_a_file_whose_hash_is_not_the_pinned_one_is_not_taken(index: _Index, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.tar.gz"
    wrong.write_bytes(b"not the pinned sdist")
    index.files = {PINNED_SDIST_NAME: wrong}
    dest = tmp_path / "dest"
    dest.mkdir()
    assert fetch_from_index(dest, PipIndexes((index.url, "http://127.0.0.1:9/simple"), (), None, 5)) is None
    assert list(dest.iterdir()) == []  # nothing half-written left


@pytest.mark.parametrize("quiet", ["1", "3"])
def test_pips_index_is_read_under_pip_quiet(quiet: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PIP_QUIET (as .ci/run sets it, or `quiet` in a pip.conf) silences `pip config list`; the index the user
    named must still be found, not taken for PyPI (CI fetched from PyPI past the test's loopback index)."""
    monkeypatch.setenv("PIP_QUIET", quiet)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    assert pip_indexes().indexes[0] == "http://127.0.0.1:9/simple"
