"""llama-cpp-python's traceback cut before its exception under an app's own line that speculative decoding is on (issue
42, round 12): the binding's frames (site-packages/llama_cpp/) are the engine's code, and the app's "Speculative decoding
enabled" line states the drafter setting, as vLLM's command does for its cut tracebacks: MTP_ENGINE_CRASH at medium. The
format: a ComfyUI node that drives llama-cpp-python (KLL535/ComfyUI_Simple_Qwen3-VL-gguf, its "[DEBUG] <step> : <s>s"
timing lines and "[ERROR] Inference failed:"), llama_cpp/llama.py's create_chat_completion frame."""

from __future__ import annotations

from pathlib import Path

import pytest
from pastes import read_paste

from mtpinspect.vocabulary import Engine

_TRACE = ('Traceback (most recent call last):\n'
          '  File "C:\\apps\\comfy\\custom_nodes\\vl_node\\run.py", line 88, in infer\n'
          '    out = llm.create_chat_completion(messages=msgs)\n'
          '  File "C:\\apps\\comfy\\python\\Lib\\site-packages\\llama_cpp\\llama.py", line 2001, in create_chat_completion\n'
          '    return handler(\n')


def test_the_bindings_cut_traceback_under_speculation_on_is_the_speculative_paths(tmp_path: Path) -> None:
    text = ("[DEBUG] Speculative decoding enabled (type=3) : 0.000s\n[DEBUG] load_model : 4.120s\n"
            "[ERROR] Inference failed:\nllama_decode failed (code -1)\n" + _TRACE)
    assert read_paste(tmp_path, text) == (["MTP_ENGINE_CRASH"], Engine.llama_cpp)


@pytest.mark.parametrize("text", [
    # The same traceback, speculative decoding said to be off or not said at all.
    "[DEBUG] Speculative decoding is not enabled : 0.000s\n[ERROR] Inference failed:\n" + _TRACE,
    "[DEBUG] Speculative decoding enabled: false\n[ERROR] Inference failed:\n" + _TRACE,
    "[DEBUG] load_model : 4.120s\n[ERROR] Inference failed:\n" + _TRACE,
    # An app's own traceback (no engine's frame) under the words: another program's.
    "Speculative decoding enabled\nTraceback (most recent call last):\n"
    '  File "/srv/blog/views.py", line 12, in publish\n    draft.save()\n',
])
def test_without_the_setting_or_the_bindings_frames_it_names_no_cause(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == []
