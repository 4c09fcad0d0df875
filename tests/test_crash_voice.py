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

from mtpinspect.logread.voices import assert_file, assert_program, foreign_frames, own_program

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
    # llama-server under gdb (gdb's "#N  0x... in FN (ARGS) at FILE:LINE"), dying in common/speculative.cpp.
    "Program received signal SIGSEGV, Segmentation fault.\n(gdb) bt\n"
    "#0  0x00005555556a1b2c in common_speculative_gen_draft (spec=0x0, params=..., id_last=151645) at "
    "/home/u/llama.cpp/common/speculative.cpp:272\n"
    "#1  0x000055555561f0a0 in server_context::update_slots (this=0x7fffffffd0e0) at "
    "/home/u/llama.cpp/tools/server/server-context.cpp:2841\n",
    # An AddressSanitizer build of llama-server (compiler-rt's "#N 0x... in FN FILE:LINE:COL" and SUMMARY line).
    "==4821==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000018 at pc 0x55d0 bp 0x7ffc sp 0x7ffc\n"
    "READ of size 4 at 0x602000000018 thread T0\n"
    "    #0 0x55d0 in common_speculative_draft /src/llama.cpp/common/speculative.cpp:412:17\n"
    "    #1 0x55d1 in server_context::update_slots() /src/llama.cpp/tools/server/server-context.cpp:2841:9\n"
    "SUMMARY: AddressSanitizer: heap-buffer-overflow /src/llama.cpp/common/speculative.cpp:412:17 in "
    "common_speculative_draft\n" + _ABORTED,
    # An uncaught C++ exception (libstdc++'s "terminate called after throwing ...", "  what():  ...") under a prompt
    # that runs a script or an interpreter, which may start an engine (llama-server under run.sh, llama-cpp-python).
    "$ ./run.sh\nterminate called after throwing an instance of 'std::runtime_error'\n  what():  nextn layer missing "
    "for MTP\n" + _ABORTED,
    "$ python app.py\nterminate called after throwing an instance of 'std::runtime_error'\n  what():  nextn layer "
    "missing for MTP\n" + _ABORTED,
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
    # musl's assert (src/exit/assert.c: "Assertion failed: %s (%s: %s: %d)") in a graph tool's own file.
    "Assertion failed: node->nextn != 0 (src/graph.c: build_graph: 212)\n" + _ABORTED,
    # A C tool under gdb, its frames in its own files, one function named speculative_prefetch.
    "Program received signal SIGSEGV, Segmentation fault.\n(gdb) bt\n"
    "#0  0x000055555555523a in draft_flush (d=0x0) at src/draft.c:88\n"
    "#1  0x00005555555552b0 in speculative_prefetch (q=0x5555555592a0) at src/prefetch.c:40\n"
    "#2  0x0000555555555300 in main () at src/main.c:12\n",
    # A sanitizer's report of a phone-sync tool (libmtp's Media Transfer Protocol, not multi-token prediction).
    "==4821==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000018 at pc 0x55d0 bp 0x7ffc sp 0x7ffc\n"
    "READ of size 4 at 0x602000000018 thread T0\n    #0 0x55d0 in mtp_sync_device src/mtp_sync.c:51\n"
    "    #1 0x55d1 in main src/main.c:9\n"
    "SUMMARY: AddressSanitizer: heap-buffer-overflow src/mtp_sync.c:51 in mtp_sync_device\n" + _ABORTED,
    # A Go mailer's panic (runtime/panic.go's "goroutine N [running]:" and "\tFILE.go:LINE +0x.." frames).
    "panic: runtime error: invalid memory address or nil pointer dereference\n"
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a2b1c]\n\ngoroutine 1 [running]:\n"
    "main.(*DraftModel).Flush(0x0)\n\t/home/u/mailer/internal/drafts/draft_model.go:42 +0x1c\n"
    "main.main()\n\t/home/u/mailer/main.go:17 +0x85\nexit status 2\n",
    # valgrind's report of the same C tool ("==PID==    at 0x...: FN (FILE:LINE)").
    "==4821== Invalid read of size 8\n==4821==    at 0x10923A: draft_flush (draft.c:88)\n"
    "==4821==    by 0x1092B0: main (main.c:12)\n"
    "==4821== Process terminating with default action of signal 11 (SIGSEGV)\nSegmentation fault (core dumped)\n",
    # The same uncaught exception under a prompt that runs a binary of its own (a map generator), nothing of an engine's.
    "$ ./mapgen --tiles 4\nterminate called after throwing an instance of 'std::runtime_error'\n  what():  nextn tile "
    "index out of range\n" + _ABORTED,
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


def test_an_assert_or_frames_say_whose_source_it_is() -> None:
    assert assert_file("Assertion failed: node->nextn != 0 (src/graph.c: build_graph: 212)") == "src/graph.c"
    assert assert_file("Assertion failed: mtp_on, file C:\\tools\\spec.c, line 77") == "C:\\tools\\spec.c"
    assert assert_file("Assertion failed: scale > 0.0f, file E:\\src\\llama.cpp\\ggml\\src\\ggml-cpu\\ops.cpp, "
                       "line 5120") is None  # llama.cpp's own (a Windows build's CRT assert)
    assert foreign_frames("#0  0x1 in draft_flush (d=0x0) at src/draft.c:88\n") == "src/draft.c"
    # One frame of the engine's among the tool's makes the backtrace the engine's; frames with no source say nothing.
    assert foreign_frames("#0  0x1 in f (x=1) at src/a.c:1\n#1  0x2 in llama_decode () from /usr/lib/libllama.so\n") is None
    assert foreign_frames("#0  0x1 in f () from /usr/lib/libfoo.so\n") is None


def test_a_prompts_command_says_whether_it_runs_a_program_of_its_own() -> None:
    assert own_program("./mapgen --tiles 4") == "./mapgen"
    for command in ("./llama-server -m q.gguf", "./run.sh", "python app.py", "docker run ghcr.io/x", "./build/bin/llama-cli",
                    "sudo ./start.sh", "gdb --args ./llama-server", "koboldcpp --model q.gguf"):
        assert own_program(command) is None, command
