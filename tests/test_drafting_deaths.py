"""Process deaths on the drafting path (issue 42, round 7): a shell's death line naming the command that died, a death
under a command that sets a drafter, call chains written with arrows, symbol-less native frames, and an engine's words
that a checkpoint ships another drafter instead of an MTP head. Texts written here from the shells' and engines' real
formats (cited per test), not corpus pastes, each with a negative of the same shape from software that does not draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError
from mtpinspect.logread.drafters import Drafter, drafter_named
from mtpinspect.runtime.crash import crash_in_log, died_command
from mtpinspect.vocabulary import Engine

_MTP_RUN = "./build/bin/llama-server -m Qwen3.6-27B-Q4_K_M.gguf --spec-type draft-mtp --spec-draft-n-max 3 -ngl 99"
_EAGLE3_RUN = "./build/bin/llama-server -m Qwen3-8B-Q4_K_M.gguf -md EAGLE3-Qwen3-8B.gguf --spec-type draft-eagle3"
_DRAFT_RUN = "./build/bin/llama-server -m Qwen3-32B-Q4_K_M.gguf -md Qwen3-0.6B-Q8_0.gguf --draft-max 16 -ngl 99 -ngld 99"


def _read(tmp_path: Path, text: str) -> tuple[list[tuple[str, str]], str, Engine | None]:
    """The causes with their confidence words, the first cause's message and the engine; a refused text names none."""
    paste = tmp_path / "paste.log"
    paste.write_text(text, encoding="utf-8")
    try:
        report = diagnose(log_files=[paste])
    except FormatError:
        return [], "", None
    causes = [(c.code, c.confidence_word) for c in report.causes]
    return causes, report.causes[0].message if report.causes else "", report.logs[0].runtime


# bash (jobs.c pretty_print_job: the job line, and a script's child with its line and pid), zsh (Src/jobs.c printjob),
# fish (proc.cpp: "fish: Job N, 'cmd' terminated by signal SIGX (...)").
@pytest.mark.parametrize(("line", "command"), [
    ("[1]+  Aborted                 (core dumped) ./llama-server -m a.gguf", "./llama-server -m a.gguf"),
    ("Aborted                    (core dumped) llama-server -m a.gguf --spec-type draft-mtp",
     "llama-server -m a.gguf --spec-type draft-mtp"),
    ("[2]-  Segmentation fault      python -m sglang.launch_server --model-path m", "python -m sglang.launch_server --model-path m"),
    ("./serve.sh: line 14: 48213 Segmentation fault      (core dumped) llama-server -m a.gguf", "llama-server -m a.gguf"),
    ("zsh: abort (core dumped)  ./build/bin/llama-server -m a.gguf", "./build/bin/llama-server -m a.gguf"),
    ("fish: Job 1, './llama-server -m a.gguf' terminated by signal SIGSEGV (Address boundary error)", "./llama-server -m a.gguf"),
    # systemd's unit (src/core/service.c) and the kernel's process (arch/x86/mm/fault.c, traps.c): the program's name
    ("Dec 04 10:11:12 box systemd[1]: llama-server.service: Main process exited, code=dumped, status=6/ABRT", "llama-server"),
    ("[ 8123.445] gimp-2.10[48213]: segfault at 0 ip 00007f2a1c3a4c5b sp 00007ffd2b1c8e40 error 4 in libgegl-0.4.so",
     "gimp-2.10"),
    ("Dec 04 box kernel: traps: llama-server[4821] trap invalid opcode ip:7f2a sp:7ffd error:0 in libggml-cpu.so",
     "llama-server"),
    # no command: the bare status, and a quote's closing backtick after it
    ("Segmentation fault (core dumped)", None),
    ("Aborted (core dumped)     `", None),
    ("INFO 05-02 10:11:12 [async_llm.py:420] Aborted request chatcmpl-4b2.", None),
])
def test_a_shells_death_line_names_the_command_that_died(line: str, command: str | None) -> None:
    assert died_command(line) == command


@pytest.mark.parametrize("death", [
    f"[1]+  Aborted                 (core dumped) {_MTP_RUN}",
    f"./serve.sh: line 14: 48213 Aborted                 (core dumped) {_MTP_RUN}",
    f"zsh: abort (core dumped)  {_MTP_RUN}",
    f"user@box:~/llama.cpp$ {_MTP_RUN}\nmain: server is listening on http://127.0.0.1:8080\nSegmentation fault (core dumped)",
])
def test_a_death_of_a_command_running_mtp_is_a_crash_on_the_mtp_path(tmp_path: Path, death: str) -> None:
    causes, _, engine = _read(tmp_path, death + "\n")
    assert causes[:1] == [("MTP_ENGINE_CRASH", "high")] and engine is Engine.llama_cpp


@pytest.mark.parametrize(("run", "drafter"), [(_EAGLE3_RUN, "EAGLE3's drafting path"),
                                              (_DRAFT_RUN, "a draft model's drafting path")])
def test_a_death_under_another_drafters_command_names_that_drafter(tmp_path: Path, run: str, drafter: str) -> None:
    # The setting ties a death whose place says nothing (a lone signal line), at medium; the report names the drafter
    # the command sets, not "MTP".
    for text in (f"user@box:~/llama.cpp$ {run}\nAborted\n", f"zsh: abort (core dumped)  {run}\n"):
        causes, message, _ = _read(tmp_path, text)
        assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")]
        assert drafter in message and "MTP on" not in message


def test_the_same_deaths_of_other_programs_name_no_cause(tmp_path: Path) -> None:
    # An image converter's and a training script's deaths, their words about drafts and speculation their own.
    for text in ("[2]-  Aborted                 (core dumped) ./imgconv --speculative-prefetch --input draft_photos/\n",
                 "./train.sh: line 9: 3121 Segmentation fault      (core dumped) python train_speculative_heads.py --epochs 3\n",
                 "user@box:~/proj$ python train_speculative_heads.py --draft-model tiny --epochs 3\nepoch 1/3 loss=2.31\n"
                 "Segmentation fault (core dumped)\n",
                 "$ python resize_images.py --input photos/ --draft-quality\nSegmentation fault (core dumped)\n"):
        assert _read(tmp_path, text)[0] == []
    # The engine's own death under the same prompt is still the engine's (the command is read, not the words).
    crash = crash_in_log("user@box:~$ python train.py\nok\nuser@box:~$ llama-server -m a.gguf\nSegmentation fault\n",
                         lambda line: line.split("$ ", 1)[1] if "$ " in line else None)
    assert crash is not None and crash.command == "llama-server -m a.gguf"


def test_macos_native_frames_through_the_drafter_place_the_crash(tmp_path: Path) -> None:
    # lldb's "frame #N: 0x... image`symbol + off" and macOS's crash report ("N  image  0x...  symbol + off").
    lldb = (f"{_EAGLE3_RUN}\n* thread #5, stop reason = signal SIGABRT\n"
            "    frame #0: 0x0000000189e5a5d0 libsystem_kernel.dylib`__pthread_kill + 8\n"
            "    frame #1: 0x0000000102a3c4f4 libggml-base.dylib`ggml_abort + 276\n"
            "    frame #2: 0x0000000102b1d2a0 libllama-common.dylib`common_speculative_draft(common_speculative*) + 1400\n")
    causes, message, _ = _read(tmp_path, lldb)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")] and "native backtrace through common_speculative_draft" in message
    report = ("Thread 5 Crashed:\n0   libsystem_kernel.dylib        \t0x189e5a5d0 __pthread_kill + 8\n"
              "1   libggml-base.dylib            \t0x102a3c4f4 ggml_abort + 276\n"
              "2   libllama-common.dylib         \t0x102b1d2a0 common_speculative_draft + 1400\n")
    crash = crash_in_log(report)
    assert crash is not None and crash.message == "native backtrace through common_speculative_draft"
    # A photo app's report: a crash, nothing of a drafter's.
    assert _read(tmp_path, report.replace("libllama-common.dylib", "libvips.dylib").replace(
        "common_speculative_draft", "vips_region_prepare"))[0] == []


def test_a_service_managers_or_kernels_word_on_an_engine_running_mtp_is_a_crash(tmp_path: Path) -> None:
    unit = f"ExecStart=/usr/local/bin/{_MTP_RUN[12:]}\n"
    for death in ("Dec 04 10:11:12 box systemd[1]: llama-server.service: Main process exited, code=dumped, status=6/ABRT\n",
                  "[ 8123.445] llama-server[48213]: segfault at 0 ip 00007f2a1c3a4c5b sp 00007ffd2b1c8e40 error 4 in "
                  "libggml-cuda.so[7f2a1a000000+3000000]\n"):
        assert _read(tmp_path, unit + death)[0][:1] == [("MTP_ENGINE_CRASH", "high")]
    # Another program's unit and process: no cause.
    for death in ("Dec 04 10:11:12 box systemd[1]: imgconv-draft.service: Main process exited, code=dumped, status=11/SEGV\n",
                  "[ 8123.445] gimp-2.10[48213]: segfault at 0 ip 00007f2a1c3a4c5b sp 00007ffd2b1c8e40 error 4 in "
                  "libgegl-0.4.so[7f2a1a000000+300000]\n"):
        assert _read(tmp_path, death)[0] == []


def test_a_death_after_the_engines_own_drafter_lines_names_that_drafter(tmp_path: Path) -> None:
    # llama.cpp's common/speculative.cpp ("adding speculative implementation 'draft-eagle3'"), no command in the paste.
    log = ("common_speculative_init: adding speculative implementation 'draft-eagle3'\n"
           "main: server is listening on http://127.0.0.1:8080\nslot launch_slot_: id  0 | task 0 | processing task\n"
           "Segmentation fault (core dumped)\n")
    causes, message, _ = _read(tmp_path, log)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")]
    assert "EAGLE3's drafting path" in message and "MTP on" not in message


def test_a_death_after_drafting_statistics_names_their_drafter(tmp_path: Path) -> None:
    # common/speculative.cpp's per-implementation statistics line, then ggml's CUDA error (ggml-cuda.cu's CUDA_CHECK).
    log = ("draft acceptance rate = 0.57143 (  120 accepted /   210 generated)\n"
           "statistics ngram_map_k: #calls(b,g,a) = 1 40 12, #gen drafts = 40, #acc drafts = 12, #gen tokens = 210, "
           "#acc tokens = 120, dur(b,g,a) = 0.004, 0.321, 0.019 ms\n"
           "/app/ggml/src/ggml-cuda/ggml-cuda.cu:96: CUDA error\nCUDA error: an illegal memory access was encountered\n"
           "  current device: 0, in function ggml_backend_cuda_synchronize at /app/ggml/src/ggml-cuda/ggml-cuda.cu:2745\n")
    causes, message, _ = _read(tmp_path, log)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")] and "n-gram's drafting path" in message


def test_a_symbol_less_ggml_backtrace_under_an_mtp_command_is_a_crash(tmp_path: Path) -> None:
    # ggml_print_backtrace without gdb: glibc's backtrace_symbols_fd of a stripped build ("lib.so(+0x..) [0x..]").
    frames = "".join(f"/opt/llama.cpp/build/bin/{lib}(+0x{n:x}) [0x7f2a1c3a{n:04x}]\n"
                     for lib, n in (("libggml-base.so", 0x16c5b), ("libggml-base.so", 0x1702f), ("libggml-cuda.so", 0x1a4f22),
                                    ("libllama.so", 0x9a1c2), ("llama-server", 0x2b9e41)))
    causes, _, _ = _read(tmp_path, f"$ {_MTP_RUN}\nsrv  update_slots: all slots are idle\n{frames}")
    assert causes[:1] == [("MTP_ENGINE_CRASH", "high")]
    # Another program's stripped frames under its own command: nothing of an engine's.
    other = "".join(f"/usr/lib/{lib}(+0x{n:x}) [0x7f2a1c3a{n:04x}]\n" for lib, n in
                    (("libvips.so.42", 0x16c5b), ("libvips.so.42", 0x1702f), ("libjpeg.so.8", 0x1a4f22)))
    assert _read(tmp_path, f"$ ./imgconv --input draft_photos/ --speculative-prefetch\n{other}")[0] == []


# Call chains as posters write them: a frame a line with arrows, several on one line, an annotation in parentheses.
def test_a_call_chain_through_llama_cpps_drafter_is_a_crash_on_its_path(tmp_path: Path) -> None:
    # common/speculative.cpp: common_speculative_draft -> common_speculative_impl_draft_eagle3 (the drafter's own impl).
    chain = ("common_speculative_draft\n  -> common_speculative_impl_draft_eagle3::draft\n    -> llama_decode\n"
             "      -> ggml_backend_sched_graph_compute  (CUDA0)\n")
    causes, message, engine = _read(tmp_path, chain)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")] and engine is Engine.llama_cpp
    assert "EAGLE3's drafting path" in message
    # The MTP drafter's impl (common_speculative_impl_draft_mtp) shows MTP on: high.
    mtp = "common_speculative_impl_draft_mtp::process\n  → llama_get_embeddings_nextn\n    → llama_context::synchronize\n"
    assert _read(tmp_path, mtp)[0][:1] == [("MTP_ENGINE_CRASH", "high")]


def test_a_python_call_chain_through_an_engines_drafter_names_engine_and_path(tmp_path: Path) -> None:
    # SGLang: python/sglang/srt/speculative/eagle_worker_v2.py and eagle_info.py (eagle_prepare_for_verify).
    sglang = ("RuntimeError: CUDA error: an illegal memory access was encountered\n"
              "  prepare_for_verify (eagle_info.py)\n  <- eagle_prepare_for_verify <- eagle_worker_v2.verify\n")
    causes, _, engine = _read(tmp_path, sglang)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")] and engine is Engine.sglang
    # vLLM: vllm/v1/worker/gpu_model_runner.py propose_draft_token_ids -> vllm/v1/spec_decode/eagle.py EagleProposer.
    vllm = ("RuntimeError: shape mismatch: value tensor of shape [4, 4096] cannot be broadcast to [3, 4096]\n"
            "  execute_model -> propose_draft_token_ids -> EagleProposer.propose -> prepare_inputs_padded\n")
    causes, _, engine = _read(tmp_path, vllm)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")] and engine is Engine.vllm


def test_call_chains_of_other_software_and_arrows_of_figures_name_no_cause(tmp_path: Path) -> None:
    for text in (
            # a blog app's chain through its own draft worker
            "TypeError: 'NoneType' object is not subscriptable\n  save_draft (views.py)\n"
            "  <- publish_post <- draft_worker.verify\n",
            # a game's render chain into a device loss
            "render_frame\n  -> draw_mesh\n    -> vkQueueSubmit\n      -> vk::DeviceLostError\n",
            # a figure's arrows and a C pointer's: no frames
            "build time 52.4 → 41.0 s after the cache change\nworkers 3 -> 2\nif (ctx->model->vocab == NULL) abort();\n"):
        assert _read(tmp_path, text)[0] == []


def test_an_engine_saying_the_checkpoint_ships_another_drafter_is_no_mtp_head(tmp_path: Path) -> None:
    # vllm/config/speculative.py (PR #52165): the check that refuses method='mtp' on a DSpark checkpoint.
    refusal = ("(APIServer pid=1) ValueError: deepseek-ai/DeepSeek-V4-Flash-0731 ships a DSpark drafter rather than an "
               "MTP head, so method='mtp' cannot load its weights. Use method='dspark' with num_speculative_tokens >= "
               "dspark_block_size (5).\n")
    assert _read(tmp_path, refusal)[0][:1] == [("MTP_WEIGHTS_MISSING", "medium")]
    # Before the check: the loader's KeyError on the head's weights, with the engine's words beside it: the same.
    keyerror = "KeyError: 'model.layers.43.mtp_block.main_norm.weight'\n"
    assert _read(tmp_path, keyerror + "> " + refusal.split("ValueError: ", 1)[1])[0][:1] == \
        [("MTP_WEIGHTS_MISSING", "medium")]
    # The KeyError under the MTP setting, with nothing said of the checkpoint, stays the loader's mapping.
    setting = ("(APIServer pid=1) INFO 08-14 10:11:00 [utils.py:253] non-default args: {'model': 'deepseek-ai/DeepSeek-"
               "V4-Flash-0731', 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}}\n")
    assert _read(tmp_path, setting + keyerror)[0][:1] == [("MTP_LOADER_BUG", "medium")]
    # Another product's "rather than an MTP head unit": no engine, no exception, no cause.
    assert _read(tmp_path, "The tracker ships a GPS module rather than an MTP head unit; see the manual.\n")[0] == []


@pytest.mark.parametrize(("name", "drafter"), [
    ("draft-mtp", Drafter.mtp), ("NEXTN", Drafter.mtp), ("deepseek_mtp", Drafter.mtp), ("draft-eagle3", Drafter.eagle3),
    ("EAGLE3", Drafter.eagle3), ("eagle", Drafter.eagle), ("dflash", Drafter.dflash), ("ngram-map-k", Drafter.ngram),
    ("suffix", Drafter.suffix), ("draft-simple", Drafter.draft_model), ("Qwen3-0.6B-Q8_0.gguf", Drafter.draft_model),
])
def test_a_drafter_is_named_by_its_settings_words(name: str, drafter: Drafter) -> None:
    assert drafter_named(name) is drafter
    assert drafter_named("common_speculative_draft", otherwise=None) is None
