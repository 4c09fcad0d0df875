"""Engines' argument checks refusing a speculative setting, and asserts in a batch only drafting runs (issue 42, the
eleventh set's build half, as classes): texts written here from the engines' real formats, not corpus pastes, each with
a negative of the same shape from software that does not draft, or from the engine's non-drafting path."""

from __future__ import annotations

from pathlib import Path

from pastes import read_paste

from mtpinspect.logread.catalogue import scan
from mtpinspect.vocabulary import Engine

# python/sglang/srt/server_args.py: ServerArgs.__post_init__ runs the argument checks (_handle_* / check_server_args)
# before any model loads; a ValueError there names the settings that cannot run together.
_SGLANG_CHECK = (
    "Traceback (most recent call last):\n"
    '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
    '  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 24, in <module>\n'
    "    server_args = prepare_server_args(sys.argv[1:])\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/server_args.py", line 5120, in prepare_server_args\n'
    "    return ServerArgs.from_cli_args(raw_args)\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/server_args.py", line 4987, in from_cli_args\n'
    "    return cls(**{attr: getattr(args, attr) for attr in attrs})\n"
    '  File "<string>", line 352, in __init__\n'
    '  File "/sgl-workspace/sglang/python/sglang/srt/server_args.py", line 688, in __post_init__\n'
    "    self._handle_layernorm_sp()\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/server_args.py", line 3021, in _handle_layernorm_sp\n'
    "    raise ValueError(\n"
    "ValueError: {text}\n"
)


def test_an_argument_check_refusing_a_setting_beside_speculative_decoding_is_a_refusal(tmp_path: Path) -> None:
    # One line, as quoted in a comment: SGLang's check naming its own flags (--speculative-algorithm NEXTN is MTP).
    line = "ValueError: --enable-dp-lm-head is incompatible with speculative decoding (--speculative-algorithm NEXTN)\n"
    assert read_paste(tmp_path, line) == (["ENGINE_LIMITATION"], Engine.sglang)
    # The same check under the frames of the server's argument checks (it was MTP_FAILED: a start failure).
    text = "--enable-layernorm-sp is not compatible with speculative decoding (EAGLE/EAGLE3): the captured aux hidden " \
        "states would be sequence-sharded."
    assert read_paste(tmp_path, _SGLANG_CHECK.replace("{text}", text)) == (["ENGINE_LIMITATION"], Engine.sglang)
    # A hybrid model's cache mode beside speculative decoding, worded as SGLang's mamba check words it.
    mamba = ("ValueError: Speculative decoding for FalconH1ForCausalLM is not compatible with radix cache when using "
             "--mamba-scheduler-strategy no_buffer. Use --mamba-scheduler-strategy extra_buffer instead.\n")
    assert read_paste(tmp_path, mamba)[0] == ["ENGINE_LIMITATION"]
    # vllm-ascend's graph mode check (vllm_ascend/xlite: "Xlite graph mode is not compatible with speculative decoding.
    # Please disable speculative decoding."): a RuntimeError, still the check's refusal, not a crash or a failed start.
    ascend = ("RuntimeError: Xlite graph mode is not compatible with speculative decoding. Please disable speculative "
              "decoding.\n")
    assert read_paste(tmp_path, ascend)[0] == ["ENGINE_LIMITATION"]


def test_conflict_words_of_other_programs_or_of_a_tensor_are_no_refusal(tmp_path: Path) -> None:
    # A blog CLI's flags, Spark's speculative execution: the same check's shape, nothing of a drafter's.
    assert read_paste(tmp_path, "ValueError: --draft-mode is incompatible with --publish-now\n")[0] == []
    assert read_paste(tmp_path, _SGLANG_CHECK.replace("sglang", "blogtool").replace(
        "{text}", "--draft-mode is not compatible with --publish-now"))[0] == []
    assert read_paste(tmp_path, "ValueError: Speculative execution is not compatible with dynamic allocation\n")[0] == []
    # A tensor's shape "not compatible" while the drafter runs is the drafter breaking, not a check refusing a setting.
    crash = ("Traceback (most recent call last):\n"
             '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 512, in draft_forward\n'
             "    hidden = hidden_states.view(bs, -1)\n"
             "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans "
             "across two contiguous subspaces). Use .reshape(...) instead.\n")
    assert read_paste(tmp_path, crash)[0] == ["MTP_ENGINE_CRASH"]


def test_an_assert_in_a_batch_only_drafting_runs_is_a_crash_on_its_path(tmp_path: Path) -> None:
    # SGLang's attention backends branch on ForwardMode (forward_batch_info.py: TARGET_VERIFY, DRAFT_EXTEND,
    # DRAFT_EXTEND_V2 "used in speculative decoding"); an assert there fails while the drafter's batch runs. A poster's
    # abridged frame after the exception, as issues quote them.
    abridged = ("AssertionError: seq_lens_cpu is required here\n"
                "  flashmla_backend.py, in init_forward_metadata (TARGET_VERIFY path)\n")
    assert read_paste(tmp_path, abridged) == (["MTP_ENGINE_CRASH"], Engine.sglang)
    framed = ("Traceback (most recent call last):\n"
              '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/triton_backend.py", line 340, in '
              "init_forward_metadata\n"
              "    elif forward_batch.forward_mode.is_draft_extend_v2():\n"
              "AssertionError\n")
    assert read_paste(tmp_path, framed)[0] == ["MTP_ENGINE_CRASH"]
    # An assert at start (no batch, no forward mode) is still the check's refusal.
    assert read_paste(tmp_path, "AssertionError: speculative_eagle_topk must be 1 for this attention backend under "
                                "--speculative-algorithm EAGLE\n")[0] == ["ENGINE_LIMITATION"]


def test_a_batch_every_run_runs_or_another_programs_mode_ties_nothing(tmp_path: Path) -> None:
    # SGLang's own non-drafting modes (EXTEND, DECODE): a crash there is no drafter's.
    assert read_paste(tmp_path, "AssertionError: seq_lens_cpu is required here\n"
                                "  flashmla_backend.py, in init_forward_metadata (DECODE path)\n")[0] == []
    # Another program's constants that only look alike.
    assert read_paste(tmp_path, "AssertionError: token must not be None\n"
                                "  auth.py, in verify (TOKEN_VERIFY path)\n")[0] == []
    assert not [h for h in scan("state = PREDRAFT_EXTENDED\nmode=XTARGET_VERIFY\n").hits
                if h.message.name == "SGLang drafting forward mode"]


# vLLM's worker lines (vllm/v1/executor/multiproc_executor.py's process tag, vllm/logger.py's format) as a copy joins them
# when it loses the line ends (text recognised from a screenshot, a chat window): one line, each piece keeping its prefix.
_TAG = "(Worker_TP1 pid=4182) ERROR 09-02 11:40:18 [multiproc_executor.py:671] "


def _merged(*lines: str) -> str:
    return " ".join(_TAG + line for line in lines) + "\n"


def test_an_engines_log_lines_merged_into_one_are_read_as_its_lines(tmp_path: Path) -> None:
    text = _merged('File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2210, in '
                   "execute_model",
                   "self._draft_token_ids = self.propose_draft_token_ids(",
                   'File "/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/eagle.py", line 318, in propose',
                   "hidden_states = self.model(")
    # Read as one line it was an error line naming draft tokens: an app's refusal (ENGINE_LIMITATION).
    assert read_paste(tmp_path, text) == (["MTP_ENGINE_CRASH"], Engine.vllm)
    hits = scan(text).hits
    assert {h.number for h in hits} == {1}  # every piece keeps the line's number
    assert any(h.message.name == "Python traceback frame" and h.line.endswith("in propose") for h in hits)


def test_merged_lines_without_a_drafter_or_of_another_program_tie_nothing(tmp_path: Path) -> None:
    # The target's own frames only (no drafter's): a crash nothing ties to drafting.
    target = _merged('File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2210, in '
                     "execute_model",
                     "hidden_states = self.model(",
                     'File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py", line 380, in '
                     "forward")
    assert read_paste(tmp_path, target)[0] == []
    # gunicorn's "[2026-09-02 11:40:18 +0000] [12] [ERROR]" lines (gunicorn/glogging.py) of a blog app, merged the same
    # way, its traceback after them: its drafts are posts.
    blog = ("[2026-09-02 11:40:17 +0000] [12] [INFO] Booting worker with pid: 12 "
            "[2026-09-02 11:40:18 +0000] [12] [ERROR] Error handling request /posts/7/save_draft "
            'Traceback (most recent call last): File "/srv/blog/posts/views.py", line 88, in save_draft '
            "draft = DraftPost.objects.get(pk=pk) posts.models.DraftPost.DoesNotExist: DraftPost matching query does "
            "not exist.\n")
    assert read_paste(tmp_path, blog)[0] == []
    # A line that quotes a prefix after its own words is one line, not pieces.
    quoted = "error: see (Worker_TP1 pid=4182) ERROR 09-02 11:40:18 [x.py:1] above; draft model failed to load\n"
    assert {h.line for h in scan(quoted).hits} <= {quoted.strip()}


# SGLang's graph runner wraps a capture's error (cuda_graph_runner.py: raise Exception(f"Capture cuda graph failed: {e}
# \n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")); aiter's asm kernels refuse shapes above their bound in their own words
# (asm_mla.cu: TORCH_CHECK(false, __func__, ":only support ... for qo_len <= N")). Under a speculative setting the decode
# graph carries each request's draft tokens.
_CAPTURE = ("[2026-02-03 04:05:06 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.10 GB\n"
            "[2026-02-03 04:05:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            "Exception: Capture cuda graph failed: paged_mla_decode_asm_fwd:only support bf16 decoding for qo_len <= 2\n"
            "Possible solutions:\n")


def test_a_kernels_bound_failing_a_graph_capture_under_a_draft_tokens_setting_is_a_refusal(tmp_path: Path) -> None:
    command = ("$ python3 -m sglang.launch_server --model-path /models/DeepSeek-V3 --tp 8 --speculative-algorithm NEXTN "
               "--speculative-num-steps 3 --speculative-num-draft-tokens 6 --attention-backend aiter\n")
    # It was the scheduler's death with the drafter set up (MTP_ENGINE_CRASH): the kernel's words say what it was.
    assert read_paste(tmp_path, command + _CAPTURE) == (["ENGINE_LIMITATION"], Engine.sglang)
    # The kernel's words on a line of their own under the wrapper's, as posters quote them.
    split = command + "Exception: Capture cuda graph failed:\npaged_mla_decode_asm_fwd: only support bf16 decoding for " \
        "qo_len <= 2\n"
    assert read_paste(tmp_path, split) == (["ENGINE_LIMITATION"], Engine.sglang)


def test_a_kernels_bound_without_a_speculative_setting_or_of_another_program_is_no_cause(tmp_path: Path) -> None:
    # The same capture failure with nothing of a drafter's: SGLang's, no cause.
    assert read_paste(tmp_path, _CAPTURE) == ([], Engine.sglang)
    # Another program's function refusing a shape, beside a command of its own.
    etl = "$ python etl.py --workers 8 --draft\nValueError: csv_reader_fast: only supports up to 64 columns\n"
    assert read_paste(tmp_path, etl)[0] == []


def test_an_argument_checks_pair_or_requirement_naming_a_speculative_setting_is_a_refusal(tmp_path: Path) -> None:
    # SGLang's server_args.py words for settings that cannot go together ("Cannot set --encoder-only and --language-only
    # together", "--enable-prefix-mm-cache requires --encoder-only to be enabled"), about a speculative setting.
    together = ("ValueError: Cannot set --speculative-draft-model-path and --speculative-algorithm NGRAM together\n")
    assert read_paste(tmp_path, together) == (["ENGINE_LIMITATION"], Engine.sglang)
    needs = "ValueError: --speculative-eagle-topk > 1 requires --attention-backend flashinfer or fa3\n"
    assert read_paste(tmp_path, needs) == (["ENGINE_LIMITATION"], Engine.sglang)
    # A mail tool's flags in the same words: its drafts folder is mail.
    assert read_paste(tmp_path, "ValueError: --drafts-folder requires --imap-host to be set\n")[0] == []
    assert read_paste(tmp_path, "ValueError: Cannot set --draft and --publish together\n")[0] == []
