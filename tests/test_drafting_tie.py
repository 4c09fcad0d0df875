"""The drafting tie read by structure for every engine (logread/drafters.py), and the loader's missing block tensor
(logread/rules_loader.py): texts written here in the engines' real formats, not corpus pastes, each with a negative of
the same shape from software that does not draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError
from mtpinspect.logread.drafters import TABLE, Place, drafting_place
from mtpinspect.vocabulary import Engine


def _causes(tmp_path: Path, text: str) -> list[tuple[str, str]]:
    """The causes and their confidence words; a text refused (no line means anything) names none."""
    paste = tmp_path / "paste.log"
    paste.write_text(text, encoding="utf-8")
    try:
        return [(c.code, c.confidence_word) for c in diagnose(log_files=[paste]).causes]
    except FormatError:
        return []


def _runtime(tmp_path: Path, text: str) -> Engine:
    paste = tmp_path / "paste.log"
    paste.write_text(text, encoding="utf-8")
    return diagnose(log_files=[paste]).logs[0].runtime


def test_every_engine_has_its_drafting_code_in_the_one_table() -> None:
    engines = {row.engine for row in TABLE}
    assert {Engine.vllm, Engine.sglang, Engine.llama_cpp, None} <= engines
    assert {row.place for row in TABLE} == set(Place)
    for row in TABLE:
        assert row.source and row.means and row.keys


@pytest.mark.parametrize("line", [
    # vLLM V0 and V1 drafter modules (vllm/spec_decode/, vllm/v1/spec_decode/eagle.py)
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/eagle.py", line 215, in propose',
    '  File "/opt/vllm/vllm/spec_decode/multi_step_worker.py", line 88 in sampler_output',
    # vLLM's suffix decoding through Arctic Inference's cache
    '  File "/usr/lib/python3/site-packages/arctic_inference/suffix_decoding/cache.py", line 140, in speculate',
    # SGLang's speculative package, faulthandler's format (no comma before "in")
    '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker_v2.py", line 510 in verify',
    # SGLang's C++ n-gram drafter, as a demangled frame and with the later bare namespace
    "#7  0x00007f3a1c2b4e10 in sglang::ngram::Ngram::insertWorker() () from /opt/sglang/ngram_cache_cpp.so",
    "#5  0x00007f2a4c019000 in ngram::Trie::squeeze(unsigned long) () from /opt/sglang/kernels/ops/speculative/ngram.so",
    # llama.cpp: gdb frame, glibc backtrace_symbols with a mangled name, a drafter tensor in an assert
    "#12 0x00007f99ad7deed3 in common_speculative_draft(common_speculative*) () from /lib64/libllama-common.so.0",
    "./libllama-common.so(_Z24common_speculative_draftP18common_speculative+0x2a1) [0x7f1e8c2d41a1]",
    "/app/libllama.so(_ZN13llama_context20extract_layer_inputsEPK16llm_graph_resultmm+0x1c4) [0x7f0c1eb2d1a3]",
    "/src/llama.cpp/src/llama-context.cpp:2289: layer input tensor not found",
    "/src/llama.cpp/src/models/eagle3.cpp:166: GGML_ASSERT(cparams.ctx_other != nullptr) failed",
    # an MTP draft graph's frame (gdb, demangled), a Windows dump's module!symbol
    "#9  0x00007f5e2a1b3c40 in llama_model_qwen35::graph_mtp::graph_mtp(llama_model const&, llm_graph_params const&) ()",
    "llama.dll!common_speculative_draft+0x1a3",
])
def test_drafting_places_of_each_engine(line: str) -> None:
    assert drafting_place([line]) is not None


@pytest.mark.parametrize("line", [
    '  File "/srv/blog/app/draft.py", line 41, in save_draft',
    '  File "/home/me/proj/speculative_utils.py", line 3, in run',
    '  File "/srv/cms/posts/drafts.py", line 77 in publish',
    "#4  0x000055d1c0a2b1f0 in lm::ngram::detail::GenericModel<lm::ngram::detail::HashedSearch>::FullScore () from libkenlm.so",
    "/build/duckdb/extension/ngram/search_core.cpp:211: assertion failed",
    "#5  0x000055d1c0a2b000 in ngram::Trie::insert(int const*, unsigned long) () from /usr/lib/libtextindex.so",
    "/src/ggml/src/ggml.c:3953: GGML_ASSERT(a->ne[0] == b->ne[0]) failed",
    # a drafter's function name outside an engine's package, a bird app's eagle.py
    '  File "/srv/blog/app/views.py", line 12, in propose_draft_tokens',
    '  File "/home/me/birds/eagle.py", line 9, in classify',
])
def test_other_softwares_places_are_no_drafters(line: str) -> None:
    assert drafting_place([line]) is None


def test_other_softwares_mtp_and_draft_modules_tie_nothing(tmp_path: Path) -> None:
    # Media Transfer Protocol code (android_mtp.py, libmtp's LibMTP) and a blog's draft module: a traceback through them
    # is no MTP run and names no cause.
    for frames in ('  File "/usr/lib/python3/dist-packages/gnome_sync/android_mtp.py", line 80, in send\n'
                   "    self.device = pymtp.LibMTP_Device()\n",
                   '  File "/srv/blog/app/draft.py", line 41, in save_draft\n    self.store[key]\n'):
        text = "Traceback (most recent call last):\n" + frames + "RuntimeError: device busy\n"
        assert _causes(tmp_path, text) == []


def test_prose_that_names_the_engine_says_whose_run_it_is() -> None:
    from mtpinspect.logread.catalogue import scan
    assert scan("Measured on vLLM main with this PR, H100, batch 1:\n").writer is Engine.vllm
    assert scan("SGLang 0.5.2 with EAGLE3 on one H200:\n").writer is Engine.sglang
    # A package path or an environment variable is not the prose's engine; a prompt naming one is content.
    assert scan("pip install vllm-project-tools\n").writer is None
    assert scan('{"prompt": "compare vLLM and SGLang"}\n').writer is None


# glibc's abort with gdb's frames, as llama-server prints them through ggml_print_backtrace (ggml/src/ggml.c).
_ABORT = ("/src/llama.cpp/src/llama-context.cpp:2289: layer input tensor not found\n"
          "[New LWP 5012]\n"
          "#3  0x00007f0c1e9a0c52 in ggml_abort () from /app/libggml-base.so\n"
          "#4  0x00007f0c1eb2d1a3 in llama_context::extract_layer_inputs(llm_graph_result const*, unsigned long, unsigned long) "
          "() from /app/libllama.so\n"
          "#5  0x00007f0c1eb31f00 in llama_context::decode(llama_batch const&) () from /app/libllama.so\n"
          "Aborted (core dumped)\n")


def test_a_crash_in_the_eagle3_drafters_hooks_with_mtp_off_is_the_speculative_paths(tmp_path: Path) -> None:
    command = ("$ llama-server -m Qwen3-8B-Q4_K_M.gguf -md EAGLE3-Qwen3-8B.gguf --spec-type draft-eagle3 "
               "--spec-draft-n-max 6 -c 8192\n")
    assert _causes(tmp_path, command + _ABORT) == [("MTP_ENGINE_CRASH", "medium")]
    # The same crash in a run without any drafter is a crash, not the speculative path's.
    assert _causes(tmp_path, "$ llama-server -m Qwen3-8B-Q4_K_M.gguf -c 8192\n" + _ABORT) == []
    # A drafter on, the crash in the target's own math: every step of that run drafts and verifies, so the engine's
    # death under the drafter's command is on the drafting path too (issue 42, round 7), but only the setting ties it:
    # medium, where the drafter's own code placed the first one (at the same medium: MTP is off).
    other = _ABORT.replace("llama-context.cpp:2289: layer input tensor not found",
                           "ggml.c:3953: GGML_ASSERT(a->ne[0] == b->ne[0]) failed").replace(
        "llama_context::extract_layer_inputs", "ggml_mul_mat")
    assert _causes(tmp_path, command + other) == [("MTP_ENGINE_CRASH", "medium")]
    # The same death placed where no drafter runs (the multimodal projector) ties nothing.
    mmproj = other.replace("ggml.c:3953", "tools/mtmd/clip.cpp:3953")
    assert _causes(tmp_path, command + mmproj) == []


# CPython's faulthandler dump (Modules/faulthandler.c): the fatal error, then each thread's frames, newest first.
_DUMP = ("Fatal Python error: Segmentation fault\n\n"
         "Thread 0x00007f1b2effd640 (most recent call first):\n"
         '  File "/usr/lib/python3.12/threading.py", line 355 in wait\n'
         '  File "/usr/lib/python3.12/threading.py", line 1032 in _bootstrap\n\n'
         "Current thread 0x00007f1c0b3ff740 (most recent call first):\n"
         '  File "{path}", line 312 in {function}\n'
         '  File "{caller}", line 1890 in {caller_function}\n')


def test_a_fault_dump_through_a_drafter_module_is_a_crash_on_the_speculative_path(tmp_path: Path) -> None:
    vllm = _DUMP.format(path="/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/eagle.py", function="propose",
                        caller="/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py",
                        caller_function="propose_draft_token_ids")
    assert _causes(tmp_path, vllm) == [("MTP_ENGINE_CRASH", "medium")]
    assert _runtime(tmp_path, vllm) is Engine.vllm
    # The same dump through a blog app's draft module names no cause.
    blog = _DUMP.format(path="/srv/blog/app/draft.py", function="save_draft", caller="/srv/blog/app/views.py",
                        caller_function="post")
    assert _causes(tmp_path, blog) == []


def test_native_frames_of_sglangs_ngram_drafter_tie_an_abort(tmp_path: Path) -> None:
    frames = ("free(): invalid pointer\nFatal Python error: Aborted\n\n"
              "#6  0x00007f2a4c01a2b3 in {ns}::Trie::insert(int const*, unsigned long) () from /opt/{lib}\n"
              "#7  0x00007f2a4c01c9e0 in {ns}::Ngram::insertWorker() () from /opt/{lib}\n")
    sglang = frames.format(ns="sglang::ngram", lib="sglang/srt/speculative/cpp_ngram/ngram_cache_cpp.so")
    assert [c for c, _ in _causes(tmp_path, sglang)] == ["MTP_ENGINE_CRASH"]
    assert _runtime(tmp_path, sglang) is Engine.sglang
    # KenLM's n-gram model (lm::ngram::) aborting in someone's Python is no drafter.
    assert _causes(tmp_path, frames.format(ns="lm::ngram", lib="kenlm/libkenlm.so")) == []


# llama.cpp's loader (src/llama-model-loader.cpp: "missing tensor '%s'", the metadata dump "- kv N: key type = value").
_LOAD = ("llama_model_loader: loaded meta data with 49 key-value pairs and 753 tensors from /models/{file}\n"
         "llama_model_loader: - kv   0:                       general.architecture str              = qwen35moe\n"
         "{layout}"
         "llama_model_load: error loading model: missing tensor 'blk.{block}.ssm_conv1d.weight'\n"
         "llama_model_load_from_file_impl: failed to load model\n")
_LAYOUT = ("llama_model_loader: - kv  17:                      qwen35moe.block_count u32              = 41\n"
           "llama_model_loader: - kv  18:             qwen35moe.nextn_predict_layers u32              = {nextn}\n")


def test_a_missing_trunk_tensor_of_the_mtp_block_is_a_build_without_its_mtp_graph(tmp_path: Path) -> None:
    shown = _LOAD.format(file="model-Q8_0.gguf", layout=_LAYOUT.format(nextn=1), block=40)
    assert _causes(tmp_path, shown) == [("NO_MTP_GRAPH", "high")]
    # The line alone: both readings, the MTP block's first, with the check that decides.
    alone = "llama_model_load: error loading model: missing tensor 'blk.40.ssm_conv1d.weight'\n"
    paste = tmp_path / "alone.log"
    paste.write_text(alone, encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert (cause.code, cause.confidence_word) == ("NO_MTP_GRAPH", "low")
    assert any("two readings" in e and "block_count" in e for e in cause.evidence)
    # A name that says MTP is half the proof: medium.
    named = _LOAD.format(file="Qwen3.6-35B-A3B-MTP-Q8_0.gguf", layout="", block=40)
    assert _causes(tmp_path, named) == [("NO_MTP_GRAPH", "medium")]


def test_a_missing_tensor_the_layout_shows_is_no_mtp_block_is_a_broken_gguf(tmp_path: Path) -> None:
    # Block 12 of 41 is a trunk block; a GGUF with nextn_predict_layers = 0 carries no MTP block; block 0 never is one.
    assert _causes(tmp_path, _LOAD.format(file="m.gguf", layout=_LAYOUT.format(nextn=1), block=12)) == []
    assert _causes(tmp_path, _LOAD.format(file="m.gguf", layout=_LAYOUT.format(nextn=0), block=40)) == []
    assert _causes(tmp_path, _LOAD.format(file="m.gguf", layout="", block=0)) == []


def test_a_line_vllms_drafter_printed_ties_the_engine_core_failing_after_it(tmp_path: Path) -> None:
    # vllm/logger.py prefixes each line with its module ("[eagle.py:644]"): the drafter's own line, then vLLM's
    # "EngineCore failed to start." (vllm/v1/engine/core.py) with the traceback's head only.
    head = ("(EngineCore_DP0 pid=31) INFO 03-02 10:00:01 [{module}:644] Assuming the EAGLE head shares the same vocab "
            "embedding with the target model.\n"
            "(EngineCore_DP0 pid=31) ERROR 03-02 10:00:02 [core.py:712] EngineCore failed to start.\n"
            "(EngineCore_DP0 pid=31) ERROR 03-02 10:00:02 [core.py:712] Traceback (most recent call last):\n"
            '(EngineCore_DP0 pid=31) ERROR 03-02 10:00:02 [core.py:712]   File "/opt/vllm/vllm/v1/engine/core.py", '
            "line 703, in run_engine_core\n")
    assert [c for c, _ in _causes(tmp_path, head.format(module="eagle.py"))] == ["MTP_ENGINE_CRASH"]
    # The same failure after a line of the engine's own loader ties nothing.
    assert _causes(tmp_path, head.format(module="default_loader.py")) == []


def test_vllms_own_words_for_drafting_figures_say_whose_bullets_they_are(tmp_path: Path) -> None:
    # vllm/v1/spec_decode/metrics.py words ("Mean acceptance length:", "Per-position acceptance rate:") as a PR's bullets.
    bullets = "**Results:**\n- Mean acceptance length: 2.41\n- Per-position acceptance rates: 0.70, 0.45, 0.26\n"
    assert _runtime(tmp_path, bullets) is Engine.vllm
    # llama.cpp's words for the same figures ("mean acceptance length =") are not vLLM's.
    from mtpinspect.logread.catalogue import scan
    assert scan("draft acceptance = 0.64 (167 accepted / 259 generated), mean acceptance length =  2.92\n").writer \
        is not Engine.vllm


@pytest.mark.parametrize(("text", "code"), [
    # common/arg.cpp:4388, as an app's window glues llama-server's stderr: a draft setting the newer build removed
    ('error while handling argument "--draft-min": the argument has been removed. use --spec-draft-n-min\n',
     "MTP_FAILED"),
    # a fork that renamed its MTP switch under --spec-type (ik_llama.cpp's server wording)
    ("legacy speculative option '-mtp' is disabled; use --spec-type mtp:1 instead\n", "WRONG_SPEC_TYPE"),
])
def test_a_removed_draft_setting_is_not_a_wrong_spec_type(tmp_path: Path, text: str, code: str) -> None:
    assert [c for c, _ in _causes(tmp_path, text)][:1] == [code]
    # Another program's removed option names nothing of drafting.
    assert _causes(tmp_path, "error: option '--colour' has been removed; use --color instead\n") == []


def test_a_configuration_check_on_the_speculative_settings_is_a_refusal(tmp_path: Path) -> None:
    # vllm/config.py SpeculativeConfig's checks: a setting the drafter cannot take, refused at start.
    refusal = ("ValueError: Expected both speculative_model and num_speculative_tokens to be provided, but found "
               "speculative_model='ibm-fms/llama-13b-accelerator' and num_speculative_tokens=4.\n")
    assert [c for c, _ in _causes(tmp_path, refusal)] == ["ENGINE_LIMITATION"]
    # A ValueError in a drafter's step that says no such thing is the drafter breaking.
    crash = "ValueError: not enough values to unpack (expected 2, got 1) in speculative_model forward\n"
    assert [c for c, _ in _causes(tmp_path, crash)] == ["MTP_ENGINE_CRASH"]


def test_another_drafters_failure_with_mtp_off_is_tied_by_its_code_not_its_setting(tmp_path: Path) -> None:
    # vLLM with an EAGLE3 drafter (MTP off): a traceback through vllm/v1/spec_decode/eagle.py is the drafter's failure.
    run = ("$ vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{{\"method\": \"eagle3\", \"model\": "
           "\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}}'\n"
           "(EngineCore_DP0 pid=812) ERROR 05-02 10:11:12 [core.py:712] EngineCore failed to start.\n"
           "(EngineCore_DP0 pid=812) ERROR 05-02 10:11:12 [core.py:712] Traceback (most recent call last):\n"
           '(EngineCore_DP0 pid=812) ERROR 05-02 10:11:12 [core.py:712]   File "/usr/local/lib/python3.12/dist-packages/'
           'vllm/{module}", line 215, in {function}\n'
           "(EngineCore_DP0 pid=812) ERROR 05-02 10:11:12 [core.py:712] AttributeError: 'LlamaForCausalLM' object has no "
           "attribute 'embed_tokens'\n")
    assert _causes(tmp_path, run.format(module="v1/spec_decode/eagle.py", function="load_model")) == \
        [("MTP_ENGINE_CRASH", "medium")]
    # The same run failing in the tokenizer: the drafter's setting alone ties nothing.
    assert _causes(tmp_path, run.format(module="transformers_utils/tokenizer.py", function="get_tokenizer")) == []


def test_print_infos_layer_counts_show_the_mtp_block(tmp_path: Path) -> None:
    # src/llama-model.cpp print_info: n_layer (trunk) below n_layer_all means nextn layers; block N = n_layer_all - 1.
    paste = ("print_info: n_layer               = 40\nprint_info: n_layer_all           = 41\n"
             "llama_model_load: error loading model: missing tensor 'blk.40.attn_qkv.weight'\n")
    assert _causes(tmp_path, paste) == [("NO_MTP_GRAPH", "high")]
    # n_layer equal to n_layer_all: no nextn layers, and block 40 is the last trunk block: a broken GGUF.
    assert _causes(tmp_path, paste.replace("= 40\n", "= 41\n", 1)) == []


# -- issue 42, round 2: the fourth set's misses as classes ----------------------------------------------------------

def test_a_vllm_platform_plugins_drafter_frame_is_the_speculative_path(tmp_path: Path) -> None:
    # vllm-ascend's MTP proposer (vllm_ascend/spec_decode/mtp_proposer.py) and vllm-gaudi's EAGLE (vllm_gaudi/v1/
    # spec_decode/hpu_eagle.py), in Python's traceback format; a pasted path that lost its separator keeps the folder.
    for frame in ('  File "/usr/local/python3.11/site-packages/vllm_ascend/spec_decode/mtp_proposer.py", line 412, in '
                  'dummy_run',
                  '  File "/opt/venv/lib/python3.10/site-packages/vllm_gaudi/v1/spec_decode/hpu_eagle.py", line 88, in '
                  'prepare_inputs',
                  '  File "/root/.venv/lib/python3.11/site-packages/vllm_ascend/spec_decodeXmtp_proposer.py", line 412'):
        text = f"Traceback (most recent call last):\n{frame}\n    hidden = self.model(x)\nRuntimeError: shape mismatch\n"
        assert _causes(tmp_path, text) == [("MTP_ENGINE_CRASH", "medium")], frame
        assert _runtime(tmp_path, text) is Engine.vllm
    # The same shape from a package that is no vLLM plugin (a voting app's proposer modules, a "vllm_" prefix of
    # another word), and vllm_ascend's own module outside its drafters.
    for frame in ('  File "/srv/app/voting/ballot_proposer.py", line 30, in propose',
                  '  File "/srv/app/voting/draft_proposer.py", line 30, in propose',
                  '  File "/usr/local/python3.11/site-packages/vllm_ascend/worker/model_runner_v1.py", line 9, in load'):
        text = f"Traceback (most recent call last):\n{frame}\n    x = y[3]\nRuntimeError: shape mismatch\n"
        assert _causes(tmp_path, text) == [], frame


def test_an_attention_backends_speculative_metadata_ties_an_assert(tmp_path: Path) -> None:
    # vllm/v1/attention/backends/gdn_attn.py fills spec_sequence_masks / num_spec_decodes only when use_spec_decode is
    # on and the step has drafts: an assert on them is the speculative step's, a cut traceback as pasted.
    text = ('Traceback (most recent call last):\n'
            '  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1200, in execute_model\n'
            '    attn_metadata = self._build_attention_metadata(\n'
            '  File "/usr/lib/python3/dist-packages/vllm/v1/attention/backends/mamba_attn.py", line 210, in build\n'
            '    assert spec_sequence_masks is not None and num_spec_decode_tokens > 0\n')
    assert _causes(tmp_path, text) == [("MTP_ENGINE_CRASH", "medium")]
    assert _runtime(tmp_path, text) is Engine.vllm
    # A Python assert of another program on its own "spec" counts names nothing of vLLM's.
    other = ('Traceback (most recent call last):\n  File "/srv/shop/catalog/specs.py", line 40, in build\n'
             '    assert num_specs_decoded > 0 and spec_sequence is not None\nAssertionError\n')
    assert _causes(tmp_path, other) == []


def test_ggmls_assert_on_the_drafted_tokens_is_a_crash_on_the_speculative_path(tmp_path: Path) -> None:
    # common/sampling.cpp's check of the verified draft, and common/speculative.cpp's n_draft, as ggml prints them.
    for line in ('/src/llama.cpp/common/sampling.cpp:612: GGML_ASSERT(idxs.size() == draft.size() + 1 && "idxs.size() '
                 'must be draft.size() + 1") failed',
                 'common/speculative.cpp:301: GGML_ASSERT(n_draft <= params.n_max) failed'):
        assert _causes(tmp_path, line + "\n") == [("MTP_ENGINE_CRASH", "medium")], line
        assert _runtime(tmp_path, line + "\n") is Engine.llama_cpp
    # ggml's assert with nothing of the draft (whisper.cpp), and a C blog engine's assert on its draft post.
    for line in ('whisper.cpp:4100: GGML_ASSERT(n_tokens <= n_ctx) failed',
                 "blogd: post.c:88: save_post: Assertion `draft != NULL' failed.\nAborted (core dumped)"):
        assert [c for c, _ in _causes(tmp_path, line + "\n") if c.startswith("MTP")] == [], line


def test_every_wording_of_llama_cpps_draft_vocabulary_check_is_llama_cpps(tmp_path: Path) -> None:
    # examples/speculative/speculative.cpp (2023), indented as a quoted block, and its token check.
    for text in ("    main: error: draft model vocab must match target model to use speculation but target vocab size "
                 "32000 does not match draft vocab size 32001\n",
                 "  main: error: draft model vocab must match target model to use speculation but token 5 content "
                 "differs - target 'a', draft 'b'\n"):
        assert _causes(tmp_path, text) == [("ENGINE_LIMITATION", "medium")]
        assert _runtime(tmp_path, text) is Engine.llama_cpp
    # A translation tool's vocabulary check names no draft model: no cause.
    assert _causes(tmp_path, "error: source vocab must match target vocab (32000 vs 32001)\n") == []


# -- issue 42, round 5: tracebacks a paste shows only in part, on the speculative path -------------------------------

# vLLM's worker prefix (vllm/v1/executor/multiproc_executor.py logs a worker's traceback line by line, each under the
# "(Worker_TP0 pid=N) ERROR mm-dd hh:mm:ss [multiproc_executor.py:N]" prefix).
_WORKER = "(Worker_TP1 pid=2231) ERROR 03-14 09:12:41 [multiproc_executor.py:703] "


def test_a_drafter_call_in_a_tracebacks_source_line_places_it(tmp_path: Path) -> None:
    # vllm/v1/worker/gpu_model_runner.py _dummy_run calls self.drafter.dummy_run(num_tokens); vllm-ascend's
    # model_runner_v1.py sample_tokens calls propose_draft_token_ids(...); the drafter's frames are cut off below.
    for frame, code in (('File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3301, '
                         'in _dummy_run', "self.drafter.dummy_run(num_tokens)"),
                        ('File "/workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 2210, in sample_tokens',
                         "propose_draft_token_ids(sampler_output.sampled_token_ids)"),
                        ('File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2950, '
                         "in propose_draft_token_ids", "draft_token_ids = self.drafter.propose(")):
        text = (f'{_WORKER}  File "/opt/venv/lib/python3.12/site-packages/torch/utils/_contextlib.py", line 120, in '
                f"decorate_context\n{_WORKER}    return func(*args, **kwargs)\n{_WORKER}  {frame}\n{_WORKER}    {code}\n")
        assert _causes(tmp_path, text) == [("MTP_ENGINE_CRASH", "medium")], code
        assert _runtime(tmp_path, text) is Engine.vllm
    # A DFlash drafter's model file (vllm/model_executor/models/qwen3_dflash.py) in the frames.
    dflash = (f'{_WORKER}  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/qwen3_dflash.py", '
              f"line 702, in forward\n{_WORKER}    return self.model(input_ids, positions, inputs_embeds)\n")
    assert _causes(tmp_path, dflash) == [("MTP_ENGINE_CRASH", "medium")]
    # A Celery worker's traceback through a blog app's drafter object and its drafter.py module: no drafter of an engine.
    for code in ("self.drafter.save_post(post)", "self.drafter.publish(post_id)", "drafts = propose_drafts(user)"):
        blog = ("[2026-03-14 09:12:41,118: ERROR/ForkPoolWorker-2] Task blog.tasks.autosave[8f1c] raised unexpected: "
                "Traceback (most recent call last):\n"
                '  File "/srv/blog/venv/lib/python3.11/site-packages/celery/app/trace.py", line 453, in trace_task\n'
                "    R = retval = fun(*args, **kwargs)\n"
                '  File "/srv/blog/blog/drafter.py", line 41, in autosave\n'
                f"    {code}\n")
        assert _causes(tmp_path, blog) == [], code


def test_a_cut_traceback_under_a_drafter_setting_is_a_crash_on_the_speculative_path(tmp_path: Path) -> None:
    # A traceback head (vLLM's API server, the entry point's frame only) under a command that sets a drafter
    # (vllm/engine/arg_utils.py --speculative-config; SGLang's --speculative-algorithm), the exception line cut off.
    vllm = ("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 4 \\\n"
            "  --speculative-config '{\"method\": \"eagle3\", \"model\": \"org/Qwen3-32B-EAGLE3\", "
            "\"num_speculative_tokens\": 4}'\n"
            "(APIServer pid=5120) Traceback (most recent call last):\n"
            '(APIServer pid=5120)   File "/opt/venv/bin/vllm", line 10, in <module>\n'
            "(APIServer pid=5120)     sys.exit(main())\n")
    assert _causes(tmp_path, vllm) == [("MTP_ENGINE_CRASH", "medium")]
    # SGLang's scheduler dying (python/sglang/srt/managers/scheduler.py run_scheduler_process logs "Scheduler hit an
    # exception" with the traceback), cut after its first frame, under --speculative-algorithm EAGLE3 and NEXTN.
    for algorithm in ("EAGLE3", "NEXTN"):
        sglang = (f"python3 -m sglang.launch_server --model-path org/model --tp 2 --speculative-algorithm {algorithm} "
                  "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4\n"
                  "[2026-03-14 09:12:41] Received sigquit from a child process. It usually means the child failed.\n"
                  "[2026-03-14 09:12:41 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
                  '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2410, in run_scheduler_process\n')
        assert _causes(tmp_path, sglang) == [("MTP_ENGINE_CRASH", "medium")], algorithm
        # The same run without the drafter: a crash nothing ties to the speculative path.
        plain = sglang.replace(f"--speculative-algorithm {algorithm} --speculative-num-steps 3 --speculative-eagle-topk "
                               "1 --speculative-num-draft-tokens 4", "--mem-fraction-static 0.8")
        assert _causes(tmp_path, plain) == [], algorithm
    assert _causes(tmp_path, vllm.replace("  --speculative-config '{\"method\": \"eagle3\", \"model\": "
                                          "\"org/Qwen3-32B-EAGLE3\", \"num_speculative_tokens\": 4}'\n",
                                          "  --max-model-len 32768\n")) == []


def test_other_programs_cut_tracebacks_under_draft_flags_name_nothing(tmp_path: Path) -> None:
    # A Ray job's traceback head under a command with a --draft-model flag of its own, a Django traceback head under a
    # management command with --draft, a Celery worker's: no engine's traceback, whatever their flags say.
    for text in ("$ ray job submit --working-dir . -- python distill.py --draft-model small --speculative 1\n"
                 "Traceback (most recent call last):\n"
                 '  File "/home/ray/distill.py", line 88, in <module>\n'
                 "    main(args)\n",
                 "$ python manage.py publish_posts --draft --speculative-publish\n"
                 "Traceback (most recent call last):\n"
                 '  File "/srv/site/manage.py", line 22, in <module>\n'
                 "    main()\n"
                 '  File "/srv/site/venv/lib/python3.12/site-packages/django/core/management/__init__.py", line 442, '
                 "in execute_from_command_line\n",
                 "$ celery -A blog worker --loglevel=INFO -Q drafts\n"
                 "[2026-03-14 09:12:41,118: ERROR/MainProcess] Process 'ForkPoolWorker-3' pid:7721 exited with "
                 "'signal 9 (SIGKILL)'\n"
                 "Traceback (most recent call last):\n"
                 '  File "/srv/blog/venv/lib/python3.11/site-packages/billiard/pool.py", line 1265, in mark_as_worker_lost\n'):
        assert _causes(tmp_path, text) == [], text[:60]


def test_a_kernels_device_side_assert_under_a_drafter_setting_is_a_crash_on_the_speculative_path(tmp_path: Path) -> None:
    # CUDA's device-side assert as the runtime prints it (an Inductor-generated kernel's bounds check), under a
    # docker-compose command list that sets a DFlash drafter (vllm/engine/arg_utils.py --speculative-config).
    command = ("    command:\n      - Qwen/Qwen3-8B\n      - --max-num-seqs\n      - '8'\n"
               "      - --speculative-config\n"
               "      - '{\"method\": \"dflash\", \"model\": \"org/Qwen3-8B-DFlash\", \"num_speculative_tokens\": 6}'\n")
    kernel = ("/root/.cache/vllm/torch_compile_cache/ab12/inductor_cache/xy/cxyz.py:41: unknown: block: [7,0,0], "
              "thread: [64,0,0] Assertion `index out of bounds: 0 <= tmp3 < 151936` failed.\n")
    assert _causes(tmp_path, command + kernel) == [("MTP_ENGINE_CRASH", "medium")]
    # The same assert in a training script's output, and under the same command list without the drafter: no cause.
    train = ("$ python train.py --epochs 3 --data drafts.jsonl\n"
             "/opt/conda/lib/python3.11/site-packages/torch/nn/functional.py:2210: indexSelectLargeIndex: block: [12,0,0], "
             "thread: [5,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n")
    assert _causes(tmp_path, train) == []
    plain = command.replace("      - --speculative-config\n", "").replace(
        "      - '{\"method\": \"dflash\", \"model\": \"org/Qwen3-8B-DFlash\", \"num_speculative_tokens\": 6}'\n", "")
    assert _causes(tmp_path, plain + kernel) == []


def test_vllms_loader_failing_on_a_drafters_model_class_is_a_loader_bug(tmp_path: Path) -> None:
    # vllm/model_executor/models/utils.py AutoWeightsLoader._load_module: "There is no module or parameter named
    # '{prefix}' in {type(self.module).__name__}", here in a DFlash drafter's class (its capitals split "D" + "Flash").
    for model in ("DFlashQwen3Model", "DeepSeekMTP"):
        text = f"ValueError: There is no module or parameter named 'layers.0.fusion_proj' in {model}\n"
        assert _causes(tmp_path, text) == [("MTP_LOADER_BUG", "medium")], model
        assert _runtime(tmp_path, text) is Engine.vllm
    # The same loader error in the target's class (a multimodal checkpoint under a text-only class), and a chat app's
    # own error naming an AssistantMessage: nothing of a drafter's.
    assert _causes(tmp_path, "ValueError: There is no module or parameter named 'visual' in Qwen3_5Model\n") == []
    assert _causes(tmp_path, "ValueError: no field named 'tool_calls' in AssistantMessage\n") == []


# src/llama.cpp:375 ("%s: error loading model: %s") around src/llama-model-loader.cpp:1159 ("missing tensor '%s'") for a
# blk.%d.nextn.* tensor (src/llama-arch.cpp:588-593); gguf-py/gguf/scripts/gguf_dump.py:66 rows for the file's tensors.
_NEXTN_MISSING = "llama_model_load: error loading model: missing tensor 'blk.46.nextn.{tensor}.weight'\n"
_TENSOR_LIST = ("* Dumping 3 tensor(s)\n"
         "  1101:   10485760 |  4096, 2560,     1,     1 | BF16    | blk.{block}.nextn.eh_proj.weight\n"
         "  1102:       2048 |  2048,     1,     1,     1 | F32     | blk.{block}.nextn.enorm.weight\n"
         "  1103:       2048 |  2048,     1,     1,     1 | F32     | blk.{block}.nextn.hnorm.weight\n")


def test_a_missing_nextn_tensor_alone_gives_both_readings_with_the_tensor_list_as_the_check(tmp_path: Path) -> None:
    # A tensor MTP blocks share with the trunk (the pinned loaders make it optional): the loader's requirement first.
    shared = _NEXTN_MISSING.format(tensor="shared_head_head")
    assert _causes(tmp_path, shared) == [("MTP_LOADER_BUG", "medium")]
    paste = tmp_path / "alone.log"
    paste.write_text(shared, encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert any("two readings" in e and "gguf-dump" in e for e in cause.evidence)
    # One of the block's own tensors: the file's gap first; never high from the line alone.
    assert _causes(tmp_path, _NEXTN_MISSING.format(tensor="eh_proj")) == [("MTP_WEIGHTS_MISSING", "medium")]


def test_a_tensor_list_holding_the_mtp_block_decides_the_missing_nextn_tensor(tmp_path: Path) -> None:
    listed = _TENSOR_LIST.format(block=46)
    # The block is in the file: a missing shared tensor is the loader's requirement.
    assert _causes(tmp_path, listed + _NEXTN_MISSING.format(tensor="embed_tokens")) == [("MTP_LOADER_BUG", "high")]
    # A missing own tensor of a listed block: a partial block, the file's (medium).
    assert _causes(tmp_path, listed + _NEXTN_MISSING.format(tensor="shared_head_norm")) == \
        [("MTP_WEIGHTS_MISSING", "medium")]
    # Another block's tensors listed decide nothing about block 46.
    assert _causes(tmp_path, _TENSOR_LIST.format(block=3) + _NEXTN_MISSING.format(tensor="embed_tokens")) == \
        [("MTP_LOADER_BUG", "medium")]


def test_other_programs_missing_weights_name_no_mtp_cause(tmp_path: Path) -> None:
    # PyTorch's load_state_dict and TensorFlow's checkpoint reader on a model of their own.
    torch = ('RuntimeError: Error(s) in loading state_dict for Encoder:\n\tMissing key(s) in state_dict: '
             '"next_layer.weight", "embed_tokens.weight".\n')
    tf = "NotFoundError: Key next_token/embed_tokens/kernel not found in checkpoint\n"
    assert _causes(tmp_path, torch) == []
    assert _causes(tmp_path, tf) == []


# src/llama-context.cpp:150's refusal of a Gemma 4 assistant's context without the target's, then ggml's CUDA/HIP
# allocation failure and src/llama-context.cpp:684 / src/llama-kv-cache.cpp:288 (llama.cpp#24758's shape, on ROCm).
_CTX_OTHER_LINE = "llama_init_from_model: failed to initialize the context: Gemma4Assistant requires ctx_other to be set\n"
_OOM = ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1830.00 MiB on device 1: hipMalloc failed: out of memory\n"
        "llama_kv_cache: failed to allocate buffer for kv cache\n"
        "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache\n")


def test_a_drafter_context_out_of_memory_is_the_start_failing_not_a_crash(tmp_path: Path) -> None:
    causes = _causes(tmp_path, _CTX_OTHER_LINE + _OOM)
    assert causes[:1] == [("MTP_FAILED", "medium")]
    assert all(word != "high" for _, word in causes)
    # The ctx_other refusal alone (llama-cli, an app loading the assistant on its own) stays the crash on the draft path.
    assert _causes(tmp_path, _CTX_OTHER_LINE)[:1] == [("MTP_ENGINE_CRASH", "high")]
    # Memory that ran out before the drafter's context (the target's own) is not the drafter's.
    assert [c for c, _ in _causes(tmp_path, _OOM + _CTX_OTHER_LINE)][:1] == ["MTP_ENGINE_CRASH"]


def test_out_of_memory_without_a_drafter_names_no_mtp_cause(tmp_path: Path) -> None:
    # A plain llama-server start that runs out of memory, and PyTorch's OOM in a training script.
    assert _causes(tmp_path, _OOM) == []
    torch = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity; "
             "21.10 GiB already allocated)\n")
    assert _causes(tmp_path, torch) == []


# vllm/logger.py's prefix "[%(filename)s:%(lineno)d]" names the module that printed a line; vllm/v1/spec_decode/ names its
# drafters' modules by their drafter (dflash.py, dspark.py, dflare.py, mlp_speculator.py, custom_class_proposer.py), the
# models folder its drafter models' (deepseek_mtp.py). A line such a module printed is the drafter's voice, whatever its
# words; vllm/v1/executor/multiproc_executor.py's "WorkerProc failed to start." after it is a start failing with the
# drafter set up.
_WORKER_START = ("(Worker_TP0 pid=4021) INFO 03-11 09:14:02 [{module}.py:212] Loaded 96 params in 1.9 s\n"
                 "(Worker_TP0 pid=4021) INFO 03-11 09:14:02 [default_loader.py:430] Loading weights took 2.10 seconds\n"
                 "(Worker_TP0 pid=4021) ERROR 03-11 09:14:03 [multiproc_executor.py:898] WorkerProc failed to start.\n"
                 "(Worker_TP0 pid=4021) ERROR 03-11 09:14:03 [multiproc_executor.py:898] Traceback (most recent call last):\n")


@pytest.mark.parametrize("module", ["dspark", "dflare", "mlp_speculator", "custom_class_proposer", "deepseek_mtp",
                                    "ngram_proposer_gpu", "multi_layer_eagle"])
def test_a_line_any_vllm_drafter_module_printed_ties_the_worker_failing_to_start(tmp_path: Path, module: str) -> None:
    assert _causes(tmp_path, _WORKER_START.format(module=module)) == [("MTP_ENGINE_CRASH", "medium")]


@pytest.mark.parametrize("module", ["gpu_model_runner", "beagle", "mtpx", "draftsman", "cuda_communicator"])
def test_a_module_whose_name_only_holds_a_drafters_letters_ties_nothing(tmp_path: Path, module: str) -> None:
    # The parts of the name decide ("beagle", "mtpx", "draftsman" are no drafter's word); the target's runner is no drafter.
    assert _causes(tmp_path, _WORKER_START.format(module=module)) == []


# vllm/v1/executor/multiproc_executor.py get_response: "Worker failed with error '%s', please check the stack trace above
# for the root cause" around the worker's exception, here CPython's AttributeError words (Objects/object.c:
# "'%.100s' object has no attribute '%U'"), as the engine core's logger prints it.
_ENGINE_CORE = ("(EngineCore_DP0 pid=771) ERROR 05-20 08:02:11 [core.py:938]   File \"/usr/local/lib/python3.12/"
                "site-packages/vllm/v1/executor/multiproc_executor.py\", line 342, in get_response\n"
                "(EngineCore_DP0 pid=771) ERROR 05-20 08:02:11 [core.py:938]     raise RuntimeError(\n"
                "(EngineCore_DP0 pid=771) ERROR 05-20 08:02:11 [core.py:938] RuntimeError: Worker failed with error "
                "''{owner}' object has no attribute '{name}'', please check the stack trace above for the root cause\n")


@pytest.mark.parametrize("name", ["draft_attn_metadatas", "spec_decode_metadata", "num_draft_tokens", "drafter",
                                  "eagle3_hidden_states", "mtp_layer_idx"])
def test_an_engines_exception_looking_up_its_drafting_state_is_a_crash_on_the_drafting_path(tmp_path: Path,
                                                                                            name: str) -> None:
    text = _ENGINE_CORE.format(owner="ForwardContext", name=name)
    assert _causes(tmp_path, text) == [("MTP_ENGINE_CRASH", "medium")]
    assert _runtime(tmp_path, text) is Engine.vllm


@pytest.mark.parametrize("name", ["kv_cache_spec", "drafty_cache", "mtpx_flag", "attn_metadata"])
def test_an_engines_exception_on_a_name_that_is_no_drafters_ties_nothing(tmp_path: Path, name: str) -> None:
    # The parts of the name decide: "drafty", "mtpx" and the target's own attention metadata are no drafter's.
    assert _causes(tmp_path, _ENGINE_CORE.format(owner="ForwardContext", name=name)) == []


def test_another_programs_exception_on_a_draft_name_ties_nothing(tmp_path: Path) -> None:
    # Django's traceback of a blog app: its posts have drafts; no engine printed it.
    text = ('Traceback (most recent call last):\n'
            '  File "/srv/blog/venv/lib/python3.11/site-packages/django/core/handlers/base.py", line 197, in _get_response\n'
            '    response = wrapped_callback(request, *callback_args, **callback_kwargs)\n'
            '  File "/srv/blog/posts/views.py", line 41, in publish\n'
            '    post.draft_attn_metadatas.clear()\n'
            "AttributeError: 'Post' object has no attribute 'draft_attn_metadatas'\n")
    assert _causes(tmp_path, text) == []


# SGLang's watchdog (python/sglang/srt/utils/watchdog.py: "{name} watchdog timeout (self.watchdog_timeout=..., self.soft=...)";
# scheduler.py before it: "Watchdog timeout (self.watchdog_timeout=...)") and the launcher's SIGQUIT handler
# (srt/entrypoints/engine.py: "Received sigquit from a child process. It usually means the child failed."), under the
# logger's rank tag, with or without its time ("[2026-03-02 11:40:02 TP3] ", "[TP3] ", "[DP1 TP0] ").
_HANG = ("{tag} Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n"
         "[2026-03-02 11:40:07] Received sigquit from a child process. It usually means the child failed.\n")


@pytest.mark.parametrize("tag", ["[2026-03-02 11:40:02 TP3]", "[TP3]", "[DP1 TP0]", "[TP0 EP0]"])
def test_sglangs_watchdog_is_a_hang_of_sglang_tied_to_nothing_alone(tmp_path: Path, tag: str) -> None:
    text = _HANG.format(tag=tag)
    assert _causes(tmp_path, text) == []
    assert _runtime(tmp_path, text) is Engine.sglang


@pytest.mark.parametrize("command", [
    "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --speculative-algorithm EAGLE "
    "--speculative-num-steps 3",
    "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --speculative-algorithm NEXTN --speculative-num-steps 2"])
def test_sglangs_watchdog_under_a_drafters_setting_is_a_crash_on_the_drafting_path(tmp_path: Path, command: str) -> None:
    text = f"$ {command}\n" + _HANG.format(tag="[TP0]")
    assert _causes(tmp_path, text) == [("MTP_ENGINE_CRASH", "medium")]


def test_another_programs_watchdog_or_sigquit_ties_nothing(tmp_path: Path) -> None:
    # The kernel's soft-lockup watchdog and a Go service's own watchdog under a command with a draft flag: not SGLang's.
    text = ("$ ./publisher --draft-mode --workers 8\n"
            "kernel: watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [publisher:4121]\n"
            "publisher: watchdog timeout after 300s, sending SIGQUIT\n")
    assert _causes(tmp_path, text) == []


def test_an_untied_engine_death_or_cut_traceback_is_said_in_a_note(tmp_path: Path) -> None:
    # Issue 42: without a tie a crash is a crash, said (what died, its line), with no MTP cause.
    paste = tmp_path / "paste.log"
    paste.write_text(_HANG.format(tag="[TP0]"), encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == []
    (note,) = report.notes
    assert "nothing ties it to MTP: line 1: SGLang's watchdog" in note and "Scheduler watchdog timeout" in note
    # SGLang's scheduler traceback cut before its exception, its frames in no drafting code.
    paste.write_text('Traceback (most recent call last):\n'
                     '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 1827, in run_scheduler_process\n'
                     '    scheduler.event_loop_normal()\n', encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == [] and "a crash, nothing ties it to MTP: line 1: a Python traceback" in report.notes[0]


# The engines' own words that the drafter was set up, under their logger prefix: vLLM's (vllm/v1/spec_decode/eagle.py
# load_model: "Detected MTP model. Sharing target model lm_head weights with the draft model."; dspark.py: "DSpark draft
# model loaded: %d params") and SGLang's model runner loading the drafter's class (model_runner.py: "Load weight end.
# type=%s, dtype=%s, ..."). A death after one is on the drafting path.
@pytest.mark.parametrize("text", [
    "(Worker_TP0 pid=11) INFO 03-11 09:14:02 [utils.py:100] Detected MTP model. Sharing target model lm_head weights "
    "with the draft model.\n(Worker_TP0 pid=11) ERROR 03-11 09:14:03 [multiproc_executor.py:898] WorkerProc failed to start.\n",
    "(Worker_TP0 pid=11) INFO 03-11 09:14:02 [loader.py:88] EAGLE3 model loaded: 1.2 GiB\n"
    "(Worker_TP0 pid=11) ERROR 03-11 09:14:03 [multiproc_executor.py:898] WorkerProc failed to start.\n",
    "[2026-03-02 11:20:41 TP0] Load weight end. type=Qwen3ForCausalLMEagle3, dtype=torch.bfloat16, avail mem=20.1 GB\n"
    "[2026-03-02 11:21:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n",
])
def test_an_engines_own_line_that_it_set_up_the_drafter_ties_a_death_after_it(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == [("MTP_ENGINE_CRASH", "medium")]


@pytest.mark.parametrize("text", [
    # The target's class, not a drafter's.
    "[2026-03-02 11:20:41 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=20.1 GB\n"
    "[2026-03-02 11:21:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n",
    # A request's prompt is content; a blog app's logger line about its draft posts is no engine's.
    "(APIServer pid=1) INFO 03-11 09:14:02 [logger.py:39] Received request chatcmpl-1: prompt: 'Draft model loaded "
    "with the draft model', params: SamplingParams(n=1)\n"
    "(Worker_TP0 pid=11) ERROR 03-11 09:14:03 [multiproc_executor.py:898] WorkerProc failed to start.\n",
    "INFO 03-11 09:14:02 [posts.py:10] Draft post loaded with the draft template\nERROR: worker failed to start\n",
])
def test_the_targets_class_a_prompt_or_another_apps_draft_words_tie_nothing(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []
