"""Whose crash it is (issue 42, round 12): a crash's words tie it to MTP only where the engine died. A C library's
failed assert names the program that died (glibc's assert/assert.c: "PROG: FILE:LINE: FUNC: Assertion `COND'
failed."), as the shell's death line does: an engine's binary or source tree (llama-server, ggml, llama.cpp's src/,
sgl-kernel's csrc/) is the engine's crash; any other program's assert is its own, whatever its condition, function or
file name (``node.nextn``, ``mtp_enabled``, ``draft_len``), and names no MTP cause. Other programs' Rust panics and
Python AssertionErrors using the same words stay silent too. Texts written here from the real formats (cited)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pastes import read_paste

from mtpinspect.logread.voices import assert_program

_ABORTED = "Aborted (core dumped)\n"


@pytest.mark.parametrize("text", [
    # llama.cpp's own GGML_ASSERT in its drafting code (ggml/src/ggml.c ggml_abort: "%s:%d: GGML_ASSERT(%s) failed").
    "/home/u/llama.cpp/common/speculative.cpp:1376: GGML_ASSERT(n_draft > 0) failed\n" + _ABORTED,
    # glibc's assert in llama.cpp's source under its own binary (llama.cpp's src/ uses assert() beside GGML_ASSERT).
    "llama-server: /home/u/llama.cpp/src/llama-graph.cpp:212: llm_graph_result * build_graph(): Assertion "
    "`model.layers[il].nextn.eh_proj != nullptr' failed.\n" + _ABORTED,
    # An app embedding llama.cpp: its binary's name is the app's, the source file is ggml's / llama.cpp's.
    "chatbox: /build/vendor/llama.cpp/src/llama-context.cpp:1024: int llama_context::decode(): Assertion "
    "`hparams.nextn_predict_layers > 0' failed.\n" + _ABORTED,
    # SGLang's kernel (sgl-kernel/csrc/speculative/eagle_utils.cu) under the Python process that loaded it.
    "python3: /sgl-workspace/sgl-kernel/csrc/speculative/eagle_utils.cu:120: void build_tree(): Assertion "
    "`draft_token_num > 0' failed.\n" + _ABORTED,
])
def test_an_engines_own_crash_with_speculative_words_still_ties(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == ["MTP_ENGINE_CRASH"]


@pytest.mark.parametrize("text", [
    # A graph tool's own assert on its node's "nextn" field (glibc's format, then the shell's abort line).
    "mytool: src/graph.c:212: build_graph: Assertion `node.nextn != NULL' failed.\n" + _ABORTED,
    # A test program's a.out on an "mtp_enabled" flag; a linked-list tool whose file is nextn.c.
    "a.out: spec.c:10: main: Assertion `mtp_enabled' failed.\n" + _ABORTED,
    "listutil: src/nextn.c:12: walk: Assertion `x > 0' failed.\n",
    # An editor's draft autosave (its drafts, not a drafter's), with its prompt line before it.
    "$ ./notesd --sync\nnotesd: src/draft_store.c:88: draft_flush: Assertion `draft->tokens <= MAX_DRAFT_TOKENS' "
    "failed.\n" + _ABORTED,
    # A Rust program's panic (std's "thread 'main' panicked at FILE:LINE:COL:" then the message) about its MTP heads.
    "thread 'main' panicked at src/spec.rs:88:9:\nassertion failed: self.mtp_heads.len() > 0\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
    "thread 'main' panicked at src/draft.rs:41:5:\nassertion `left == right` failed: draft tokens mismatch\n"
    "  left: 3\n right: 4\n",
    # A training script's Python AssertionError naming nextn layers and the MTP head; a bare one on draft tokens.
    'Traceback (most recent call last):\n  File "/home/u/proj/train.py", line 40, in <module>\n'
    '    assert nextn_layers > 0, "mtp head missing"\nAssertionError: mtp head missing\n',
    "AssertionError: num_draft_tokens must be positive\n",
])
def test_another_programs_crash_with_the_words_names_no_cause(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == []


def test_an_assert_line_says_whose_program_died() -> None:
    assert assert_program("mytool: src/graph.c:212: build_graph: Assertion `node.nextn != NULL' failed.") == "mytool"
    assert assert_program("a.out: spec.c:10: Assertion `mtp_enabled' failed.") == "a.out"  # glibc without a function
    assert assert_program("llama-cli: /x/llama.cpp/src/llama-vocab.cpp:9: f: Assertion `a' failed.") is None
    assert assert_program("tool: /x/ggml/src/ggml-cpu/ops.cpp:9: f: Assertion `a' failed.") is None
    # PyTorch's device-side assert names a kernel file, no program: not a C library's assert line.
    assert assert_program("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1500: indexSelectSmallIndex: block: [0,0,0], "
                          "thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.") is None
