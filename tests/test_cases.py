"""Every real-world case in cases/ is a test: `check` over the loopback Hub, and from a local snapshot.

The Hub stand-in serves each case as a repo (stand-in weights with true headers, data sparse) and
counts the bytes it sends, which is how these tests prove that no weight file was downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from casekit import Case, load_cases, materialize, serve_cases
from hubstub import HubStub
from huggingface_hub import HfApi

import mtpinspect
from mtpinspect.jsonable import to_jsonable

CASES = load_cases()
SCHEMA = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "check.schema.json").read_text())
# A header read may fetch the first 2 MiB of a GGUF or the first 100 kB of a safetensors shard.
HEADER_BUDGET = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with HubStub() as stub:
        repos = serve_cases(stub, CASES, tmp_path_factory.mktemp("cases"))
        yield stub, repos


def _compare(case: Case, report: mtpinspect.CheckReport) -> list[str]:
    exp, got = case.expect, to_jsonable(report)
    problems = []
    if "exit" in exp and exp["exit"] != report.exit_code:
        problems.append(f"exit {report.exit_code} != {exp['exit']}")
    for key in ("mtp_layers", "layout"):
        if key in exp and exp[key] != got[key]:
            problems.append(f"{key} {got[key]!r} != {exp[key]!r}")
    for key, value in (exp.get("quantization") or {}).items():
        if got["quantization"].get(key) != value:
            problems.append(f"quantization.{key} {got['quantization'].get(key)!r} != {value!r}")
    problems += [f"missing finding {code}" for code in exp.get("codes", []) if code not in report.codes()]
    for runtime, status in (exp.get("runtimes") or {}).items():
        if got["runtimes"].get(runtime, {}).get("status") != status:
            problems.append(f"{runtime} {got['runtimes'].get(runtime, {}).get('status')!r} != {status!r}")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_over_the_hub(case: Case, served: Any) -> None:
    stub, repos = served
    repo = repos[case.id]
    stub.reset_counters()
    # The stand-ins list a few real tensors per model, not a loadable model: the rules alone are under test.
    report = mtpinspect.check(repo, endpoint=stub.url, verify=False)
    assert not _compare(case, report), (_compare(case, report), report.verdict)
    doc = to_jsonable(report)
    jsonschema.validate(doc, SCHEMA)
    assert doc["revision"] == stub.sha(repo)
    # The bytes we say we read are the bytes the Hub sent, and no weight file came down whole.
    assert doc["bytes_read"] == stub.bytes_served(repo)
    for record in stub.requests(repo):
        assert record.method in ("GET", "HEAD", "POST"), record
    served_bytes = {p: stub.bytes_served(repo, p) for p in case.files}
    info = HfApi(endpoint=stub.url).model_info(repo, files_metadata=True)
    sizes = {s.rfilename: s.size for s in info.siblings}
    for path in (p for p in case.files if p.endswith((".safetensors", ".gguf"))):
        sent = served_bytes[path]
        assert sent <= HEADER_BUDGET + header_size_hint(sizes[path]), f"{path}: {sent} bytes sent"
        if sizes[path] > HEADER_BUDGET * 2:
            assert sent < sizes[path], f"{path} was downloaded whole"


def header_size_hint(size: int) -> int:
    # Safetensors headers of the stand-ins are small; GGUF headers with a 150k vocabulary run to a few MiB.
    return min(size, 8 * 1024 * 1024)


LOCAL = [c for c in CASES if c.expect.get("local", True)]


@pytest.mark.parametrize("case", LOCAL, ids=[c.id for c in LOCAL])
def test_case_from_local_snapshot(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = materialize(case, tmp_path_factory.mktemp(case.id.replace(".", "_")))
    report = mtpinspect.check(str(root), verify=False)
    # A plain folder has no repo id: who made it is judged from the card and the format (origin.py), and the
    # runtimes come out as over the Hub.
    assert not _compare(case, report), (_compare(case, report), report.verdict)
    assert report.revision is None
    jsonschema.validate(to_jsonable(report), SCHEMA)
