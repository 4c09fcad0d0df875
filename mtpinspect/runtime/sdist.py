"""The pinned llama-cpp-python sdist fetched as one file from the package index pip is configured with.

`pip download --no-binary :all:` prepares the sdist's metadata, which means installing its build backend
(scikit-build-core and its own build dependencies, from source under :all:): 5 min 46 s of a first run on
a fresh machine, for a file whose hash is pinned anyway. So the file is taken from the index's project page
(PEP 691 JSON, else PEP 503 HTML; a file:// index folder as pip reads one) at the indexes pip would ask:
its index-url and extra-index-urls, or its find-links, as `pip config list` gives them with the
environment's PIP_* settings over the configuration files, and its `cert`. The bytes are checked against
the pinned sha256 as before. Where no index offers the file (a proxy that wants pip's credentials, say),
the caller falls back to `pip download`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import ssl
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from mtpinspect.runtime.pin import PINNED_PACKAGE, PINNED_SDIST_NAME, PINNED_SDIST_SHA256

DEFAULT_INDEX = "https://pypi.org/simple"
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
# PyPI's page for llama-cpp-python lists every file of every release: about 0.1 MB; a bound, not a filter.
_MAX_PAGE_BYTES = 16 << 20
# The pinned sdist is 76.6 MB.
_MAX_SDIST_BYTES = 512 << 20
_CONFIG_TIMEOUT_S = 60.0
# A download that trickles on past this is given up (then pip tries): 76.6 MB take seconds on a slow line.
_FETCH_DEADLINE_S = 1800.0
_BLOCK = 1 << 20
_CONFIG_RE = re.compile(r"^(?P<section>[^.]*)\.(?P<key>[\w-]+)='(?P<value>.*)'$")


@dataclass(frozen=True)
class PipIndexes:
    """Where pip would look for a file: its indexes (none with no-index), its find-links, its CA bundle."""

    indexes: tuple[str, ...]
    find_links: tuple[str, ...]
    cert: str | None
    timeout: float


def pip_indexes(config_list: str | None = None) -> PipIndexes:
    """pip's settings for where to look, from `pip config list` (``config_list``: its output, run when
    None): an environment variable (":env:") over the download command's section over "global"."""
    if config_list is None:
        from mtpinspect.runtime.process import run_bounded

        # pip prints `config list` at its info level: PIP_QUIET (or `quiet` in a pip.conf) would make it print
        # nothing, and the user's index would be taken for PyPI. The environment outranks every config file.
        config_list, _ = run_bounded([sys.executable, "-m", "pip", "config", "list"], _CONFIG_TIMEOUT_S,
                                     env={"PIP_QUIET": "0"})
    values: dict[tuple[str, str], str] = {}
    for line in config_list.splitlines():
        match = _CONFIG_RE.match(line.strip())
        if match is not None:
            values[(match["section"], match["key"])] = match["value"]

    def setting(key: str) -> str | None:
        return next((values[(s, key)] for s in (":env:", "download", "global") if (s, key) in values), None)

    no_index = (setting("no-index") or "").lower() in ("1", "true", "yes", "on")
    index = setting("index-url") or DEFAULT_INDEX
    indexes = () if no_index else (index, *(setting("extra-index-url") or "").split())
    try:
        timeout = float(setting("timeout") or setting("default-timeout") or 15)
    except ValueError:
        timeout = 15.0
    return PipIndexes(indexes, tuple((setting("find-links") or "").split()), setting("cert"),
                      min(max(timeout, 1.0), 600.0))


class _Anchors(HTMLParser):
    """The links of a PEP 503 page (or a find-links page): (href, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((self._href, data.strip()))
            self._href = None


def _open(url: str, where: PipIndexes, accept: str | None = None):  # noqa: ANN202 - urllib's response
    context = ssl.create_default_context(cafile=where.cert) if where.cert and url.startswith("https:") else None
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    return urllib.request.urlopen(request, timeout=where.timeout, context=context)  # noqa: S310 - pip's own index URLs


def _read(response, limit: int) -> bytes:  # noqa: ANN001
    data = response.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{response.geturl()}: more than {limit} bytes")
    return data


def _links_in(url: str, where: PipIndexes) -> Iterator[str]:
    """The URLs of PINNED_SDIST_NAME on one index page or find-links location."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("", "file"):
        folder = Path(urllib.request.url2pathname(parsed.path) if parsed.scheme else url)
        if (folder / PINNED_SDIST_NAME).is_file():
            yield (folder / PINNED_SDIST_NAME).as_uri()
        if not (folder / "index.html").is_file():
            return
        url = (folder / "index.html").as_uri()
    with _open(url, where, f"{_SIMPLE_JSON}, text/html;q=0.1") as response:
        kind = response.headers.get_content_type()
        page = _read(response, _MAX_PAGE_BYTES)
        base = response.geturl()
    if kind == _SIMPLE_JSON:
        files = json.loads(page).get("files", [])
        yield from (urllib.parse.urljoin(base, f["url"]) for f in files if isinstance(f, dict) and f.get("filename") == PINNED_SDIST_NAME)
        return
    anchors = _Anchors()
    anchors.feed(page.decode("utf-8", errors="replace"))
    for href, text in anchors.links:
        name = urllib.parse.unquote(urllib.parse.urlparse(href).path.rsplit("/", 1)[-1])
        if PINNED_SDIST_NAME in (name, text):
            yield urllib.parse.urljoin(base, href)


def fetch_from_index(dest: Path, where: PipIndexes | None = None) -> tuple[Path, str] | None:
    """PINNED_SDIST_NAME downloaded into ``dest`` from the first location pip is configured with that has it,
    its sha256 the pinned one: (the file, its URL without the query). None where no location has it
    (every error on the way is one location less: the caller falls back to pip)."""
    where = where or pip_indexes()
    for url in _urls(where):
        handle, name = tempfile.mkstemp(prefix=".sdist-", dir=dest)
        os.close(handle)
        partial = Path(name)
        try:
            digest = hashlib.sha256()
            deadline = time.monotonic() + _FETCH_DEADLINE_S
            with _open(url, where) as response, partial.open("wb") as out:
                size = 0
                while block := response.read(_BLOCK):
                    size += len(block)
                    if size > _MAX_SDIST_BYTES or time.monotonic() > deadline:
                        raise OSError(f"{url}: more than {_MAX_SDIST_BYTES} bytes or {_FETCH_DEADLINE_S:g} s")
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != PINNED_SDIST_SHA256:
                continue  # another file under the name: the next location, else pip
            target = dest / PINNED_SDIST_NAME
            partial.chmod(0o644)  # mkstemp's file is private; the cache is readable like any program folder
            os.replace(partial, target)
            return target, url.split("#", 1)[0]
        except (OSError, ValueError):
            continue
        finally:
            with contextlib.suppress(OSError):
                partial.unlink()
    return None


def _urls(where: PipIndexes) -> Iterator[str]:
    """Every candidate URL, a location that cannot be read skipped."""
    locations = [(i.rstrip("/") + f"/{PINNED_PACKAGE}/") for i in where.indexes] + list(where.find_links)
    for location in locations:
        try:
            yield from list(_links_in(location, where))
        except (OSError, ValueError, UnicodeError, AttributeError, TypeError, KeyError):
            continue  # a page that is not what PEP 503/691 describe: the next location

