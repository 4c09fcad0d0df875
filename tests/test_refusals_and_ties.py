"""Engine refusals, wrong readings and crash ties of issue 42's fifth set, as classes (logread/catalogue.py,
logread/drafters.py, diagnosis/failures.py): texts written here in the engines' real formats, not corpus pastes, each
with a negative of the same shape from software that does not draft."""

from __future__ import annotations

from pathlib import Path

from pastes import read_paste

from mtpinspect.logread.catalogue import scan
from mtpinspect.logread.drafters import drafting_place
from mtpinspect.vocabulary import Engine


def test_vllms_speculative_config_check_in_a_traceback_or_an_arrow_summary_is_a_refusal(tmp_path: Path) -> None:
    # vllm/engine/arg_utils.py create_speculative_config -> vllm/config/speculative.py SpeculativeConfig: the settings
    # checked at start; a refusal there is the engine's limit, whatever the exception's own words.
    traceback = ('Traceback (most recent call last):\n'
                 '  File "/opt/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1391, in create_speculative_config\n'
                 '    return SpeculativeConfig(**self.speculative_config)\n'
                 '  File "/opt/venv/lib/python3.12/site-packages/vllm/config/speculative.py", line 388, in __post_init__\n'
                 '    self._verify_args()\n'
                 'NotImplementedError: Encoder-decoder models are not handled here.\n')
    assert read_paste(tmp_path, traceback) == (["ENGINE_LIMITATION"], Engine.vllm)
    arrows = ("create_engine_config → create_speculative_config (arg_utils.py:1701)\n"
              "  → SpeculativeConfig._verify_args (config/speculative.py:977)\n"
              "    NotImplementedError: Chunked prefill is not handled for this model.\n")
    assert read_paste(tmp_path, arrows)[0] == ["ENGINE_LIMITATION"]
    # The same arrows through a report app's config: nothing of a drafter's.
    other = ("build_report → load_settings (app.py:88)\n"
             "  → ReportConfig._verify_args (config/report.py:120)\n"
             "    NotImplementedError: Export to this format is not supported for this model.\n")
    assert read_paste(tmp_path, other)[0] == []


def test_not_yet_supported_quoted_alone_is_an_engine_refusal(tmp_path: Path) -> None:
    assert read_paste(tmp_path, '"Draft model speculation is not yet supported for multimodal inputs"\n')[0] == \
        ["ENGINE_LIMITATION"]
    # A CMS's words: its draft posts are no drafter; Spark's speculative execution is no speculative decoding.
    assert read_paste(tmp_path, '"Error: draft posts are not yet supported by the API"\n')[0] == []
    assert read_paste(tmp_path, '"Speculative execution is not yet supported on this cluster"\n')[0] == []


def test_vllms_ray_refusal_backticked_is_vllms(tmp_path: Path) -> None:
    # vllm/executor/ray_gpu_executor.py (0.4): assert self.speculative_config is None, "Speculative decoding not yet
    # supported for RayGPU backend."
    quoted = "`AssertionError: Speculative decoding not yet supported for RayGPU backend.`\n"
    assert read_paste(tmp_path, quoted) == (["ENGINE_LIMITATION"], Engine.vllm)
    assert read_paste(tmp_path, "`AssertionError: Object spilling is not supported with Ray.`\n")[0] == []


def test_argparses_invalid_value_of_the_speculative_config_is_the_users_quoting(tmp_path: Path) -> None:
    # argparse: "argument %s: invalid %s value: %r" (the type function, json.loads, raised): the value does not parse.
    line = ("api_server.py: error: argument --speculative-config: invalid loads value: "
            "\"{'method': 'ngram', 'prompt_lookup_max': 4, 'enabled': True}\"\n")
    assert read_paste(tmp_path, line) == ([], Engine.vllm)
    # An engine's own refusal of the speculative method stays one.
    refusal = "ERROR: speculative method 'medusa' is not supported for this model\n"
    assert read_paste(tmp_path, refusal)[0] == ["ENGINE_LIMITATION"]


def test_a_missing_kernel_image_while_sglang_captures_the_drafters_graph_is_a_crash_on_its_path(tmp_path: Path) -> None:
    # python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py ("Capture draft cuda graph begin"), then a kernel
    # with no image for the GPU (cudaErrorNoKernelImageForDevice, as a launch check prints it).
    text = ("[2026-03-01 10:00:01 TP0] Capture draft cuda graph begin. This can take up to several minutes. avail mem=40.10 GB\n"
            "CUDA error (/sgl-kernel/csrc/attention/merge_attn_states.cu:212): no kernel image is available for execution "
            "on the device\n")
    assert read_paste(tmp_path, text) == (["MTP_ENGINE_CRASH"], Engine.sglang)
    # The target's own graph capture (no drafter's) failing the same way: no speculative path.
    target = text.replace("Capture draft cuda graph", "Capture cuda graph")
    assert read_paste(tmp_path, target)[0] == []


def test_a_failed_check_on_the_accepted_token_count_is_a_crash_on_the_speculative_path(tmp_path: Path) -> None:
    line = "E0601 12:00:00 kernel.cpp:120] num_accepted_tokens[2]=6 out of range for query segment of length 3\n"
    assert read_paste(tmp_path, line) == (["MTP_ENGINE_CRASH"], Engine.vllm)
    # The count as a figure (no failed check), and another program's accepted count failing: no cause.
    assert read_paste(tmp_path, "stats: num_accepted_tokens=412 num_draft_tokens=600\n")[0] == []
    assert read_paste(tmp_path, "[ERROR] numAcceptedConnections[0]=9 exceeds pool length=8\n")[0] == []


def test_vllms_spec_decode_folder_is_vllms_package_not_any_folder_of_that_name() -> None:
    assert drafting_place(['  File "/usr/lib/python3/site-packages/vllm/spec_decode/spec_decode_worker.py", line 40, in '
                           'execute_model']) is not None
    assert drafting_place(["vllm:spec_decode_num_drafts_total{model_name=\"m\"} 12.0"]) is not None
    assert drafting_place(['  File "/srv/specsheet/spec_decode/parser.py", line 40, in parse']) is None


def test_a_traceback_through_another_apps_spec_decode_folder_ties_nothing(tmp_path: Path) -> None:
    text = ('Traceback (most recent call last):\n'
            '  File "/srv/specsheet/spec_decode/parser.py", line 40, in parse\n'
            '    raise RuntimeError("bad row")\n'
            'RuntimeError: bad spec sheet row 12\n')
    assert read_paste(tmp_path, text)[0] == []


def test_a_draft_file_that_is_not_there_is_the_users_path(tmp_path: Path) -> None:
    # ggml/src/gguf.cpp gguf_init_from_file ("failed to open GGUF file '%s' (%s)"), then the server's draft load
    # (tools/server: "failed to load draft model, '%s'"); glued to a log view's stream name as some apps show it.
    text = ("stderrgguf_init_from_file: failed to open GGUF file '/models/draft-1b-q4.gguf' (No such file or directory)\n"
            "llama_model_load_from_file_impl: failed to load model\n"
            "srv    load_model: failed to load draft model, '/models/draft-1b-q4.gguf'\n")
    assert read_paste(tmp_path, text)[0] == []
    # A draft file that is there and fails to load is still the draft configuration failing.
    loaded = ("llama_model_load: error loading model: error loading model hyperparameters: key not found in model\n"
              "llama_model_load_from_file_impl: failed to load model\n"
              "srv    load_model: failed to load draft model, '/models/draft-1b-q4.gguf'\n")
    assert read_paste(tmp_path, loaded)[0] == ["MTP_FAILED"]


def test_vllms_speculative_config_is_read_by_its_module_and_class_not_a_settings_word() -> None:
    names = {h.message.name for h in scan("  File \"/x/vllm/config/speculative.py\", line 9, in _verify_args\n").hits}
    assert "vLLM speculative config" in names
    other = scan('  File "/srv/app/views.py", line 9, in save\n    config.speculative = True\n')
    assert "vLLM speculative config" not in {h.message.name for h in other.hits}


_MTP_SERVE = "vllm serve org/model-mtp --speculative-config '{\"method\":\"mtp\",\"model\":\"org/model-mtp\"}'\n"


def test_pythons_own_type_error_words_are_a_bug_on_the_speculative_path_not_a_refusal(tmp_path: Path) -> None:
    # CPython's templates (Objects/object.c do_richcompare: "'%s' not supported between instances of ...",
    # Objects/abstract.c binop_type_error: "unsupported operand type(s) for ...", "object does not support item
    # assignment") name operand types: a None where a number was due (vllm#55323's config default applied too late),
    # never the engine refusing the setting.
    for error in ("TypeError: '>' not supported between instances of 'NoneType' and 'int'",
                  "TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'",
                  "TypeError: 'tuple' object does not support item assignment",
                  "ValueError: unsupported format character 'd' (0x64) at index 12"):
        assert read_paste(tmp_path, _MTP_SERVE + error + "\n") == (["MTP_ENGINE_CRASH"], Engine.vllm), error
    # The engine's own refusal under the same command stays one.
    refusal = _MTP_SERVE + "NotImplementedError: MTP speculative decoding is not supported for this model type.\n"
    assert read_paste(tmp_path, refusal)[0] == ["ENGINE_LIMITATION"]
    # The same TypeError under a command that drafts nothing (a web app's server) ties nothing.
    other = "gunicorn shop.wsgi:application --workers 4\nTypeError: '>' not supported between instances of 'NoneType' and 'int'\n"
    assert read_paste(tmp_path, other)[0] == []


def test_llama_cpps_draft_flags_are_read_with_the_values_it_parses(tmp_path: Path) -> None:
    # common/arg.cpp: --draft / --draft-max / --draft-min / --draft-n take a count, -md / --model-draft a file. A web app's
    # own boolean --draft (a Django command's) is no drafter's flag: its traceback names no cause.
    django = ("$ python manage.py publish_posts --draft --limit 5\n"
              "Traceback (most recent call last):\n"
              '  File "/srv/blog/posts/management/commands/publish_posts.py", line 41, in handle\n'
              "    if post.words[5]:\n"
              "IndexError: list index out of range\n")
    assert read_paste(tmp_path, django)[0] == []
    for flags in ("--draft 16", "--draft-max=8", "-md /models/Qwen3-0.6B-Q8_0.gguf", "--model-draft draft.gguf"):
        hits = [h.message.name for h in scan(f"./llama-server -m target.gguf {flags} -c 4096\n").hits]
        assert "llama.cpp draft flags" in hits, flags
    assert "llama.cpp draft flags" not in [h.message.name for h in scan("python manage.py publish --draft --limit 5\n").hits]


def test_a_flag_named_after_mtp_counts_on_an_engines_command_not_another_programs(tmp_path: Path) -> None:
    # Forks name their switches after MTP (--mtp-head, --draft-mtp, any --X-mtp-Y): on an engine's command line, or a
    # log's echo of its arguments, they turn MTP on; a report script's own --mtp-export is that script's.
    names = {h.message.name for h in scan("$ ./build/bin/llama-server -m t.gguf --spec-mtp-layers 1\n").hits}
    assert "MTP-named flag (forks)" in names
    assert "MTP-named flag (forks)" in {h.message.name for h in scan("main: args --use-mtp-draft -ngl 99\n").hits}
    assert "MTP flag (forks)" in {h.message.name for h in scan("$ ./run.sh --mtp-head head.gguf\n").hits}
    report = ("$ python report.py --mtp-export\n"
              "Traceback (most recent call last):\n"
              '  File "/home/u/report.py", line 12, in <module>\n'
              '    if df["accept_rate"].max() > limit:\n'
              "TypeError: '>' not supported between instances of 'float' and 'NoneType'\n")
    assert read_paste(tmp_path, report)[0] == []


_EAGLE3_SERVE = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\":\"eagle3\",\"model\":\"AngelSlim/Qwen3-8B_eagle3\","
                 "\"num_speculative_tokens\":3}'\n")
_CORE = "(EngineCore_DP0 pid=90) ERROR 05-01 10:00:00 [core.py:700] "


def test_an_assert_failing_in_the_serving_step_is_a_crash_an_assert_at_start_a_refusal(tmp_path: Path) -> None:
    # vllm/v1/engine/core.py's step -> gpu_model_runner.py execute_model -> the drafter's propose: an assert there fails
    # mid-run (the drafter breaking); the same bare assert in a worker's start-up check refuses the setting.
    serving = (_EAGLE3_SERVE + _CORE + "EngineCore encountered a fatal error.\n" + _CORE + "Traceback (most recent call last):\n"
               + _CORE + '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2400, in '
               "execute_model\n" + _CORE + '  File "/usr/lib/python3.12/site-packages/vllm/v1/spec_decode/eagle.py", line '
               "300, in propose\n" + _CORE + "    assert draft_token_ids.shape[1] == self.num_speculative_tokens\n"
               + _CORE + "AssertionError\n")
    assert read_paste(tmp_path, serving) == (["MTP_ENGINE_CRASH"], Engine.vllm)
    start = (_EAGLE3_SERVE + _CORE + "Traceback (most recent call last):\n" + _CORE + '  File "/usr/lib/python3.12/'
             'site-packages/vllm/v1/spec_decode/eagle.py", line 120, in __init__\n' + _CORE
             + "    assert self.hidden_size == target_hidden_size\n" + _CORE + "AssertionError\n")
    assert read_paste(tmp_path, start) == (["ENGINE_LIMITATION"], Engine.vllm)
