"""Shared test set-up: the test helpers in this folder are importable as plain modules, and every test
has its own mtpinspect cache folder (MTPINSPECT_CACHE_DIR): a check never finds the header cache of another
test, or of an earlier run, while the built llama-server stays the shared one (a link to it)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mtpinspect.cache_dir import CACHE_ENV  # noqa: E402
from mtpinspect.runtime.build_cache import cache_root  # noqa: E402
from mtpinspect.runtime.find import ServerBinary, find_server  # noqa: E402

SHARED_SERVERS = cache_root()  # read before any test moves the cache folder


def own_cache_folder(folder: Path) -> Path:
    """``folder`` made a cache folder whose built llama-servers are the shared ones."""
    SHARED_SERVERS.mkdir(parents=True, exist_ok=True)
    (folder / SHARED_SERVERS.name).symlink_to(SHARED_SERVERS, target_is_directory=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """For what runs before a test's own folder is set (module-scoped fixtures)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(own_cache_folder(tmp_path_factory.mktemp("session-cache"))))
        yield


@pytest.fixture(scope="session")
def built_server() -> ServerBinary:
    """The pinned llama-server (and the verify helper, built with it), found or built once."""
    return find_server(build=True, progress=print)


@pytest.fixture(autouse=True)
def _server_before_the_test(request: pytest.FixtureRequest) -> None:
    """A `server` test starts with llama-server built: on a fresh machine the build takes minutes, which
    a test that runs the CLI under a time limit (a subprocess timeout) must not pay inside that limit."""
    if request.node.get_closest_marker("server") is not None:
        request.getfixturevalue("built_server")


@pytest.fixture(autouse=True)
def _test_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(own_cache_folder(tmp_path_factory.mktemp("cache"))))
