"""The Hub's model tree: the repos that derive from a base model, from the Hub's model search.

The Hub tags every derivative with its relation to its base (``base_model:quantized:ORG/NAME``,
``base_model:finetune:...``, ``base_model:adapter:...``, ``base_model:merge:...``) and answers a model search
by tag. The request is the one huggingface_hub's ``HfApi.list_models(filter=TAG, sort="downloads")`` makes
(``GET /api/models?filter=TAG&sort=downloads``), and the pages are followed as its ``paginate`` does, by the
``Link: <...>; rel="next"`` header. Each request goes through sources.fetch (bounded in time and bytes,
retried, on the command's clock); a page link must stay on the endpoint's model search, and each model
of an answer must name a repo: anything else is the Hub (or a proxy) answering wrongly, and the
command stops on it with one line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from huggingface_hub import constants

from mtpinspect.errors import SourceError, shown
from mtpinspect.sources.fetch import fetch
from mtpinspect.sources.filenames import repo_id_error
from mtpinspect.sources.hub import COMMIT_SHA, ListedMain, _hub_errors
from mtpinspect.sources.policy import Clock
from mtpinspect.sources.reader import JSON_LIMITS, ByteMeter, JsonKind, parse_json
from mtpinspect.sources.waves import Waves
from mtpinspect.vocabulary import Relation

# A popular base has a few thousand derivatives; the Hub sends up to 1,000 per page. A search that pages
# on past this is a server looping on its own links.
MAX_PAGES = 50
# Bounds on the whole search, all relations and pages together, checked as each page arrives: the 16 MiB
# cap is per page, so 50 huge pages once cost 1.76 GB and 72 s before any error. 200,000 models (about
# 100 MiB of the Hub's JSON) is 40 times the largest real model tree.
MAX_PAGE_MODELS = 5_000  # five times the Hub's own page
MAX_MODELS = 200_000
MAX_SEARCH_BYTES = 128 << 20
SEARCH_FIELDS = ("downloads", "sha", "gated")


@dataclass(frozen=True)
class Listed:
    """A derivative as the search lists it."""

    repo_id: str
    relation: Relation
    downloads: int | None  # the Hub's count of the last 30 days
    error: str | None = None  # an id that is not a valid repo id: its row says so, nothing is asked for it
    main: ListedMain | None = None  # its main's commit (the key of its kept listing) and gated state; None: not given


@dataclass
class _Budget:
    """What the rest of one search may still bring: body bytes and models, over every relation's pages
    (read at the same time, hence the lock)."""

    bytes_left: int = MAX_SEARCH_BYTES
    models_left: int = MAX_MODELS
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(self, nbytes: int, models: int, what: str) -> None:
        with self._lock:
            self.bytes_left -= nbytes
            self.models_left -= models
            if self.models_left < 0:
                raise SourceError(f"{what}: the search lists more than {MAX_MODELS:,} models in all; not reading on "
                                  "(no model tree is that large)")


@dataclass
class Search:
    """The derivatives of ``base`` by relation (a repo listed under several relations: the first), and what
    the search cost."""

    base: str
    derivatives: list[Listed]
    meter: ByteMeter


def tag(relation: Relation, base: str) -> str:
    return f"base_model:{relation}:{base}"


def search_derivatives(
    base: str,
    relations: list[Relation],
    *,
    token: str | None = None,
    endpoint: str | None = None,
    clock: Clock,
) -> Search:
    """The repos tagged as ``relations`` of ``base``, all pages. The base's own listing goes out with the first
    page of each relation's search (one wave): an unknown base fails as `check` fails on it."""
    refused = repo_id_error(base)
    if refused is not None:
        raise SourceError(refused)
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    meter, waves = ByteMeter(), Waves()
    headers = {**clock.auth_headers(token), "Accept-Encoding": "gzip"}

    def base_listing() -> None:
        with _hub_errors(base, None):
            fetch("GET", f"{endpoint}/api/models/{base}", headers=headers, clock=clock, meter=meter, waves=waves,
                  what=f"{base} listing", limit=JSON_LIMITS[JsonKind.listing].max_bytes)

    budget = _Budget()

    def pages(relation: Relation) -> list[Listed]:
        return _all_pages(endpoint, tag(relation, base), relation, headers, clock, meter, waves, budget)

    jobs = [base_listing, *[lambda r=r: pages(r) for r in relations]]
    _, *found = waves.run(jobs)
    # The Hub's repo ids are case-insensitive (it answers A/B for a/b): case variants are one derivative,
    # judged once, under the spelling listed first.
    seen: dict[str, Listed] = {}
    for listed in (item for page in found for item in page):
        seen.setdefault(listed.repo_id.lower(), listed)
    seen.pop(base.lower(), None)  # a repo that tags itself as its own base is not a derivative
    return Search(base, list(seen.values()), meter)


def _all_pages(endpoint: str, tag_: str, relation: Relation, headers: dict[str, str], clock: Clock, meter: ByteMeter,
               waves: Waves, budget: _Budget) -> list[Listed]:
    # expand: the fields each model comes with (asked for, the Hub sends only these besides the id); the sha
    # lets find take a repo's listing from the header cache when its main has not moved, and gated, fresh,
    # stands over the kept listing's.
    query = [("filter", tag_), ("sort", "downloads"), *(("expand[]", f) for f in SEARCH_FIELDS)]
    url: str | None = f"{endpoint}/api/models?" + urlencode(query)
    listed: list[Listed] = []
    visited: dict[str, int] = {}  # page URL -> its page number
    page_cap = JSON_LIMITS[JsonKind.listing].max_bytes
    while url is not None:
        if url in visited:
            raise SourceError(f"search {tag_}: the Hub's page links loop: page {len(visited)} links back to page "
                              f"{visited[url]} ({shown(url)}); not following them")
        if len(visited) >= MAX_PAGES:
            raise SourceError(f"search {tag_}: the Hub's page links go on past {len(visited)} pages "
                              f"(next: {shown(url)}); not following them")
        visited[url] = len(visited) + 1
        what = f"search {tag_} (page {len(visited)})"
        # Read no more than the page cap, nor than what the whole search may still bring.
        limit = max(0, min(page_cap, budget.bytes_left))
        with _hub_errors(tag_, None):
            answer = fetch("GET", url, headers=headers, clock=clock, meter=meter, waves=waves, what=what, limit=limit)
        if not answer.complete:
            whole = limit < page_cap
            raise SourceError(f"{what}: the Hub's answer" + (
                f"s to this search come to more than {MAX_SEARCH_BYTES >> 20} MiB in all" if whole else
                f" is larger than {page_cap >> 20} MiB") + "; not reading on")
        page = parse_json(answer.body, what, JsonKind.listing)
        if isinstance(page, list) and len(page) > MAX_PAGE_MODELS:
            raise SourceError(f"{what}: the page lists {len(page):,} models, more than the {MAX_PAGE_MODELS:,} a page "
                              "may; not reading on")
        budget.take(len(answer.body), len(page) if isinstance(page, list) else 0, what)
        listed += _models(page, what, relation)
        url = _next_page(answer.headers.get("link"), endpoint, what)
    return listed


def _models(page: Any, what: str, relation: Relation) -> list[Listed]:
    """The models of one answer, each checked (a proxy or mirror may send anything). An entry that is not a
    model with a string id makes the answer no model search: one line. An id that the repo-id rule refuses
    (sources/filenames.py repo_id_problem) is one model's fault: its row carries the error."""
    if not isinstance(page, list):
        raise SourceError(f"{what}: the Hub answered {shown(page)}, not a list of models")
    models = []
    for i, item in enumerate(page):
        repo_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(repo_id, str) or not repo_id:
            raise SourceError(f"{what}: model [{i}] is {shown(item)}, not a model with a repo id")
        downloads = item.get("downloads")
        if downloads is not None and (not isinstance(downloads, int) or isinstance(downloads, bool) or downloads < 0):
            raise SourceError(f"{what}: the downloads of {shown(repo_id)} are {shown(downloads)}, not a count")
        sha, gated = item.get("sha"), item.get("gated")
        # A sha that is not one only costs the cache: the repo's listing is asked for.
        main = (ListedMain(sha, gated if isinstance(gated, (bool, str)) else None)
                if isinstance(sha, str) and COMMIT_SHA.fullmatch(sha) else None)
        models.append(Listed(repo_id, relation, downloads, repo_id_error(repo_id), main))
    return models


def _next_page(link: str | None, endpoint: str, what: str) -> str | None:
    """The rel="next" URL of a Link header (huggingface_hub reads it with httpx's Response.links); it must be
    a model search of the same endpoint: a link elsewhere would send the token there."""
    if not link:
        return None
    import httpx2

    try:
        url = httpx2.Response(200, headers={"link": link}).links.get("next", {}).get("url")
    except (ValueError, TypeError):
        raise SourceError(f"{what}: the Hub's Link header {shown(link)} cannot be read") from None
    if url is None:
        return None
    base, target = urlsplit(endpoint), urlsplit(url)
    if (target.scheme, target.netloc) != (base.scheme, base.netloc) or target.path != f"{base.path}/api/models":
        raise SourceError(f"{what}: the Hub's next-page link {shown(url)} is not a model search of {endpoint}; "
                          "not following it")
    return url
