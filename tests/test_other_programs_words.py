"""Other programs' words about drafts (issue 42, round 10): an error line about a "draft model", "draft tokens" or a
drafter is an engine's or app's about speculative decoding only where an engine or app speaks (its app, the engine its
lines name, a drafter's setting, the engine's drafting code) or the line names the method itself ("speculative
decoding", MTP, NextN); a line another program's own tag claims (syslog's and journald's "prog[pid]: ", Python
logging's "LEVEL:logger:") is that program's, whatever its words. Texts written here from the engines' and apps' real
formats (cited per test), each beside the same words from software that does not draft."""

from __future__ import annotations

from pathlib import Path

import pytest
from pastes import read_paste

from mtpinspect.logread.voices import anothers_line, pipe_row, program_tag
from mtpinspect.vocabulary import Engine


@pytest.mark.parametrize(("text", "engine"), [
    # LM Studio's window (lmstudio-bug-tracker#1519: "Failed to regenerate message" / "Failed to load draft model. ..."),
    # the app named above it: the app's own error about its drafter.
    ("LM Studio 0.4.2 (Build 1), macOS\nFailed to regenerate message\n\n"
     "Failed to load draft model. The draft model is not compatible with the loaded model.\n", Engine.llama_cpp),
    # llama.cpp's speculative example (examples/speculative/speculative.cpp: "%s: error: draft model vocab must match
    # target model to use speculation but ...") as journald keeps it under the binary's own tag.
    ("Dec 05 09:12:01 gpu llama-speculative[4411]: main: error: draft model vocab must match target model to use "
     "speculation but target vocab size 151936 does not match draft vocab size 32000\n", Engine.llama_cpp),
    # vLLM's configuration check under its process prefix (vllm/config/speculative.py: "num_speculative_tokens must be
    # provided with speculative model unless the draft model config contains an n_predict parameter.").
    ("(APIServer pid=4242) ERROR 12-05 09:12:01 [api_server.py:1001] ValueError: num_speculative_tokens must be "
     "provided with speculative model unless the draft model config contains an n_predict parameter.\n", Engine.vllm),
])
def test_an_engines_or_apps_error_about_its_drafter_still_reads(tmp_path: Path, text: str, engine: Engine) -> None:
    assert read_paste(tmp_path, text) == (["ENGINE_LIMITATION"], engine)


def test_the_methods_own_name_needs_no_other_voice(tmp_path: Path) -> None:
    # The error names speculative decoding itself (lmstudio-bug-tracker#1519's SpeculativeDecodingNotSupportedError
    # text, quoted alone): no other program says that of its own things.
    text = "Speculative decoding is not supported for batched MLX models.\n"
    assert read_paste(tmp_path, text)[0] == ["ENGINE_LIMITATION"]


@pytest.mark.parametrize("text", [
    # A mail client's account sync (its "draft model": the drafts folder's schema), under its syslog tag, bare and in
    # journald's full form, and as Python logging's default format names its logger.
    "mailsync[2211]: ERROR failed to load draft model for account 2: no such table: drafts\n",
    "Dec 05 09:12:01 box mailsync[2211]: ERROR failed to load draft model for account 2: no such table: drafts\n"
    "Dec 05 09:12:31 box mailsync[2211]: INFO retrying account 2 in 30 s\n",
    "ERROR:mailsync.accounts:failed to load draft model for account 2: no such table: drafts\n",
    # The same words with no tag and nothing of an engine's around them; a CMS's editor session's "draft tokens".
    "ERROR failed to load draft model for account 2: no such table: drafts\nINFO retrying account 2 in 30 s\n",
    "2026-12-05 09:12:01 [cms] error: cannot restore draft tokens for session 4: redis timeout\n",
    # A tagged line naming the method's words is still that program's (a reading list app's article title).
    "Dec 05 09:12:01 box readlater[812]: ERROR failed to fetch 'Speculative decoding explained': HTTP 404\n",
])
def test_other_programs_lines_about_drafts_name_no_cause(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == []


def test_a_lines_tag_says_whose_it_is() -> None:
    assert program_tag("Dec 05 09:12:01 box mailsync[2211]: ERROR x") == "mailsync"
    assert program_tag("ERROR:mailsync.accounts:failed") == "mailsync.accounts"
    assert anothers_line("mailsync[2211]: ERROR failed to load draft model")
    # an engine's own tag, an interpreter's (what runs in it is unknown), and no tag at all
    assert not anothers_line("Jun 11 10:21:39 ws llama-server[239570]: srv    load_model: failed to load draft model")
    assert not anothers_line("Dec 05 09:12:01 box python3[812]: ERROR failed to load draft model")
    assert not anothers_line("Dec 05 09:12:01 gpu start-server.sh[812]: ERROR failed to load draft model")
    assert not anothers_line("srv    load_model: failed to load draft model, 'draft.gguf'")


@pytest.mark.parametrize("text", [
    # pip's, apt's, npm's and cargo's errors name the package the user asked for: its name is the user's search
    # (cases/logs-negative/pip-download-no-index-speculative-decoding.log is pip's real output of the first).
    "Looking in links: /opt/wheels\nERROR: Could not find a version that satisfies the requirement speculative-decoding "
    "(from versions: none)\nERROR: No matching distribution found for speculative-decoding\n",
    "Reading package lists... Done\nE: Unable to locate package python3-speculative-decoding\n",
    "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/mtp-draft-model - Not found\n"
    "npm ERR! 404  'mtp-draft-model@*' is not in this registry.\n",
])
def test_a_package_managers_error_about_a_package_named_so_names_no_cause(tmp_path: Path, text: str) -> None:
    assert read_paste(tmp_path, text)[0] == []


def test_a_table_rows_note_is_a_posters_not_an_apps_error(tmp_path: Path) -> None:
    # A PR's results table (the shape of sglang PR #10392's "before the fix" gsm8k table): one row's cells say the run
    # could not start. The row is the poster's summary under a label that names MTP, not an engine's message: it was
    # ENGINE_LIMITATION at high confidence, told as llama.cpp's (the twelfth set's one wrong reading at high).
    text = ("| Setting      | Accuracy | Latency (s) | Output throughput (token/s) |\n"
            "|--------------|----------|-------------|-----------------------------|\n"
            "| TP4 MTP      | 0.955    | 18.446      | 1764.499                    |\n"
            "| TP4 DP2 MTP  | X        | X           | X (unable to launch server) |\n"
            "| TP4          | 0.955    | 20.868      | 1553.501                    |\n")
    assert read_paste(tmp_path, text)[0] == []
    # The same words as an app's own line still read.
    assert read_paste(tmp_path, "Error: unable to launch server: MTP draft model failed to load\n")[0] == \
        ["ENGINE_LIMITATION"]
    assert pipe_row("| TP4 DP2 MTP | X (unable to launch server) |")
    assert not pipe_row("srv    load_model: failed | to load MTP")
