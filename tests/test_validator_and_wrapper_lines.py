"""Refusals, crashes and loader errors of issue 42's known misses (round 11, builder W), as classes: texts written here
in the engines' and wrappers' real formats (sources cited per test), not corpus pastes, each with a negative of the same
shape from software that does not draft."""

from __future__ import annotations

from pathlib import Path

from pastes import read_paste

from mtpinspect.vocabulary import Engine


def test_pydantics_value_error_line_of_vllms_speculative_check_is_a_refusal(tmp_path: Path) -> None:
    # vllm/config/speculative.py (a pydantic dataclass): a validator's ValueError is printed by pydantic-core as
    # "  Value error, {msg} [type=value_error, input_value=ArgsKwargs(...), input_type=ArgsKwargs]" under
    # "1 validation error for SpeculativeConfig"; a paste may hold that line alone.
    alone = ("  Value error, MTP is only supported for DeepSeek models. Got self.target_model_config.hf_text_config."
             "model_type='mistral' [type=value_error, input_value=ArgsKwargs((), {'method': 'mtp'}), "
             "input_type=ArgsKwargs]\n"
             "    For further information visit https://errors.pydantic.dev/2.11/v/value_error\n")
    assert read_paste(tmp_path, alone) == (["ENGINE_LIMITATION"], Engine.vllm)
    # pydantic's AssertionError words, cut from their header.
    asserted = ("  Assertion failed, num_speculative_tokens must be at most 4 for the draft model "
                "[type=assertion_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]\n")
    assert read_paste(tmp_path, asserted)[0] == ["ENGINE_LIMITATION"]
    # Under its header, the validator's words that the method is supported only for some models say what was refused.
    headed = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n" + alone)
    assert read_paste(tmp_path, headed) == (["ENGINE_LIMITATION"], Engine.vllm)
    # A blog app's form validator in the same format: its draft posts are no drafter.
    blog = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for PostForm\n"
            "  Value error, draft posts are only supported for editors [type=value_error, "
            "input_value={'title': 'x'}, input_type=dict]\n")
    assert read_paste(tmp_path, blog)[0] == []
    # A trading app's "speculative" order, and a bare pydantic line of a settings model: no cause.
    assert read_paste(tmp_path, "  Value error, speculative orders are not supported on this account "
                                "[type=value_error, input_value={}, input_type=dict]\n")[0] == []
    assert read_paste(tmp_path, "  Value error, port must be at most 65535 [type=value_error, input_value=70000, "
                                "input_type=int]\n")[0] == []


def test_djl_servings_worker_tag_is_a_wrapper_the_line_is_the_engines(tmp_path: Path) -> None:
    # DJL Serving's Python engine (engines/python/.../PyProcess.java) forwards its worker's output as
    # "INFO  PyProcess W-<pid>-<model>-stdout: <line>"; the worker here runs vLLM (the LMI container).
    line = ("INFO  PyProcess W-311-llm-stdout:   Value error, Eagle3 is only supported for ['llama'] models. Got "
            "self.target_model_config.hf_text_config.model_type='phi3' [type=value_error, input_value=ArgsKwargs((), "
            "{'method': 'eagle3'}), input_type=ArgsKwargs]\n")
    assert read_paste(tmp_path, line) == (["ENGINE_LIMITATION"], Engine.vllm)
    # The same tag over a web app's worker: its words, no cause.
    other = "INFO  PyProcess W-311-shop-stdout:   Value error, draft orders are only supported for admins " \
            "[type=value_error, input_value={}, input_type=dict]\n"
    assert read_paste(tmp_path, other)[0] == []


def test_llama_decodes_own_failure_between_drafting_lines_is_a_crash_on_the_speculative_path(tmp_path: Path) -> None:
    # llama_decode's wrapper (src/llama.cpp in 2024 builds, src/llama-context.cpp since): "%s: failed to decode, ret = %d"
    # (1: no KV slot for the batch); common/speculative.cpp's common_speculative_gen_draft logged its reuse before it.
    drafting = ("slot update_slots: id  0 | task 77 | slot decode token, n_ctx = 4096, n_past = 4090, truncated = 0\n"
                "common_speculative_gen_draft: reuse_i = 0, reuse_n = 4080, prompt = 4090\n"
                "llama_decode: failed to decode, ret = 1\n"
                "srv  update_slots: run slots completed\n")
    assert read_paste(tmp_path, drafting) == (["MTP_ENGINE_CRASH"], Engine.llama_cpp)
    # The same failure in a run that shows no drafting: a full context, nothing of a drafter's.
    plain = ("slot update_slots: id  0 | task 77 | slot decode token, n_ctx = 4096, n_past = 4090, truncated = 0\n"
             "llama_decode: failed to decode, ret = 1\n"
             "srv  update_slots: run slots completed\n")
    assert read_paste(tmp_path, plain)[0] == []
    # A media player's decoder in the same words: not llama.cpp's.
    assert read_paste(tmp_path, "video_decode: failed to decode, ret = -11\nspeculative prefetch: on\n")[0] == []


def test_a_models_assert_that_an_mtp_tensor_is_there_is_the_loaders_requirement(tmp_path: Path) -> None:
    # ggml's "%s:%d: GGML_ASSERT(%s) failed" in a fork's graph builder (src/models/*.cpp) testing a layer.nextn.* tensor's
    # presence: the same requirement as the loader's "missing tensor 'blk.N.nextn.X'" (logread/rules_loader.py).
    shared = ("src/models/glm4-moe.cpp:212: GGML_ASSERT(layer.nextn.embed_tokens != nullptr && \"draft file has no "
              "embeddings\") failed\n")
    assert read_paste(tmp_path, shared) == (["MTP_LOADER_BUG"], Engine.llama_cpp)
    # One of the block's own tensors: the GGUF's gap first (a conversion that dropped it).
    own = "/src/llama.cpp/src/models/qwen35.cpp:88: GGML_ASSERT(layer.nextn.eh_proj) failed\n"
    assert read_paste(tmp_path, own)[0] == ["MTP_WEIGHTS_MISSING"]
    # A check of a nextn tensor's shape, not its presence: no loader reading.
    shape = "src/models/qwen35.cpp:91: GGML_ASSERT(layer.nextn.eh_proj->ne[0] == 2*n_embd) failed\n"
    assert read_paste(tmp_path, shape)[0] != ["MTP_LOADER_BUG"]
    # whisper.cpp's graph code (ggml too) asserting a tensor of its own is there: nothing of an MTP block's.
    assert read_paste(tmp_path, "src/whisper.cpp:1520: GGML_ASSERT(layer.cross_attn_ln_0_w != nullptr) failed\n")[0] != \
        ["MTP_LOADER_BUG"]


def test_vllms_speculative_token_budget_check_is_a_refusal_of_the_setting(tmp_path: Path) -> None:
    # vllm/config/vllm.py VllmConfig._set_max_num_scheduled_tokens, checked only with a speculative config: the draft
    # token slots a step (num_speculative_tokens a request) leave the scheduler no budget.
    full = ("(APIServer pid=1) ERROR 03-02 10:11:12 [api_server.py:1200] ValueError: max_num_scheduled_tokens is set to -256 "
            "based on the speculative decoding settings, which does not allow any tokens to be scheduled. Increase "
            "max_num_batched_tokens to accommodate the additional draft token slots, or decrease num_speculative_tokens.\n")
    cause, engine = read_paste(tmp_path, full)
    assert (cause, engine) == (["ENGINE_LIMITATION"], Engine.vllm)
    slots = ("ValueError: VllmConfig does not have enough slots to schedule a token and support the speculative decoding "
             "settings. Got max_num_batched_tokens=64 and scheduled_token_delta=80\n")
    assert read_paste(tmp_path, slots)[0] == ["ENGINE_LIMITATION"]
    # A rate limiter's words about its token bucket: nothing of vLLM's scheduler.
    assert read_paste(tmp_path, "ERROR: bucket size is set to 0, which does not allow any tokens to be scheduled\n")[0] == []


def test_fewer_tensors_made_than_an_mtp_gguf_holds_is_a_build_without_its_mtp_block(tmp_path: Path) -> None:
    # src/llama-model-loader.cpp done_getting_tensors: "%s: wrong number of tensors; expected %d, got %d" (the file's
    # count first): a build whose loader makes no MTP block for the architecture leaves the block's tensors over.
    asked = ("$ ./llama-server -m GLM-4.5-Air-Q4_K_M.gguf --spec-type draft-mtp\n"
             "llama_model_load: error loading model: done_getting_tensors: wrong number of tensors; expected 803, got 789\n"
             "llama_model_load_from_file_impl: failed to load model\n")
    assert read_paste(tmp_path, asked) == (["NO_MTP_GRAPH"], Engine.llama_cpp)
    layout = ("llama_model_loader: - kv   2:                    glm4moe.block_count u32              = 47\n"
              "llama_model_loader: - kv   3:           glm4moe.nextn_predict_layers u32              = 1\n"
              "llama_model_load: error loading model: done_getting_tensors: wrong number of tensors; expected 803, got 789\n")
    assert read_paste(tmp_path, layout)[0] == ["NO_MTP_GRAPH"]
    # The line alone, or a file without MTP: the GGUF's other tensors, nothing of MTP's.
    alone = "llama_model_load: error loading model: done_getting_tensors: wrong number of tensors; expected 76, got 69\n"
    assert read_paste(tmp_path, alone)[0] == []
    plain = layout.replace("nextn_predict_layers u32              = 1", "nextn_predict_layers u32              = 0")
    assert read_paste(tmp_path, plain)[0] == []
