"""The verify helper is run like every other child: bounded in time and output, and a helper that gives
no verdict never breaks check (the rules still decide, and a note says why llama.cpp did not).

The helpers here are stand-in executables (shell scripts) that hang, crash, babble or print a real
verdict document; the code under test is mtpinspect's own process handling and check's fallback.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import mtpinspect
from mtpinspect.inspection.engine import ask_llama_cpp
from mtpinspect.inspection.evidence import gather
from mtpinspect.inspection.verdict import assemble_report
from mtpinspect.runtime.verify import VerifyError, verify
from mtpinspect.sources.resolve import resolve
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model


def _helper(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_a_hanging_helper_is_killed_at_the_time_limit(tmp_path: Path) -> None:
    helper = _helper(tmp_path / "mtpinspect-verify", "exec sleep 30")
    with pytest.raises(VerifyError) as exc:
        verify(helper, ["-m", "x.gguf"], timeout=0.5)
    assert _one_line(exc) == "mtpinspect-verify: no verdict within 0.5 s (killed)"


def test_a_babbling_helper_is_cut_off(tmp_path: Path) -> None:
    helper = _helper(tmp_path / "mtpinspect-verify", "exec yes verdict")
    with pytest.raises(VerifyError) as exc:
        verify(helper, [], timeout=30)
    assert "printed more than 1048576 bytes (killed)" in _one_line(exc)


def test_a_crashing_helper_names_the_signal_and_its_last_words(tmp_path: Path) -> None:
    helper = _helper(tmp_path / "mtpinspect-verify", "echo 'llama_model_load: loading' >&2; kill -SEGV $$")
    with pytest.raises(VerifyError) as exc:
        verify(helper, [])
    assert _one_line(exc) == "mtpinspect-verify: killed by SIGSEGV (llama_model_load: loading)"


def test_a_helper_without_a_verdict(tmp_path: Path) -> None:
    helper = _helper(tmp_path / "mtpinspect-verify", "echo 'usage: something else'; exit 3")
    with pytest.raises(VerifyError) as exc:
        verify(helper, [])
    assert _one_line(exc) == "mtpinspect-verify: exit 3 without a verdict (no output on stderr)"


def test_a_verdict_document_is_read_as_printed(tmp_path: Path) -> None:
    part = {"n_ctx": 4096, "model": 1000, "context": 200, "compute": 30, "buffers": []}
    doc = {"ok": True, "llama_cpp_commit": "0c1e570", "step": None, "error": None, "peak_rss": 5000,
           "models": {"target": {}, "draft": {}},
           "memory": {"without_mtp": part, "target": part, "mtp": {**part, "model": 7, "context": 20, "compute": 3}}}
    helper = _helper(tmp_path / "mtpinspect-verify", f"cat <<'EOF'\n{json.dumps(doc)}\nEOF")
    v = verify(helper, ["-c", "4096"])
    assert (v.ok, v.by, v.peak_rss) == (True, "llama.cpp 0c1e570", 5000)
    m = v.memory
    assert m is not None and (m.context, m.process) == (4096, 5000)
    # A sidecar ("draft" in models) brings its own weights; they count.
    assert (m.without_mtp_bytes, m.total_bytes, m.mtp_bytes) == (6230, 6230 + 30, 30)


def test_check_keeps_the_rules_when_the_helper_fails(tmp_path: Path) -> None:
    (model,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec())
    helper = _helper(tmp_path / "mtpinspect-verify", "kill -ABRT $$")
    ev = gather(resolve(str(model)))
    engine = ask_llama_cpp(ev, helper)
    assert engine.verification is None
    assert engine.note == "not verified by llama.cpp: mtpinspect-verify: killed by SIGABRT (no output on stderr)"
    report = assemble_report(ev, engine)
    assert report.runtimes["llama.cpp"].status == "supported" and report.runtimes["llama.cpp"].verified is None
    assert report.memory is None and engine.note in report.notes
    assert report.runtimes["llama.cpp"].status == mtpinspect.check(str(model), verify=False).runtimes["llama.cpp"].status
