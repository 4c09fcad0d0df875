"""Who ran it and what kind of fault (issue 42, round 4): the engine read from every sign of a paste, weighed; a start
that fails while the engine's settings are checked told from a crash by the phases before it; a drafter architecture
the engine does not know. Texts written here in the engines' real formats (each cites its source), not corpus pastes,
each with a negative of the same shape from software that does not draft."""

from __future__ import annotations

from pathlib import Path

from pastes import read_paste

from mtpinspect.diagnosis import diagnose
from mtpinspect.logread.catalogue import scan
from mtpinspect.logread.drafters import drafter_architecture
from mtpinspect.vocabulary import Engine

# -- the engine by evidence ---------------------------------------------------------------------------------------

def test_the_names_of_an_engines_code_name_the_engine() -> None:
    # vllm/engine/arg_utils.py (EngineArgs: max_num_seqs, gpu_memory_utilization); vllm/v1/worker/gpu_model_runner.py.
    assert scan("batch (max_num_seqs): 16\ngpu_memory_utilization = 0.92\n").writer is Engine.vllm
    assert scan("'GPUModelRunner' object has no attribute 'kv_caches'\n").writer is Engine.vllm
    # python/sglang/srt/server_args.py ServerArgs, managers/tp_worker.py TpModelWorker.
    assert scan("server_args=ServerArgs(model_path='Qwen/Qwen3-8B', mem_fraction_static=0.85, tp_size=1)\n").writer \
        is Engine.sglang
    # Another program's worker: a Temporal job's log line is no vLLM RuntimeError.
    assert scan("2026-01-03 10:00:01 ERROR Worker failed with error: activity timed out\n").writer is None


def test_an_engines_own_line_outweighs_mentions_of_another(tmp_path: Path) -> None:
    # One vLLM traceback frame under a poster's two mentions of GGUF files: the frame says who ran it.
    text = ("tried the GGUF first, then the safetensors; the GGUF loads in llama.cpp fine\n"
            "the Q4 GGUF is 18 GB\n"
            '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 212, in load_model\n'
            "RuntimeError: CUDA out of memory\n")
    found = scan(text)
    assert found.writer is Engine.vllm
    assert found.writer_line is not None and "vllm/v1/worker" in found.writer_line.line


def test_a_fragment_names_the_engine_its_lines_name(tmp_path: Path) -> None:
    # vllm/v1/executor/multiproc_executor.py collective_rpc: raise RuntimeError(f"Worker failed with error '{result}',
    # please check the stack trace above for the root cause"); a fragment of it alone is vLLM's, no cause (no tie).
    codes, engine = read_paste(tmp_path, "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was "
                                    "encountered', please check the stack trace above for the root cause\n")
    assert (codes, engine) == ([], Engine.vllm)
    # The wrapped error on its own line (Python's AttributeError words): the drafter's attribute ties it.
    codes, engine = read_paste(tmp_path, "RuntimeError: Worker failed with error:\n"
                                    "'GPUModelRunner' object has no attribute 'drafter'\n")
    assert (codes, engine) == (["MTP_ENGINE_CRASH"], Engine.vllm)
    # A web app's AttributeError words: nothing of an engine's, nothing of a drafter's.
    assert read_paste(tmp_path, "ERROR in views: 'NoneType' object has no attribute 'title'\n"
                           "'NoneType' object has no attribute 'title'\n")[0] == []


# -- a start failure is not a crash -------------------------------------------------------------------------------

_SPEC_VALIDATION = (
    # vllm/engine/arg_utils.py create_speculative_config -> SpeculativeConfig (a pydantic dataclass, vllm/config/speculative.py)
    "$ vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\", \"model\": \"org/qwen3-8b-eagle3\"}'\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1460, in create_engine_config\n'
    "    speculative_config = self.create_speculative_config(\n"
    '  File "/opt/venv/lib/python3.12/site-packages/pydantic/_internal/_dataclasses.py", line 121, in __init__\n'
    "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)\n"
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
    "  Value error, num_speculative_tokens is required for this method [type=value_error]\n")


def test_a_check_of_the_speculative_settings_at_start_is_a_failed_start(tmp_path: Path) -> None:
    assert read_paste(tmp_path, _SPEC_VALIDATION) == (["MTP_FAILED"], Engine.vllm)
    # A check that asks for a setting to change, under the command alone (vllm/config/compilation.py's words).
    text = ("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2 --speculative-config '{\"method\": \"ngram\", "
            "\"num_speculative_tokens\": 4}'\n"
            "ValueError: cudagraph capture sizes must cover num_speculative_tokens + 1 = 5 tokens per request, please "
            "adjust cudagraph_capture_sizes or num_speculative_tokens\n")
    assert read_paste(tmp_path, text) == (["MTP_FAILED"], Engine.vllm)


def test_the_same_words_after_the_model_loaded_and_served_are_a_crash(tmp_path: Path) -> None:
    # The phases before it decide: the model loaded, graphs captured, requests served (vllm/v1/metrics/loggers.py).
    served = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\": \"eagle\", \"model\": "
              "\"yuhuili/EAGLE-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}'\n"
              "INFO 01-03 10:00:05 [gpu_model_runner.py:1800] Model loading took 15.0 GiB and 9.1 seconds\n"
              "INFO 01-03 10:00:40 [gpu_model_runner.py:2300] Graph capturing finished in 20 secs\n"
              "INFO 01-03 10:01:10 [loggers.py:120] Engine 000: Avg prompt throughput: 120.0 tokens/s, Avg generation "
              "throughput: 80.0 tokens/s, Running: 4 reqs\n"
              "Traceback (most recent call last):\n"
              '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/spec_decode/eagle.py", line 240, in propose\n'
              "RuntimeError: draft token buffer overflow, please reduce max_num_seqs\n")
    assert read_paste(tmp_path, served)[0] == ["MTP_ENGINE_CRASH"]


def test_a_web_apps_validation_error_gives_no_cause(tmp_path: Path) -> None:
    # A FastAPI app's pydantic error through its own config module: no engine, no drafter.
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/app/config.py", line 40, in load\n'
            "    return Settings(**raw)\n"
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings\n"
            "  Value error, smtp_port must be set, please set SMTP_PORT [type=value_error]\n")
    assert read_paste(tmp_path, text)[0] == []


# -- a drafter architecture the engine does not know ----------------------------------------------------------------

def test_drafter_architectures_by_their_parts() -> None:
    for name in ("gemma4_assistant", "Gemma4AssistantForCausalLM", "Glm4MoeMTP", "DeepseekV3ForCausalLMNextN",
                 "EagleLlamaForCausalLM", "LlamaForCausalLMEagle3", "qwen3_5_mtp"):
        assert drafter_architecture(name), name
    for name in ("Qwen3NextForCausalLM", "llama4", "beagle_model", "SMTPHandler", "Gemma3ForCausalLM"):
        assert not drafter_architecture(name), name


def test_a_type_lookup_that_does_not_know_a_drafter_is_no_graph_for_it(tmp_path: Path) -> None:
    # transformers models/auto/configuration_auto.py (CONFIG_MAPPING[config_dict["model_type"]] -> KeyError) under
    # vLLM's config loading; the drafter named nowhere else.
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1120, '
            "in from_pretrained\n"
            '    config_class = CONFIG_MAPPING[config_dict["model_type"]]\n'
            '  File "/opt/venv/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 815, '
            "in __getitem__\n"
            "    raise KeyError(key)\n"
            "KeyError: 'glm4_moe_mtp'\n"
            '  File "/opt/venv/lib/python3.12/site-packages/vllm/transformers_utils/config.py", line 480, in get_config\n')
    assert read_paste(tmp_path, text) == (["NO_MTP_GRAPH"], Engine.vllm)
    # vllm/model_executor/models/registry.py _raise_for_unsupported: "Model architectures %s are not supported for now."
    words = ("vllm serve google/gemma-4-31b-it --speculative-config '{\"method\": \"draft_model\", "
             "\"model\": \"google/gemma-4-31b-it-assistant\", \"num_speculative_tokens\": 4}'\n"
             "ValueError: Model architectures ['Gemma4AssistantForCausalLM'] are not supported for now. Supported "
             "architectures: dict_keys(['LlamaForCausalLM', 'Gemma3ForCausalLM'])\n")
    assert read_paste(tmp_path, words)[0] == ["NO_MTP_GRAPH"]


def test_a_keyerror_on_an_assistant_elsewhere_gives_no_cause(tmp_path: Path) -> None:
    # A Django view's KeyError on a template context name: no type lookup, no engine.
    django = ("Traceback (most recent call last):\n"
              '  File "/srv/site/shop/views.py", line 88, in checkout\n'
              "    helper = context['customer_assistant']\n"
              "KeyError: 'customer_assistant'\n")
    assert read_paste(tmp_path, django)[0] == []
    # transformers not knowing a plain model type: no drafter, not NO_MTP_GRAPH.
    plain = ("Traceback (most recent call last):\n"
             '  File "/opt/venv/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1120, '
             "in from_pretrained\n"
             "KeyError: 'qwen3_5_moe'\n")
    assert "NO_MTP_GRAPH" not in read_paste(tmp_path, plain)[0]


# -- a death while serving a run that drafts ----------------------------------------------------------------------

_SGLANG_STEP_DEATH = (
    # python/sglang/srt/managers/scheduler.py run_scheduler_process ("Scheduler hit an exception"), event_loop_normal ->
    # run_batch -> tp_worker.py forward_batch_generation.
    "[2026-01-05 09:12:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2980, in run_scheduler_process\n'
    "    scheduler.event_loop_normal()\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1002, in event_loop_normal\n'
    "    result = self.run_batch(batch)\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1950, in run_batch\n'
    "    batch_result = self.model_worker.forward_batch_generation(model_worker_batch)\n")


def test_an_engine_dying_in_its_step_under_a_drafters_command_is_the_speculative_paths(tmp_path: Path) -> None:
    command = ("python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm "
               "EAGLE3 --speculative-draft-model-path jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B --port 30000\n")
    assert read_paste(tmp_path, command + _SGLANG_STEP_DEATH) == (["MTP_ENGINE_CRASH"], Engine.sglang)
    # vLLM V0's drafter flag (--speculative-model "[ngram]") under V1's engine core dying in its step.
    vllm = ('vllm serve Qwen/Qwen2.5-7B-Instruct --speculative-model "[ngram]" --num-speculative-tokens 4 '
            "--ngram-prompt-lookup-max 3\n"
            "ERROR 02-01 08:00:00 [core.py:340] EngineCore hit an exception: Traceback (most recent call last):\n"
            'ERROR 02-01 08:00:00 [core.py:340]   File "/opt/vllm/vllm/v1/engine/core.py", line 333, in run_engine_core\n'
            'ERROR 02-01 08:00:00 [core.py:340]   File "/opt/vllm/vllm/v1/engine/core.py", line 367, in run_busy_loop\n'
            'ERROR 02-01 08:00:00 [core.py:340]   File "/opt/vllm/vllm/v1/engine/core.py", line 195, in step\n')
    assert read_paste(tmp_path, vllm)[0] == ["MTP_ENGINE_CRASH"]


def test_the_same_death_without_a_drafter_is_no_speculative_cause(tmp_path: Path) -> None:
    command = "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --port 30000\n"
    assert read_paste(tmp_path, command + _SGLANG_STEP_DEATH)[0] == []
    # A Ray job's worker dying in its own step function: no engine, no drafter.
    ray = ("ray job submit -- python train.py --speculative-model none\n"
           "Traceback (most recent call last):\n"
           '  File "/home/ray/jobs/train/loop.py", line 88, in step\n'
           "RuntimeError: worker died\n")
    assert read_paste(tmp_path, ray)[0] == []


def test_the_report_cites_the_line_that_named_the_engine(tmp_path: Path) -> None:
    paste = tmp_path / "paste.log"
    paste.write_text("the GGUF loads fine elsewhere\n"
                     "$ python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --port 30000\n"
                     "RuntimeError: CUDA error: out of memory\n", encoding="utf-8")
    log = diagnose(log_files=[paste]).logs[0]
    assert log.runtime is Engine.sglang
    assert log.engine_line is not None and log.engine_line.startswith("line 2: $ python3 -m sglang.launch_server")
    # Nothing names an engine: no line is cited.
    paste.write_text("RuntimeError: CUDA error: out of memory\n", encoding="utf-8")
    log = diagnose(log_files=[paste]).logs[0]
    assert (log.runtime, log.engine_line) == (Engine.unknown, None)


# -- an error the run survived ------------------------------------------------------------------------------------

def test_an_error_line_the_server_went_past_to_set_up_its_drafter_is_no_refusal(tmp_path: Path) -> None:
    # llama-server's memory fit (tools/server/server-context.cpp load_model) probes the draft context before the drafter
    # exists; common/speculative.cpp then prints "adding speculative implementation '%s'": the run went on to draft.
    start = ("0.00.170.000 I srv    load_model: loading model 'Llama-3.1-8B-Q4_K_M.gguf'\n"
             "0.00.520.000 W srv    load_model: [spec] failed to measure draft model memory: failed to create "
             "llama_context from model\n")
    went_on = ("0.08.100.000 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 8192\n"
               "0.08.100.020 I common_speculative_impl_draft_eagle3: adding speculative implementation 'draft-eagle3'\n")
    assert read_paste(tmp_path, start + went_on)[0] == []
    # The same error where nothing after it shows the drafter: the error stands.
    assert read_paste(tmp_path, start)[0] != []


# -- a refusal read for what it says about the model ---------------------------------------------------------------

def test_an_engines_refusal_that_says_the_model_has_no_mtp_layers_is_the_missing_head(tmp_path: Path) -> None:
    # vllm/config/speculative.py checks the target's MTP layer count (num_nextn_predict_layers) for the mtp methods.
    head = ("$ vllm serve my-org/qwen3-next-sft --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/config/speculative.py", line 310, in __post_init__\n')
    said = head + "ValueError: The target model has no MTP layers: the 'mtp' method is not supported for it\n"
    assert read_paste(tmp_path, said)[0][:1] == ["MTP_WEIGHTS_MISSING"]
    counted = head + "ValueError: num_nextn_predict_layers = 0 in the config; mtp is not supported for this model\n"
    assert read_paste(tmp_path, counted)[0][:1] == ["MTP_WEIGHTS_MISSING"]
    # A refusal that names MTP without saying anything of the model's layers stays the engine's limit.
    setting = head + "NotImplementedError: Pipeline parallelism is not supported without MTP support in the drafter\n"
    assert read_paste(tmp_path, setting)[0][:1] == ["ENGINE_LIMITATION"]


# -- other programs' tracebacks -------------------------------------------------------------------------------------

def test_other_programs_tracebacks_give_no_cause_and_name_no_engine(tmp_path: Path) -> None:
    # A CMS's view (Django) whose attribute is named after its drafts: its frames are Django's and the CMS's.
    django = ("Traceback (most recent call last):\n"
              '  File "/srv/cms/venv/lib/python3.11/site-packages/django/core/handlers/exception.py", line 55, in inner\n'
              "    response = get_response(request)\n"
              '  File "/srv/cms/editor/views.py", line 120, in publish\n'
              "    self.draft_model.save()\n"
              "AttributeError: 'PublishView' object has no attribute 'draft_model'\n")
    assert read_paste(tmp_path, django) == ([], Engine.unknown)
    # A Ray training job (no vLLM) whose script trains speculative heads, dying on PyTorch's CUDA error.
    ray = ("2026-03-01 10:00:00,123 INFO worker.py:1800 -- Started a local Ray instance.\n"
           "(TrainWorker pid=3311) Traceback (most recent call last):\n"
           '(TrainWorker pid=3311)   File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/train/_internal/utils.py", '
           "line 57, in check_for_failure\n"
           '(TrainWorker pid=3311)   File "/home/ray/jobs/train_speculative_heads.py", line 88, in train_loop\n'
           "(TrainWorker pid=3311) RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert read_paste(tmp_path, ray) == ([], Engine.unknown)
    # A blog's KeyError on its drafts, a web app's pydantic error on a draft's fields.
    blog = ("Traceback (most recent call last):\n"
            '  File "/srv/blog/app/views/posts.py", line 52, in edit\n'
            "    post = session['drafts'][post_id]\n"
            "KeyError: 'drafts'\n")
    assert read_paste(tmp_path, blog)[0] == []
    web = ("pydantic_core._pydantic_core.ValidationError: 2 validation errors for DraftCreate\n"
           "title\n  Field required [type=missing, input_value={'body': 'x'}, input_type=dict]\n")
    assert read_paste(tmp_path, web)[0] == []
    # The same AttributeError under vLLM's worker frames is the engine's drafter breaking.
    vllm = ("Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2410, in execute_model\n'
            "AttributeError: 'GPUModelRunner' object has no attribute 'draft_model'\n")
    assert read_paste(tmp_path, vllm) == (["MTP_ENGINE_CRASH"], Engine.vllm)


def test_an_engine_that_says_its_start_failed_before_loading_a_model_failed_to_start(tmp_path: Path) -> None:
    # vllm/v1/engine/core.py run_engine_core: "EngineCore failed to start." with the exception under it.
    failed = ("ERROR 05-01 12:00:05 [core.py:400] EngineCore failed to start.\n"
              "ValueError: the draft model's max_model_len (4096) is smaller than the target's (32768); raise "
              "speculative_max_model_len\n")
    assert read_paste(tmp_path, "INFO 05-01 12:00:00 [__init__.py:239] Automatically detected platform cuda.\n" + failed) == \
        (["MTP_FAILED"], Engine.vllm)
    # The same after the drafter was loading: a crash at load, as the corpus's loading-drafter threads have it.
    loading = ("INFO 05-01 12:00:01 [gpu_model_runner.py:1900] Loading drafter model...\n"
               "INFO 05-01 12:00:03 [default_loader.py:270] Loading weights took 2.10 seconds\n")
    assert read_paste(tmp_path, loading + failed)[0] == ["MTP_ENGINE_CRASH"]


def test_a_failed_mtp_context_on_a_gguf_whose_dump_shows_no_nextn_layers_is_the_missing_head(tmp_path: Path) -> None:
    # src/llama-model-loader.cpp's metadata dump, then the memory fit's draft context failing (an app's stderr).
    dump = ("llama_model_loader: - kv  20:                 qwen35.nextn_predict_layers u32              = 0\n"
            "srv    load_model: [spec] failed to measure MTP context memory: failed to create llama_context from model\n"
            "srv  llama_server: exiting due to model loading error\n")
    assert read_paste(tmp_path, dump)[0][:1] == ["MTP_WEIGHTS_MISSING"]
    # Without the dump both readings stay (no head, or no memory): a failed MTP start.
    assert read_paste(tmp_path, dump.split("\n", 1)[1])[0][:1] == ["MTP_FAILED"]


def test_an_exception_in_the_serving_step_of_a_run_that_drafts_is_the_speculative_paths(tmp_path: Path) -> None:
    frames = ("Traceback (most recent call last):\n"
              '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2410, in '
              "execute_model\n"
              "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    eagle = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\": \"eagle3\", \"model\": "
             "\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}'\n")
    assert read_paste(tmp_path, eagle + frames) == (["MTP_ENGINE_CRASH"], Engine.vllm)
    # The same step failing in a run without a drafter: no speculative cause.
    assert read_paste(tmp_path, "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192\n" + frames)[0] == []
