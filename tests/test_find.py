"""`mtpinspect find BASE` over the Hub stand-in's model tree (tests/census_tree.py): every derivative judged as
`check` judges it, a verdict per GGUF file, the search's pages followed, a repeated census from the header
cache, one repo's failure a row, the Hub's 429 honoured by the whole census, Ctrl-C printing what was
judged, and bad input as one line."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from census_tree import BASE, QUANTIZED, SEARCH_PAGE_SIZE, Tree, serve_tree
from cli_child import assert_one_line_error, clean_env, run_cli
from hubstub import Fault, HubStub

import mtpinspect
from mtpinspect.cli.find import ProgressLine
from mtpinspect.errors import INTERRUPTED, SourceError
from mtpinspect.inspection.census import REPOS_IN_FLIGHT, Progress, head_state
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.vocabulary import HeadState, RuntimeStatus

SCHEMA = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "find.schema.json").read_text())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HubStub, Tree]]:
    with HubStub() as stub:
        tree = serve_tree(stub, tmp_path_factory.mktemp("tree"))
        stub.add_repo("lonely/Base", {"README.md": b"# no derivatives\n"})
        yield stub, tree


@pytest.fixture()
def hub(served: tuple[HubStub, Tree]) -> Iterator[tuple[HubStub, Tree]]:
    stub, tree = served
    stub.latency = 0.0
    stub.clear_faults()
    stub.reset_counters()
    yield stub, tree
    stub.clear_faults()
    stub.latency = 0.0


def find_json(stub: HubStub, *args: str, timeout: float = 180) -> dict:
    proc = run_cli("find", *args, "--format", "json", "--no-verify", env={"HF_ENDPOINT": stub.url}, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc


def test_every_verdict_is_checks(hub: tuple[HubStub, Tree]) -> None:
    """Each derivative's verdicts are those of `check` (one GGUF model or a checkpoint) or `check --all` (several
    GGUF models) on the same repo: the same rules, not a second set."""
    stub, tree = hub
    census = mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url)
    assert census.found == QUANTIZED and len(census.derivatives) == QUANTIZED and not census.interrupted
    for d in census.derivatives:
        if d.repo == tree.gated:
            with pytest.raises(SourceError, match="gated"):
                mtpinspect.check(d.repo, endpoint=stub.url, verify=False)
            assert d.error is not None and "gated" in d.error and d.usable is None
            continue
        if len(d.files) > 1:
            reports = mtpinspect.check_all(d.repo, endpoint=stub.url, verify=False)
        else:
            reports = [mtpinspect.check(d.repo, endpoint=stub.url, verify=False)]
        assert len(reports) == len(d.files), d.repo
        for report, verdict in zip(reports, d.files):
            assert verdict.error is None, (d.repo, verdict.error)
            assert (verdict.usable, verdict.mtp_layers, verdict.layout, verdict.verdict, verdict.findings) == (
                report.usable, report.mtp_layers, report.layout, report.verdict, report.codes()), d.repo
            assert verdict.runtimes == {k: rv.status for k, rv in report.runtimes.items()}, d.repo
            assert verdict.head is head_state(report)
            ggufs = report.files.get("gguf", [])
            assert verdict.files == [*ggufs, *report.files.get("sidecar", [])]


def test_json_rows_sorted_with_per_file_verdicts(hub: tuple[HubStub, Tree]) -> None:
    stub, tree = hub
    doc = find_json(stub, BASE, "--limit", "0")
    rows = doc["derivatives"]
    assert (doc["base"], doc["relation"], doc["found"], doc["left_out"]) == (BASE, "quantized", QUANTIZED, 0)
    assert {r["repo"] for r in rows} == set(tree.quantized)
    # Working downloads first, then the ones that do not work, then the ones that could not be judged.
    ranks = [0 if r["usable"] else 1 if r["error"] is None else 2 for r in rows]
    assert ranks == sorted(ranks) and ranks[0] == 0 and ranks[-1] == 2
    by_repo = {r["repo"]: r for r in rows}
    two = by_repo["gguf00/GLM-4.7-GGUF"]
    per_file = {f["format"]: f for f in two["files"]}
    assert set(per_file) == {"GGUF BF16", "GGUF Q2_K"}
    assert per_file["GGUF Q2_K"]["head"] == HeadState.low_bit and "LOW_BIT_MTP_HEAD" in per_file["GGUF Q2_K"]["findings"]
    assert per_file["GGUF BF16"]["head"] == HeadState.kept
    assert two["best"] == per_file["GGUF BF16"]["files"] and two["format"] == "GGUF BF16"
    assert by_repo["nvidia/GLM-4.7-NVFP4"]["head"] == HeadState.excluded
    assert by_repo["derived/GLM-4.7-NVFP4-no-mtp"]["head"] == HeadState.dropped
    assert by_repo["derived/GLM-4.7-NVFP4-no-mtp"]["usable"] is False
    assert by_repo["sidecar0/GLM-4.7-MTP-GGUF"]["layout"] == "sidecar"
    gated = by_repo[tree.gated]
    assert gated["usable"] is None and gated["mtp_layers"] is None and "gated" in gated["error"]
    # Both pages of the search were read, each once.
    searches = [r for r in stub.requests() if r.url.startswith("/api/models?")]
    assert len(searches) == -(-QUANTIZED // SEARCH_PAGE_SIZE) == 2


def search_requests(stub: HubStub) -> list[str]:
    """The requests a census cannot do without: the base's listing and the search pages."""
    return [r.url for r in stub.requests() if r.url.startswith("/api/models?") or r.repo_id == BASE]


def test_repeated_census_sends_only_the_search(hub: tuple[HubStub, Tree]) -> None:
    """The search gives each repo's commit; when none moved, the second census takes every listing and header
    from the cache and sends nothing but the search (the base's listing and the two pages). The gated repo's
    files are refused to a request without a token, so none is sent, the first time either."""
    stub, tree = hub
    first = mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url)
    assert any(r.path is not None for r in stub.requests())
    assert [r.path for r in stub.requests(tree.gated)] == [None]  # its listing only
    stub.reset_counters()
    second = mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url)
    sent = [r.url for r in stub.requests()]
    assert len(sent) == 3 and sent == search_requests(stub), sent
    assert second.requests == 3 and second.bytes_cached > 0
    assert [(d.repo, d.usable, d.head, d.best, d.error) for d in second.derivatives] == [
        (d.repo, d.usable, d.head, d.best, d.error) for d in first.derivatives]
    gated = next(d for d in second.derivatives if d.repo == tree.gated)
    assert gated.error is not None and "gated repo" in gated.error and "token" in gated.error


def test_a_moved_repo_is_listed_again(hub: tuple[HubStub, Tree]) -> None:
    """A repo whose main moved since the last census is asked for its listing again, and read again (the header
    cache keys a file by its commit too); no other repo is asked anything."""
    stub, tree = hub
    mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url)
    moved = tree.quantized[0]
    old = stub.sha(moved)
    new = stub.push(moved, {"README.md": b"# moved on\n"}, label="readme")
    assert new != old
    stub.reset_counters()
    census = mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url)
    others = [r for r in stub.requests() if r.url not in search_requests(stub)]
    assert {r.repo_id for r in others} == {moved}
    assert [r.url for r in others if r.path is None] == [f"/api/models/{moved}?blobs=true"]
    assert next(d for d in census.derivatives if d.repo == moved).revision == new


def test_table_footer_limit_and_engine(hub: tuple[HubStub, Tree]) -> None:
    stub, _ = hub
    proc = run_cli("find", BASE, "--limit", "5", "--no-verify", env={"HF_ENDPOINT": stub.url})
    assert proc.returncode == 0, proc.stderr
    assert f"{QUANTIZED} quantized derivative(s) on the Hub" in proc.stdout
    assert f"{QUANTIZED - 5} more derivative(s) not judged: the 5 most downloaded were" in proc.stdout
    assert proc.stderr == ""  # no progress bar: stderr is not a terminal
    doc = find_json(stub, BASE, "--limit", "0", "--engine", "vllm")
    assert doc["derivatives"] and all(r["runtimes"]["vllm"] in ("supported", "at-risk") for r in doc["derivatives"])
    assert all(not r["repo"].startswith(("gguf", "split", "sidecar")) for r in doc["derivatives"])
    assert doc["not_on_engine"] == QUANTIZED - len(doc["derivatives"])
    llama = find_json(stub, BASE, "--limit", "0", "--engine", "llama.cpp")
    assert {r["repo"] for r in llama["derivatives"]} >= {"gguf00/GLM-4.7-GGUF", "sidecar0/GLM-4.7-MTP-GGUF"}
    assert all(RuntimeStatus(r["runtimes"]["llama.cpp"]).usable for r in llama["derivatives"])


def test_relation_all(hub: tuple[HubStub, Tree]) -> None:
    stub, tree = hub
    doc = find_json(stub, BASE, "--relation", "all", "--limit", "0")
    relations = {r["repo"]: r["relation"] for r in doc["derivatives"]}
    assert relations[tree.finetune] == "finetune" and relations[tree.adapter] == "adapter"
    assert doc["found"] == QUANTIZED + 2
    ft = find_json(stub, BASE, "--relation", "finetune")
    assert [r["repo"] for r in ft["derivatives"]] == [tree.finetune]


def test_one_repos_failure_is_a_row(hub: tuple[HubStub, Tree]) -> None:
    stub, _ = hub
    gone = "split0/GLM-4.7-GGUF"
    stub.add_fault(gone, Fault("replace", status=404, headers={"X-Error-Code": "RepoNotFound"}, body=b"{}"))
    stub.add_fault("split1/GLM-4.7-GGUF", Fault("stall", where="GLM-4.7-BF16-00001-of-00002.gguf"))
    doc = find_json(stub, BASE, "--limit", "0", "--timeout", "1")
    rows = {r["repo"]: r for r in doc["derivatives"]}
    assert "repository not found" in rows[gone]["error"] and rows[gone]["files"] == []
    assert "no answer from the Hub for 1 s" in rows["split1/GLM-4.7-GGUF"]["error"]
    assert len(rows) == QUANTIZED and sum(1 for r in rows.values() if r["usable"]) >= 20


def test_retry_after_holds_back_the_whole_census(hub: tuple[HubStub, Tree]) -> None:
    """A 429 with Retry-After on one repo's listing: no request of the census goes out until the wait is over."""
    stub, _ = hub
    stub.latency = 0.02
    stub.add_fault("gguf03/GLM-4.7-GGUF", Fault("replace", times=1, status=429, headers={"Retry-After": "2"}, body=b"{}"))
    census = mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url)
    assert all(d.error is None for d in census.derivatives if d.repo != "gated/GLM-4.7-GGUF")
    records = stub.requests()
    limited = next(r for r in records if r.status == 429)
    # A request already past its turn when the 429 reached the client still goes out, and on a loaded machine
    # its thread may wait a second for the GIL while other threads parse headers: at most one per repo in
    # flight. Had the wait not held the census back, the requests after it would all fall in the window.
    during = [r for r in records if limited.end + 0.1 < r.start < limited.end + 1.95]
    after = [r for r in records if r.start >= limited.end + 2]
    assert len(during) < REPOS_IN_FLIGHT, [(r.repo_id, r.path, round(r.start - limited.end, 3)) for r in during]
    assert len(after) > 4 * REPOS_IN_FLIGHT


def test_progress_bar_on_a_terminal_only() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term, pipe = Terminal(), io.StringIO()
    for stream in (term, pipe):
        bar = ProgressLine(stream)
        bar(Progress(0, 4, "org/a", 0.0))
        bar(Progress(2, 4, "org/b", 3.0))
        bar.clear()
    assert pipe.getvalue() == ""
    assert "find [0/4] org/a" in term.getvalue() and "find [2/4] org/b, ETA 3 s" in term.getvalue()
    assert term.getvalue().endswith("\r")


def test_ctrl_c_prints_what_was_judged(hub: tuple[HubStub, Tree]) -> None:
    stub, tree = hub
    stub.latency = 0.25
    # One derivative never answers (its listing and every file stall), so on a machine of any speed the
    # census is still running when Ctrl-C comes: a fixed sleep alone once let it finish first.
    stalled = tree.quantized[-2]
    for where in ("listing", *stub.files(stalled)):
        stub.add_fault(stalled, Fault("stall", where=where))
    # faulthandler: a crash prints every thread's stack (it once ended in SIGSEGV with nothing printed, issue 47).
    env = clean_env({"HF_ENDPOINT": stub.url, "PYTHONPATH": os.pathsep.join(sys.path), "MTPINSPECT_TIMEOUT": "120",
                     "PYTHONFAULTHANDLER": "1"})
    proc = subprocess.Popen([sys.executable, "-m", "mtpinspect", "find", BASE, "--limit", "0", "--no-verify"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # Past the search's pages and into the repos' reads, counted as they arrive: the request log waits until
    # no answer is in flight, up to 5 s a look, and at 16 repos at a time the census then all but ended.
    seen, deadline = stub.received(), time.monotonic() + 60
    while time.monotonic() < deadline and stub.received() < seen + 24:
        time.sleep(0.05)
    time.sleep(1.5)  # some repos judged, others not yet
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == INTERRUPTED, err[-2000:]
    assert "interrupted: the rows above are the derivatives judged before Ctrl-C" in out
    assert "deadline" not in out  # the repos left were stopped by Ctrl-C, not by --deadline
    assert "Traceback" not in err
    listed = re.search(r"; (\d+) listed, ", out)  # the rows (a row's wrapped cells are lines of their own)
    assert listed is not None and 0 < int(listed.group(1)) < QUANTIZED, out[:300]


def test_ctrl_c_never_tears_the_interpreter_down_around_a_worker(hub: tuple[HubStub, Tree], tmp_path: Path) -> None:
    """A worker thread still inside a read when the command ends (a repo that answers nothing): the process
    ends without the interpreter's teardown around it. Python, verbose, says "thread still has a frame" for
    each thread it tears down so (bpo-20526): `find` once ended so, and now and then in a segmentation fault
    with nothing printed (issue 47)."""
    stub, tree = hub
    stub.latency = 0.25
    stalled = tree.quantized[0]  # the most downloaded: its listing is among the first reads
    for where in ("listing", *stub.files(stalled)):
        stub.add_fault(stalled, Fault("stall", where=where, seconds=30))
    env = clean_env({"HF_ENDPOINT": stub.url, "PYTHONPATH": os.pathsep.join(sys.path), "MTPINSPECT_TIMEOUT": "120",
                     "PYTHONFAULTHANDLER": "1", "PYTHONVERBOSE": "1"})
    log = tmp_path / "stderr"  # verbose: every import is a line, more than a pipe holds while nobody reads it
    with log.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "mtpinspect", "find", BASE, "--limit", "0", "--no-verify"],
                                stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        # Inside the census: past the search's pages and some repos' reads (counted as they arrive: the
        # request log waits for answers, and a stalled one never comes).
        seen, deadline = stub.received(), time.monotonic() + 60
        while time.monotonic() < deadline and stub.received() < seen + 24:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    err = log.read_text()
    assert proc.returncode == INTERRUPTED, err[-2000:]
    assert "interrupted: the rows above are the derivatives judged before Ctrl-C" in out
    assert "thread still has a frame" not in err and "Fatal Python error" not in err, err[-3000:]


def test_ctrl_c_stops_the_census(hub: tuple[HubStub, Tree]) -> None:
    """Ctrl-C in a program that called the API: find returns what was judged, and nothing it started goes on
    behind the caller's back: no repo starts any more, and no request goes out after it returned (its
    worker threads once went on judging every repo left, requests and all, until the process ended)."""
    stub, tree = hub
    stub.latency = 0.25
    stalled = tree.quantized[-2]
    for where in ("listing", *stub.files(stalled)):
        stub.add_fault(stalled, Fault("stall", where=where, seconds=30))
    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main  # a signal is handled in the main thread only
    sent: list[bool] = []

    def progress(p: Progress) -> None:
        if p.done >= 3 and not sent:
            sent.append(True)
            signal.pthread_kill(main, signal.SIGINT)

    census = mtpinspect.find(BASE, limit=None, verify=False, endpoint=stub.url, progress=progress,
                             policy=FetchPolicy(timeout=30))
    returned = stub.received()
    assert census.interrupted and 3 <= len(census.derivatives) < QUANTIZED
    time.sleep(2.0)  # a census going on behind the caller sends a request every 0.25 s or faster
    assert stub.received() == returned


def test_bad_input(hub: tuple[HubStub, Tree]) -> None:
    stub, _ = hub
    env = {"HF_ENDPOINT": stub.url}
    assert_one_line_error(run_cli("find", "nobody/Nothing", env=env), "nobody/Nothing", "repository not found")
    assert_one_line_error(run_cli("find", "not-a-repo", env=env), "not-a-repo", "not a Hub repo id")
    empty = run_cli("find", "lonely/Base", env=env)
    assert empty.returncode == 0, empty.stderr
    assert "lonely/Base: no quantized derivatives on the Hub" in empty.stdout and "(none)" in empty.stdout
    stub.add_fault(BASE, Fault("replace", where="search", body=b'{"models": []}'))
    assert_one_line_error(run_cli("find", BASE, env=env), "search base_model:quantized:zai-org/GLM-4.7", "not a list of models")
    stub.clear_faults()
    stub.add_fault(BASE, Fault("replace", where="search", body=b'[{"id": 7}]'))
    assert_one_line_error(run_cli("find", BASE, env=env), "model [0]", "not a model with a repo id")
    stub.clear_faults()
    link = {"Link": '<http://elsewhere.invalid/api/models?cursor=20>; rel="next"'}
    stub.add_fault(BASE, Fault("replace", where="search", headers=link, body=b"[]"))
    assert_one_line_error(run_cli("find", BASE, env=env), "next-page link", "not a model search of")


def test_a_gated_repo_without_a_token(tmp_path: Path) -> None:
    """Without a token, a gated repo's files are not asked for (the Hub refuses them all) and its row says so;
    once a census with a token has kept its headers, one without a token reads them from the cache, as
    check does (docs/faults.md)."""
    gguf = Path(mtpinspect.__file__).parent / "data" / "trained" / "tiny-glm-mtp-Q8_0.gguf"
    with HubStub(tokens={"hf_good": {"acme/Tiny-GGUF"}}) as stub:
        stub.add_repo("acme/Tiny", {"README.md": b"# base\n"})
        stub.add_repo("acme/Tiny-GGUF", {"Tiny-Q8_0.gguf": gguf}, gated=True, base_model=("quantized", "acme/Tiny"))
        refused = mtpinspect.find("acme/Tiny", verify=False, endpoint=stub.url)
        assert "gated repo" in (refused.derivatives[0].error or "")
        assert [r.path for r in stub.requests("acme/Tiny-GGUF")] == [None]  # the listing only
        assert mtpinspect.find("acme/Tiny", verify=False, endpoint=stub.url, token="hf_good").derivatives[0].usable
        stub.reset_counters()
        cached = mtpinspect.find("acme/Tiny", verify=False, endpoint=stub.url)
        assert cached.derivatives[0].usable and cached.derivatives[0].error is None
        assert stub.requests("acme/Tiny-GGUF") == []  # not even its listing: its main has not moved


def test_a_repo_opened_since_is_read(tmp_path: Path) -> None:
    """Gating is a setting, not a commit: the search's gated state stands over the listing kept for the commit,
    so a gated repo opened since the last census is read, not refused from the cache."""
    gguf = Path(mtpinspect.__file__).parent / "data" / "trained" / "tiny-glm-mtp-Q8_0.gguf"
    with HubStub() as stub:
        stub.add_repo("acme/Tiny", {"README.md": b"# base\n"})
        stub.add_repo("acme/Tiny-GGUF", {"Tiny-Q8_0.gguf": gguf}, gated=True, base_model=("quantized", "acme/Tiny"))
        assert "gated repo" in (mtpinspect.find("acme/Tiny", verify=False, endpoint=stub.url).derivatives[0].error or "")
        stub.set_gated("acme/Tiny-GGUF", False)
        stub.reset_counters()
        opened = mtpinspect.find("acme/Tiny", verify=False, endpoint=stub.url).derivatives[0]
        assert opened.usable and opened.error is None
        assert [r.path for r in stub.requests("acme/Tiny-GGUF")][:1] == ["Tiny-Q8_0.gguf"]  # no listing: read at once
