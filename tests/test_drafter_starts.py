"""A drafter that does not start (issue 42, round 9): the engine's own line that the drafter's model did not load or its
context was not made, under a run that sets that drafter, is the speculative configuration's failure (MTP_FAILED),
whichever drafter it is (MTP's head, a -md draft model, EAGLE3). Texts written here from the engines' real formats
(cited per test), not corpus pastes, each with a negative of the same shape that is not a drafter's start."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError


def _read(tmp_path: Path, text: str) -> tuple[list[tuple[str, str]], str]:
    """The causes with their confidence words and the first cause's message; a refused text names none."""
    paste = tmp_path / "paste.log"
    paste.write_text(text, encoding="utf-8")
    try:
        report = diagnose(log_files=[paste])
    except FormatError:
        return [], ""
    return [(c.code, c.confidence_word) for c in report.causes], report.causes[0].message if report.causes else ""


# The drafter's context, in llama.cpp's and its forks' words: ik_llama.cpp's common/speculative.cpp ("failed to create
# draft context") and its server ("failed to initialize MTP speculative context", then the JSON-ish ERR line of
# examples/server), mainline's "failed to create MTP draft context" (llama.rn) with llama_init_from_model's refusal
# of the context's parameters before it (src/llama-context.cpp: "n_ctx_seq ... " / "cannot both be zero" family).
@pytest.mark.parametrize("text", [
    "./llama-server -m Qwen3.6-27B-Q6_K.gguf --spec-type mtp:n_max=2 -md mtp-Qwen3.6-27B-Q6_K.gguf -ub 0\n"
    "llama_init_from_model: n_ubatch must be greater than zero\n"
    "failed to create draft context\n"
    "srv          init: failed to initialize MTP speculative context\n",
    "llama-server -m GLM-4.7-Flash-Q4_K_M.gguf --spec-type draft-mtp --spec-draft-n-max 3\n"
    "common_speculative_init: failed to create the MTP draft context\n"
    "srv    load_model: exiting due to model loading error\n",
    "./build/bin/llama-server -m Qwen3-8B-Q4_K_M.gguf -md EAGLE3-Qwen3-8B.gguf --spec-type draft-eagle3 -c 65536\n"
    "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\n"
    "common_speculative_init: failed to create draft context\n"
    "main: exiting due to model loading error\n",
])
def test_a_drafter_context_not_made_is_the_speculative_start_failing(tmp_path: Path, text: str) -> None:
    causes, _ = _read(tmp_path, text)
    assert causes[:1] == [("MTP_FAILED", "medium")] or causes[:1] == [("MTP_FAILED", "high")]
    assert "ENGINE_LIMITATION" not in [code for code, _ in causes]


# llama-server's load_model (tools/server/server-context.cpp: SRV_ERR "failed to load draft model, '%s'") after the
# loader's own error (src/llama.cpp: "error loading model: %s"), under a command that sets a -md draft model.
@pytest.mark.parametrize(("run", "named"), [
    ("llama-server -m Mistral-Small-24B-Q4_K_M.gguf -md Mistral-0.5B-Q8_0.gguf --spec-type draft-simple -ctk q4_0",
     "draft-simple"),
    ("./llama-server -m Qwen3-8B-Q4_K_M.gguf -md EAGLE3-Qwen3-8B.gguf --spec-type draft-eagle3 -ngl 99", "draft-eagle3"),
])
def test_a_draft_model_that_does_not_load_under_its_setting_is_mtp_failed(tmp_path: Path, run: str, named: str) -> None:
    text = (f"{run}\n"
            "llama_model_load: error loading model: check_tensor_dims: tensor 'blk.0.attn_q.weight' has wrong shape\n"
            "llama_model_load_from_file_impl: failed to load model\n"
            "srv    load_model: failed to load draft model, 'draft.gguf'\n"
            "srv    llama_server: exiting due to model loading error\n")
    causes, message = _read(tmp_path, text)
    assert causes == [("MTP_FAILED", "medium")]
    assert named in message and "MTP off" in message


def test_the_target_not_loading_under_a_drafter_setting_names_no_cause(tmp_path: Path) -> None:
    """The same run, but the target model fails (no drafter line after the loader's error): a failed start, not the
    drafter's."""
    text = ("llama-server -m Mistral-Small-24B-Q4_K_M.gguf -md Mistral-0.5B-Q8_0.gguf --spec-type draft-simple\n"
            "llama_model_load: error loading model: check_tensor_dims: tensor 'blk.0.attn_q.weight' has wrong shape\n"
            "llama_model_load_from_file_impl: failed to load model\n"
            "srv    load_model: failed to load model, 'Mistral-Small-24B-Q4_K_M.gguf'\n"
            "srv    llama_server: exiting due to model loading error\n")
    assert _read(tmp_path, text)[0] == []


def test_a_draft_file_that_does_not_load_with_no_setting_shown_names_no_cause(tmp_path: Path) -> None:
    """Only the load line names the drafter (no command, no speculative setting): a file that did not load, not a
    configuration that failed (the shape of an EAGLE3 or DFlash GGUF whose architecture the build does not know)."""
    text = ("llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'eagle'\n"
            "llama_model_load_from_file_impl: failed to load model\n"
            "srv    load_model: failed to load draft model, 'D:\\models\\Qwen3-8B-EAGLE3-Q8_0.gguf'\n"
            "main: exiting due to model loading error\n")
    assert _read(tmp_path, text)[0] == []


@pytest.mark.parametrize("text", [
    # A blog engine's editor (drafts of posts) and a mail client's drafts folder: the same words, no engine.
    "2026-12-04 10:11:12 ERROR editor.drafts: failed to create draft context for post 4812: db timeout\n"
    "2026-12-04 10:11:12 ERROR editor.api: POST /posts/4812/draft 500\n",
    "[mailsync] failed to initialize draft context: IMAP folder 'Drafts' not found\n"
    "[mailsync] sync of account 2 stopped\n",
    # A whole line with the words after a note-taking app's one-word tag (no engine, no model, no setting).
    "notes-sync 2.4.1 starting\n"
    "sync: failed to create draft context\n"
    "sync: retrying in 30 s\n",
])
def test_the_same_words_from_software_that_does_not_draft_name_no_cause(tmp_path: Path, text: str) -> None:
    assert _read(tmp_path, text)[0] == []


# ggml's CPU backend aborts on an op it lacks (ggml/src/ggml-cpu/ggml-cpu.c ggml_get_n_tasks: "op not implemented: %s",
# then ggml_abort's "fatal error" and backtrace): an op of tree verification (a DFlash fork's SSM_CONV_TREE, its
# allocate_tree_buffers line before it) is the speculative path's crash, never "no MTP graph".
_GGML_ABORT = ("/src/llama.cpp/ggml/src/ggml-cpu/ggml-cpu.c:2455: fatal error\n"
               "/src/llama.cpp/build/bin/libggml-base.so.0(ggml_abort+0x15b)[0x7f3a5c458adb]\n"
               "/src/llama.cpp/build/bin/libggml-cpu.so.0(ggml_graph_plan+0x37d)[0x7f3a5ba9835d]\n")


@pytest.mark.parametrize("text", [
    "allocate_tree_buffers: allocated tree verify buffers: 32 layers x 16 tokens = 512.0 MB\n"
    "ggml_get_n_tasks: op not implemented: GATED_DELTA_NET_TREE\n" + _GGML_ABORT,
    "ggml_get_n_tasks: op not implemented: SSM_SCAN_TREE\n" + _GGML_ABORT,
])
def test_a_tree_verification_op_missing_is_a_crash_on_the_drafting_path(tmp_path: Path, text: str) -> None:
    causes, _ = _read(tmp_path, text)
    assert causes[:1] == [("MTP_ENGINE_CRASH", "medium")]
    assert "NO_MTP_GRAPH" not in [code for code, _ in causes]


@pytest.mark.parametrize("text", [
    # the same abort on an op no drafter builds, and a spatial database's own "op not implemented" on its R-tree
    "ggml_get_n_tasks: op not implemented: CONV_TRANSPOSE_2D\n" + _GGML_ABORT,
    "[geo-index] op not implemented: R_TREE\n[geo-index] falling back to a full scan\n",
    "2026-12-04 10:11:12 kvstore: allocated tree buffers for 48 shards\n2026-12-04 10:11:13 kvstore: op not "
    "implemented: B_TREE_SCAN\nSegmentation fault (core dumped)\n",
])
def test_a_missing_op_no_drafter_builds_names_no_cause(tmp_path: Path, text: str) -> None:
    assert _read(tmp_path, text)[0] == []


# llama.cpp's loader (src/llama-model.cpp create_tensor: "model has unused tensor %s (size = %zu bytes) -- ignoring")
# leaves a head out of a load that did not ask for MTP; an assert after it in the loader's own code (a split-mode
# tensor check, src/llama-model.cpp) is that load's crash, not MTP's: a note, no cause.
_UNUSED_HEAD = ("W model has unused tensor blk.92.nextn.eh_proj.weight (size = 52428800 bytes) -- ignoring\n"
                "W model has unused tensor blk.92.nextn.shared_head_norm.weight (size = 20480 bytes) -- ignoring\n")


def test_a_loader_crash_after_the_head_was_left_out_names_no_cause(tmp_path: Path) -> None:
    text = (_UNUSED_HEAD + "/src/llama.cpp/src/llama-model.cpp:388: GGML_ASSERT(split_dim >= 0) failed\n"
            "[New LWP 81234]\n" + _GGML_ABORT)
    assert _read(tmp_path, text)[0] == []


def test_the_left_out_head_without_a_crash_still_says_mtp_was_not_switched_on(tmp_path: Path) -> None:
    causes, _ = _read(tmp_path, _UNUSED_HEAD + "main: server is listening on http://127.0.0.1:8080\n")
    assert causes[:1] == [("MTP_NOT_ENABLED", "medium")]



# llama_init_from_model's checks of a context's parameters (src/llama-context.cpp, the same in ik_llama.cpp: "n_batch and
# n_ubatch cannot both be zero", "V cache quantization requires flash_attn"), then the drafter's context not made
# (ik_llama.cpp's common/speculative.cpp and server, mainline's common_speculative_init): the reading says what was
# refused and what to change, not "no nextn layers or memory".
@pytest.mark.parametrize(("text", "said", "change"), [
    ("./llama-server -m Qwen3.6-27B-Q4_K_M.gguf --spec-type mtp:n_max=2 -md mtp-Qwen3.6-27B-Q4_K_M.gguf\n"
     "llama_init_from_model: n_batch and n_ubatch cannot both be zero\n"
     "failed to create draft context\n"
     "srv          init: failed to initialize MTP speculative context\n", "batch size of 0", "-ub"),
    ("llama-server -m GLM-4.7-Flash-Q4_K_M.gguf --spec-type draft-mtp -ctv q8_0\n"
     "llama_init_from_model: V cache quantization requires flash_attn\n"
     "common_speculative_init: failed to create the MTP draft context\n"
     "srv    load_model: exiting due to model loading error\n", "without flash attention", "-fa on"),
])
def test_a_draft_context_refused_its_parameters_says_which_and_what_to_change(tmp_path: Path, text: str, said: str,
                                                                             change: str) -> None:
    paste = tmp_path / "paste.log"
    paste.write_text(text, encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert cause.code == "MTP_FAILED" and said in cause.message and change in cause.fix
    assert "nextn" not in cause.message and "memory" not in cause.fix
    assert any("line 2" in e for e in cause.evidence) and any("line 3" in e for e in cause.evidence)


def test_the_targets_context_refused_with_no_drafter_names_no_cause(tmp_path: Path) -> None:
    text = ("llama-server -m Qwen3-8B-Q4_K_M.gguf -b 0 -ub 0\n"
            "llama_init_from_model: n_batch and n_ubatch cannot both be zero\n"
            "common_init_from_params: failed to create context with model 'Qwen3-8B-Q4_K_M.gguf'\n"
            "srv    load_model: failed to load model, 'Qwen3-8B-Q4_K_M.gguf'\n")
    assert _read(tmp_path, text)[0] == []
