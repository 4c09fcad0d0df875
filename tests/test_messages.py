"""The catalogue of messages (mtpinspect/logread/catalogue.py): what a line means, read from any text.

The real pastes of cases/logs/ test what the catalogue concludes (tests/test_log_corpus.py); these tests
hold the reader's own promises: every entry says where its wording comes from, hits carry the line they
were found on, a text is refused only when no line means anything, and the reading stays bounded
whatever a file holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mtpinspect.causes import CAUSES
from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError
from mtpinspect.logread.catalogue import CATALOGUE, MTP_FAILURE_MARKERS, Meaning, scan
from mtpinspect.logread.run_facts import MtpUse
from mtpinspect.logread.runs import read_log
from mtpinspect.vocabulary import Engine, LogKind


def test_every_entry_names_its_source_its_meaning_and_a_key_its_pattern_needs() -> None:
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    for message in CATALOGUE:
        assert message.source.strip() and message.means.strip(), message.name
        assert message.cause is None or message.cause in CAUSES, message.name
        # A key is a literal the line must hold for the pattern to be tried at all.
        assert message.keys and all(message.keys), message.name
        assert (message.meaning is Meaning.mtp_on) <= (message.mtp is MtpUse.on), message.name


def test_hits_carry_their_line_and_number_through_prefixes(tmp_path: Path) -> None:
    text = ("some words the user typed\n"
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/spec_decode/eagle.py", line 90, in propose\n'
            "[rank0]: AttributeError: 'Qwen3NextMTP' object has no attribute 'foo'\n")
    hits = scan(text)
    by_meaning = {h.message.meaning: h for h in hits.hits}
    assert by_meaning[Meaning.exception].number == 4
    assert by_meaning[Meaning.exception].match.group("type") == "AttributeError"
    assert hits.writer is Engine.vllm
    assert hits.mtp_sign is not None and hits.mtp_sign.number == 4


def test_a_text_is_refused_only_when_no_line_means_anything(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("bought milk\nthe weather was fine\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"notes.txt: no line means anything to this tool \(it reads .*tracebacks"):
        read_log(notes)
    # One meaningful line among the chatter is enough: a fragment, read for what that line says.
    notes.write_text("bought milk\nAttributeError: 'DeepseekModelNextN' object has no attribute 'layers'\n", encoding="utf-8")
    log = read_log(notes)
    # No log format frames it; the class name is SGLang's (srt/models/deepseek_nextn.py), so SGLang wrote it.
    assert (log.kind, log.runtime, log.mtp_use) == (LogKind.sglang, Engine.sglang, MtpUse.on)
    assert {m.line for m in log.messages} == {2}
    report = diagnose(log_files=[notes])
    assert report.causes[0].code == "MTP_ENGINE_CRASH" and "sglang" in report.causes[0].message
    # With no engine named at all, the text is a fragment of an unknown engine's.
    notes.write_text("bought milk\nRuntimeError: ZE_RESULT_ERROR_MODULE_BUILD_FAILURE\n", encoding="utf-8")
    log = read_log(notes)
    assert (log.kind, log.runtime, log.failure) == (LogKind.fragment, Engine.unknown,
                                                    "RuntimeError: ZE_RESULT_ERROR_MODULE_BUILD_FAILURE")


def test_an_mtp_flag_the_build_calls_invalid_is_a_build_without_mtp(tmp_path: Path) -> None:
    # common/arg.cpp:827 words an unknown flag "error: invalid argument: %s": a build older than the flag.
    paste = tmp_path / "paste.txt"
    paste.write_text("$ ./llama-server -m q.gguf --spec-type draft-mtp\nerror: invalid argument: --spec-type\n",
                     encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "BUILD_WITHOUT_MTP"


def test_a_usage_listing_without_draft_mtp_is_a_build_without_mtp(tmp_path: Path) -> None:
    # The build's own --spec-type list decides, whatever the user typed (here: nothing was rejected yet).
    paste = tmp_path / "help.txt"
    paste.write_text("--spec-type [none|ngram-cache|ngram-simple|ngram-map-k|ngram-map-k4v|ngram-mod]\n"
                     "                                        type of speculative decoding to use\n", encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert cause.code == "BUILD_WITHOUT_MTP" and "offers no draft-mtp" in cause.message
    paste.write_text("--spec-type none,draft-simple,draft-eagle3,draft-mtp,ngram-simple\n", encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


def test_failure_markers_come_from_the_catalogue() -> None:
    failures = [m for m in CATALOGUE if m.meaning is Meaning.mtp_failure]
    assert failures and all(m.pattern.pattern in MTP_FAILURE_MARKERS.pattern for m in failures)


def test_each_message_keeps_its_first_lines_only(tmp_path: Path) -> None:
    text = "".join(f"common_speculative_init: failed to create MTP context ({i})\n" for i in range(500))
    hits = scan(text)
    mine = [h for h in hits.hits if h.message.name == "MTP context failed"]
    assert [h.number for h in mine] == list(range(1, 17))


def test_a_line_that_claims_to_be_the_whole_file_is_read_in_part(tmp_path: Path) -> None:
    # 48 MiB on one line, a failure at its start: the hit keeps a bounded slice of the line.
    text = "failed to create MTP context " + "x" * (48 << 20)
    hits = scan(text)
    (hit,) = [h for h in hits.hits if h.message.name == "MTP context failed"]
    assert len(hit.line) <= 16384 and hit.line.startswith("failed to create MTP context")
    assert re.search("x{1000}", hit.line)


# "path:line" citations of llama.cpp sources in the catalogue, with the quoted wording where one is given.
_CITATION = re.compile(r"(?P<path>(?:common|src|tools|ggml|examples|include)/[\w/.-]+\.(?:cpp|c|h|cu|hpp)):"
                       r"(?P<lines>\d+(?:,\s*\d+)*)(?:\s*\(\"(?P<quote>[^\"]+)\"\))?")


def test_each_cited_llama_cpp_line_is_in_the_pinned_sources() -> None:
    # Every "file:line" a catalogue entry cites is read from the pinned sdist's vendored llama.cpp: the line (give or
    # take three) holds the quoted wording, or else the entry's key or pattern. An entry whose wording is not in the
    # pinned sources must say so instead of citing a line.
    import tarfile

    from mtpinspect.runtime.build import pinned_sdist
    from mtpinspect.runtime.pin import PINNED_VERSION

    checked = 0
    with tarfile.open(pinned_sdist()) as sdist:
        root = f"llama_cpp_python-{PINNED_VERSION}/vendor/llama.cpp/"
        for message in CATALOGUE:
            for cited in _CITATION.finditer(message.source):
                member = sdist.extractfile(root + cited["path"])
                assert member is not None, (message.name, cited["path"])
                lines = member.read().decode("utf-8", "replace").splitlines()
                for number in map(int, re.findall(r"\d+", cited["lines"])):
                    window = "\n".join(lines[max(0, number - 4) : number + 3])
                    parts = [p for p in re.split(r"%\w|\\n", cited["quote"] or "") if p.strip()]
                    found = all(p in window for p in parts) if parts else (
                        any(k in window for k in message.keys) or message.pattern.search(window) is not None)
                    assert found, (message.name, cited.group(0), window)
                    checked += 1
    assert checked >= 15
    # Words once cited that the pinned sources do not hold: said as such, never as a line.
    sourced = {m.name: m.source for m in CATALOGUE}
    assert "not in the pinned sources" in sourced["draft memory not measured"]
    assert "src/llama-model-loader.cpp:1159" in sourced["missing nextn tensor"]


def test_a_scheduler_death_after_drafting_is_a_crash_on_the_mtp_path(tmp_path: Path) -> None:
    # SGLang's decode lines show drafting (accept len), then the scheduler dies on an exception that names nothing
    # of the speculative path: the drafting before it is the tie (issue 42).
    drafting = (Path(__file__).resolve().parents[1] / "cases" / "logs" / "sglang-eagle3-decode-batch-accept-len.log")
    paste = tmp_path / "sglang.log"
    paste.write_text(drafting.read_text(encoding="utf-8") + "[2025-12-22 19:08:58] Scheduler hit an exception: "
                     "Traceback (most recent call last):\nRuntimeError: CUDA error: an illegal memory access was encountered\n",
                     encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert (cause.code, cause.confidence_word) == ("MTP_ENGINE_CRASH", "medium") and "while drafting" in cause.message
    # The same exception without the drafting lines is a crash, not MTP's.
    paste.write_text("[2025-12-22 19:08:58] Scheduler hit an exception: Traceback (most recent call last):\n"
                     "RuntimeError: CUDA error: an illegal memory access was encountered\n", encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


def test_a_keyerror_on_a_weight_in_an_mtp_loader_is_the_loaders_bug(tmp_path: Path) -> None:
    paste = tmp_path / "trace.log"
    paste.write_text('  File "/usr/lib/python3/site-packages/vllm/model_executor/models/deepseek_mtp.py", line 300, '
                     "in load_weights\n    param = params_dict[name]\nKeyError: 'model.layers.61.self_attn.kv_a_proj_with_mqa.weight'\n",
                     encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert cause.code == "MTP_LOADER_BUG" and cause.confidence_word == "medium"
    # A KeyError on a weight in a loader that is not MTP's says nothing of MTP.
    paste.write_text('  File "/srv/app/models/loader.py", line 30, in load_weights\n    param = params_dict[name]\n'
                     "KeyError: 'encoder.layers.3.weight'\n", encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


def test_a_cut_traceback_through_speculative_code_is_a_crash_on_that_path(tmp_path: Path) -> None:
    # A traceback whose exception line the paste lost: its frames in the engine's drafting code are the tie (issue 42).
    paste = tmp_path / "trace.log"
    frames = ('[23:23:54 TP7] Traceback (most recent call last):\n'
              '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 669, in run_batch\n'
              '    out = self.draft_worker.forward_batch_speculative_generate(batch)\n'
              '  File "/opt/sglang/python/sglang/srt/{}.py", line 42, in forward_draft_extend\n'
              '    logits_output = self.model_runner.forward(forward_batch)\n')
    paste.write_text(frames.format("speculative/eagle_worker"), encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert (cause.code, cause.confidence_word) == ("MTP_ENGINE_CRASH", "medium")
    assert "exception itself is not in the paste" in cause.message and any("line 4:" in e for e in cause.evidence)
    # The same traceback through code that does not draft names nothing.
    # (SGLang's scheduler calls the target alone as self.tp_worker; self.draft_worker is its speculative worker.)
    plain = frames.replace("self.draft_worker.forward_batch_speculative_generate", "self.tp_worker.forward_batch_generation"
                           ).replace("forward_draft_extend", "forward_extend")
    paste.write_text(plain.format("managers/tp_worker"), encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


def test_a_table_with_a_run_per_row_judges_each_row(tmp_path: Path) -> None:
    paste = tmp_path / "table.md"
    paste.write_text("| Backend | Draft acceptance | Mean len |\n|---|---|---|\n| ROCm0 | **60.1%** (83/138) | 3.31 |\n"
                     "| Vulkan0 | **0.1%** (1/894) | 1.00 |\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert [(log.accepted, log.drafted) for log in report.logs] == [(83, 138), (1, 894)]
    assert report.causes[0].code == "HEAD_DISAGREES" and "(run 2, from line 4)" in report.causes[0].evidence[0]
    # Rows that are categories of one run's prompts add up; a bare "Acceptance" column (a test plan's) is not read.
    paste.write_text("| category | accept_rate |\n|---|---|\n| coding | 0.80 |\n| prose | 0.60 |\n", encoding="utf-8")
    (log,) = diagnose(log_files=[paste]).logs
    assert log.acceptance == pytest.approx(0.70)
    paste.write_text("| Feature | Acceptance |\n|---|---|\n| login | 0% |\n| export | 0% |\n", encoding="utf-8")
    with pytest.raises(FormatError):
        diagnose(log_files=[paste])


def test_runs_compared_by_speed(tmp_path: Path) -> None:
    # A table of configurations with a row without speculation: a deeper draft slower than a shallower one, and
    # every drafting run slower than the baseline at fine acceptance (issue 42: the runs of one text judged together).
    paste = tmp_path / "runs.md"
    paste.write_text("| Config | Decode tok/s | Draft acceptance |\n|---|---:|---:|\n| no speculation | 26.7 | — |\n"
                     "| `--spec-draft-n-max 3` | 23.5 | 34% |\n| `--spec-draft-n-max 2` | 29.6 | 54% |\n", encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert (cause.code, cause.confidence_word) == ("NMAX_TOO_HIGH", "medium") and "line 4:" in cause.evidence[0]
    paste.write_text("| Mode | Value |\n|---|---:|\n| baseline | `11.1 +/- 0.1 t/s` |\n"
                     "| `--draft-max 1` | `10.0 +/- 0.4 t/s @ 88.2% +/- 9.7%` |\n", encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert cause.code == "SLOWER_THAN_BASELINE" and "10 against 11.1 tok/s" in cause.message
    # Slower only where drafts are rejected: the acceptance, not the verification cost, is the story.
    paste.write_text(paste.read_text(encoding="utf-8").replace("88.2%", "30.0%"), encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


def test_llama_cpp_speculative_lines_keep_their_padding() -> None:
    # "spec %12.*s: ": the function's name right-aligned in 12 characters; a "spec file:" line of other software is not it.
    hits = scan("3.28.378.765 E spec flush_deferr: llama_decode(ctx_dft) deferred flush failed rc=-1\n"
                "45.08.275.532 E spec        draft: llama_decode[1] returned -1\nspec file: build.spec\n")
    speculation = [h.number for h in hits.of(Meaning.speculation)]
    assert speculation == [1, 2] and [h.number for h in hits.of(Meaning.engine_gap)] == [1, 2]


def test_a_run_without_speculation_timed_before_one_with_it(tmp_path: Path) -> None:
    # Two llama-server runs under their commands, each request's decode speed server-timed ("eval time"): the MTP run
    # drafts well and decodes slower than the run without it (issue 42: several runs in one text, set side by side).
    timing = ("slot print_timing: id  0 | task 0 |\n       eval time =    {ms} ms /   100 tokens ({per} ms per token, "
              "{speed} tokens per second)\n")
    paste = tmp_path / "two.log"
    paste.write_text("$ llama-server -m model.gguf -c 4096\n" + timing.format(ms="1000.00", per="10.00", speed="100.00")
                     + "$ llama-server -m model.gguf -c 4096 --spec-type draft-mtp --spec-draft-n-max 3\n"
                     + timing.format(ms="1250.00", per="12.50", speed="80.00")
                     + "draft acceptance = 0.80000 (  240 accepted /   300 generated), mean len =  3.40\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert [log.speed for log in report.logs] == [100.0, 80.0]
    (cause,) = report.causes
    assert cause.code == "SLOWER_THAN_BASELINE" and any("line 3:" in e for e in cause.evidence)
    # Faster with MTP: nothing to say.
    paste.write_text(paste.read_text(encoding="utf-8").replace("1250.00", "800.00").replace("80.00 tokens", "125.00 tokens"),
                     encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


@pytest.mark.parametrize(("line", "code"), [
    # The pinned common/speculative.cpp's own error lines (SPC_ERR), under its "spec" tag.
    ("0.12.000.001 E spec        draft: llama_process[0] returned -1", "MTP_ENGINE_CRASH"),
    ("0.12.000.001 E spec   draft_impl: failed to decode draft batch, ret = -3", "MTP_ENGINE_CRASH"),
    ("0.01.000.001 E spec         init: the target and draft vocabs are not compatible", "SIDECAR_MISMATCH"),
])
def test_the_speculative_modules_own_errors(tmp_path: Path, line: str, code: str) -> None:
    paste = tmp_path / "spec.log"
    paste.write_text(line + "\n", encoding="utf-8")
    cause = diagnose(log_files=[paste]).causes[0]
    assert cause.code == code and cause.confidence_word == "medium" and any("line 1" in e for e in cause.evidence)


def test_an_apps_words_about_the_model_come_before_an_engine_limit(tmp_path: Path) -> None:
    # An app's error line that says the model has no MTP layer is read for that (issue 42, rule 3), not as the
    # app's limitation; one that says nothing of the model stays an engine limitation.
    paste = tmp_path / "app.log"
    paste.write_text("LM Studio error: MTP draft failed to start: model does not have MTP head\n", encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert (cause.code, cause.confidence_word) == ("MTP_WEIGHTS_MISSING", "medium") and "line 1" in cause.evidence[1]
    paste.write_text("LM Studio error: MTP draft failed to start: speculative decoding not supported\n", encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "ENGINE_LIMITATION"


def test_results_listed_one_run_a_line(tmp_path: Path) -> None:
    # A poster's results, one run a line, a run without speculation among them (issue 42: runs compared by speed).
    paste = tmp_path / "results.md"
    paste.write_text("Results on my 3090:\n- Without MTP: 25.3 t/s\n- MTP n-max 3: **19.8 tok/s** (acceptance 71%)\n",
                     encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert [(log.speed, log.acceptance, log.baseline) for log in report.logs] == [(25.3, None, True), (19.8, 0.71, False)]
    (cause,) = report.causes
    assert cause.code == "SLOWER_THAN_BASELINE" and "line 2:" in cause.evidence[0] and "line 3:" in cause.evidence[1]
    # Speeds whose labels say nothing of speculation are no runs to compare: nothing is read.
    paste.write_text("download speed: 30 tok/s\nupload speed: 12 tok/s\n", encoding="utf-8")
    with pytest.raises(FormatError):
        diagnose(log_files=[paste])


def test_two_runs_under_their_commands_at_two_draft_lengths(tmp_path: Path) -> None:
    # The draft length of a run under its command is its --spec-draft-n-max: the deeper run decodes slower.
    run = ("$ llama-server -m model.gguf --spec-type draft-mtp --spec-draft-n-max {n}\n"
           "       eval time =    1000.00 ms /   100 tokens (   10.00 ms per token,    {speed} tokens per second)\n"
           "draft acceptance = 0.60000 (  120 accepted /   200 generated), mean len =  2.20\n")
    paste = tmp_path / "two.log"
    paste.write_text(run.format(n=2, speed="60.00") + run.format(n=5, speed="45.00"), encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert cause.code == "NMAX_TOO_HIGH" and "drafting 5 tokens a step decodes slower" in cause.message


def test_a_web_apps_draft_function_is_no_drafter(tmp_path: Path) -> None:
    # Frames are read for the engines' drafting functions (maybe_init_draft_worker, ..._speculative_...), never for a
    # bare "draft": a blog's save_draft_model in a traceback ties nothing to MTP.
    paste = tmp_path / "blog.log"
    paste.write_text('Traceback (most recent call last):\n  File "/srv/blog/views.py", line 12, in save_draft_model\n'
                     "    post.save()\nKeyError: 'title'\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == [] and "nothing ties it to MTP" in report.notes[0]
    # The drafter's function name in the blog's own module is still the blog's (drafters.py reads a frame by its path
    # and its function together); in SGLang's package it is the drafter's.
    drafter = paste.read_text(encoding="utf-8").replace("save_draft_model", "maybe_init_draft_worker")
    paste.write_text(drafter, encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []
    paste.write_text(drafter.replace("/srv/blog/views.py", "/opt/sglang/python/sglang/srt/managers/scheduler.py"),
                     encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "MTP_ENGINE_CRASH"


# -- issue 42, third round: the classes the second set's set-aside half showed --------------------------------------


@pytest.mark.parametrize("line", [
    "1.02.000.001 E process: llama_decode(ctx_dft) failed rc=-1 (n_tokens=12, ubatch_pos[0]=880)",
    "0.44.777.485 W mtp_draft: llama_decode returned -1",  # a fork's drafting function tags the line
    "spec_step: llama_process failed, ret = -3",
])
def test_a_failure_of_the_draft_context_is_its_own_tie(tmp_path: Path, line: str) -> None:
    paste = tmp_path / "draft.log"
    paste.write_text(line + "\n", encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert (cause.code, cause.confidence_word) == ("MTP_ENGINE_CRASH", "medium") and "line 1" in cause.evidence[1]


def test_the_targets_decode_error_is_mtps_only_with_a_tie(tmp_path: Path) -> None:
    paste = tmp_path / "decode.log"
    error = "0.46.030.642 E llama_get_logits_ith: invalid logits id 3, reason: no logits\n"
    paste.write_text(error, encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []
    paste.write_text("$ llama-server -m big.gguf --spec-type draft-mtp --port 8080\n" + error, encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert cause.code == "MTP_ENGINE_CRASH" and "line 2" in cause.evidence[1] and "line 1" in cause.evidence[2]
    # A launcher's argument dump (not a shell command, so MTP use is not shown) with a draft file ties it too.
    paste.write_text("arguments  : /opt/bin/llama-box --port 4000 -m big.gguf -md small.gguf -ngld 99\n" + error,
                     encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "MTP_ENGINE_CRASH"


@pytest.mark.parametrize(("line", "code"), [
    # A draft setting a newer build removed is a failed start on the setting (the command is older than the build), not
    # a spec type the build does not know (a thread of the fourth set, mesh-llm#564): MTP_FAILED, at medium confidence.
    ("error while handling argument \"--draft-max\": the argument has been removed. use --spec-draft-n-max or "
     "--spec-ngram-mod-n-max", "MTP_FAILED"),
    ("option '-mtp' has been deprecated; use --spec-type mtp:n_max=2 instead", "WRONG_SPEC_TYPE"),
    ("warning: option '--color' is deprecated; use --colour", None),  # not a speculative flag: nothing of MTP's
])
def test_a_speculative_flag_the_build_renamed(tmp_path: Path, line: str, code: str | None) -> None:
    paste = tmp_path / "flag.log"
    paste.write_text(line + "\n", encoding="utf-8")
    try:
        causes = diagnose(log_files=[paste]).causes
    except FormatError:
        causes = []
    assert [c.code for c in causes][:1] == ([code] if code else [])
    if code:
        assert causes[0].confidence_word == ("high" if code == "WRONG_SPEC_TYPE" else "medium")
        assert "line 1" in causes[0].evidence[1]


def test_argparse_names_whose_command_line_it_is(tmp_path: Path) -> None:
    # The flags argparse lists are the ones it refused (here vLLM's spellings), its program name says whose it is.
    paste = tmp_path / "argparse.log"
    paste.write_text("launch_server.py: error: unrecognized arguments: --speculative-model x --num-speculative-tokens 4\n",
                     encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.logs[0].runtime is Engine.sglang and report.causes[0].code == "ENGINE_LIMITATION"
    # llama-cpp-python (llama.cpp's family) refusing an option this version lacks: no MTP cause (cases/logs convention).
    paste.write_text("__main__.py: error: unrecognized arguments: --draft_model=prompt-lookup-decoding\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == [] and report.logs[0].runtime is Engine.llama_cpp


@pytest.mark.parametrize(("text", "length", "rate"), [
    ("Average Accept length: 2.64\n", 2.64, None),
    ("- EAGLE k=3: [00:41<00:00, output: 90.1 toks/s] **Acceptance Length: 2.71**\n", 2.71, None),
    ("acc_len=3.10\n", 3.10, None),
    ("mean accept len = 2.5, accept rate: 61%\n", 2.5, 0.61),
    ('{"acceptance_length": 2.9, "accept_rate": 0.7}\n', 2.9, 0.7),
])
def test_acceptance_figures_are_read_by_their_words(tmp_path: Path, text: str, length: float, rate: float | None) -> None:
    paste = tmp_path / "figures.md"
    paste.write_text(text, encoding="utf-8")
    log = read_log(paste)
    assert (log.mean_length, log.acceptance) == (length, rate)


def test_a_heading_names_the_run_its_figures_belong_to(tmp_path: Path) -> None:
    # A run without speculation reports a mean length of 1.00: under its "Baseline" heading it is no drafter's zero.
    paste = tmp_path / "two.md"
    paste.write_text("**Baseline**\nacc_length=1.00\n\n**With EAGLE**\nacc_length=2.31\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == [] and [log.mean_length for log in report.logs] == [2.31]


@pytest.mark.parametrize(("spec", "code"), [((6.1, 5.0), "SLOWER_THAN_BASELINE"), ((9.5, 9.9), None)])
def test_a_table_setting_runs_side_by_side(tmp_path: Path, spec: tuple[float, float], code: str | None) -> None:
    paste = tmp_path / "table.md"
    paste.write_text("| Task | No spec (t/s) | Spec (t/s) | Accept Rate (%) |\n|---|---|---|---|\n"
                     f"| code | 8.0 | {spec[0]} | 64% |\n| chat | 7.9 | {spec[1]} | 55% |\n", encoding="utf-8")
    causes = diagnose(log_files=[paste]).causes
    assert [c.code for c in causes] == ([code] if code else [])


def test_a_frame_in_a_drafting_function_ties_a_traceback(tmp_path: Path) -> None:
    paste = tmp_path / "tb.log"
    paste.write_text('  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 1745, in '
                     "propose_draft_token_ids\n    spec_token_ids = draft_token_ids.tolist()\n"
                     "RuntimeError: CUDA error: device-side assert triggered\n", encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert cause.code == "MTP_ENGINE_CRASH" and any("line 1" in e for e in cause.evidence)


def test_a_request_setting_of_speculation_ties_a_quoted_assert(tmp_path: Path) -> None:
    paste = tmp_path / "prose.md"
    paste.write_text("With speculative.n_max = 24 every request ends in `common/common.cpp:1480: GGML_ASSERT(batch.seq_id"
                     "[batch.n_tokens] && \"llama_batch size exceeded\") failed`\n", encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "MTP_ENGINE_CRASH"
    paste.write_text(paste.read_text(encoding="utf-8").replace("speculative.n_max = 24", "a long prompt"), encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []


def test_the_speculative_examples_own_timing_is_the_runs_speed(tmp_path: Path) -> None:
    # Its llama_print_timings time the draft and the target apart: the run's speed is the example's own line.
    paste = tmp_path / "spec.log"
    paste.write_text("decoded  200 tokens in   40.000 seconds, speed:    5.000 t/s\n\nn_drafted = 100\nn_accept  = 60\n"
                     "accept    = 60.000%\n\ndraft:\n\nllama_print_timings:        eval time =  5000.00 ms /   300 runs   "
                     "(   16.67 ms per token,    60.00 tokens per second)\n", encoding="utf-8")
    log = read_log(paste)
    assert (log.speed, log.accepted, log.drafted) == (5.0, 60, 100) and "line 1" in (log.speed_line or "")


def test_a_run_tables_mode_column_names_its_baseline_rows(tmp_path: Path) -> None:
    paste = tmp_path / "table.md"
    paste.write_text("| GPU | Mode | Tok/s | Accept% |\n|---|---|---|---|\n| A | baseline | 30.0 | — |\n"
                     "| A | MTP n=2 | 24.0 | 70.0 |\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert [(log.baseline, log.acceptance) for log in report.logs] == [(True, None), (False, 0.7)]
    assert [c.code for c in report.causes] == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("line", ["ICLR 2025 acceptance rate: 31.5%", "Loan acceptance rate: 4%", "cookie accept rate = 0.02",
                                  "Acceptance rate: 22%"])
def test_someone_elses_acceptance_rate_is_not_read(tmp_path: Path, line: str) -> None:
    # A rate label is the drafter's where it opens its clause (or follows a drafter's word) in a text that drafts.
    paste = tmp_path / "other.txt"
    paste.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(FormatError):
        diagnose(log_files=[paste])


# -- issue 42, the third set's built-on half: its classes ----------------------------------------------------------


@pytest.mark.parametrize("text", [
    # a middle slice of a traceback, its header and exception cut away, through V0's spec_decode
    'ERROR 03-01 10:00:00 async_llm_engine.py:57]   File "/opt/v/vllm/spec_decode/batch_expansion.py", line 90, in '
    "score_proposals\nERROR 03-01 10:00:00 async_llm_engine.py:57]     out = self._scorer_worker.execute_model(\n",
    # interleaved workers whose header comes after the MTP frame
    '(Worker_TP1 pid=7) ERROR 03-01 10:00:00 [multiproc_executor.py:9]   File "/x/vllm/model_executor/models/glm4_moe_mtp.py", '
    'line 12, in forward\n(Worker_TP0 pid=6) ERROR 03-01 10:00:00 [multiproc_executor.py:9] Traceback (most recent call last):\n',
    # a log viewer's CSV export: quoted lines, doubled quotes, cut at a comma
    '"ERROR 03-01 10:00:00 [async_llm_engine.py:67] File ""/usr/lib/vllm/spec_decode/draft_model_runner.py""\n'
    '"ERROR 03-01 10:00:00 [async_llm_engine.py:67] return func(*args\n',
])
def test_traceback_frames_in_drafting_code_without_their_exception(tmp_path: Path, text: str) -> None:
    paste = tmp_path / "tb.log"
    paste.write_text(text, encoding="utf-8")
    (cause,) = diagnose(log_files=[paste]).causes
    assert (cause.code, cause.confidence_word) == ("MTP_ENGINE_CRASH", "medium") and any("line 1" in e for e in cause.evidence)


def test_vllms_engine_death_after_drafting_setup(tmp_path: Path) -> None:
    paste = tmp_path / "core.log"
    paste.write_text('args: ["--model", "/m", "--speculative-config", "{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": 2}"]\n'
                     "ERROR 02-21 06:30:25 core.py:291] EngineCore hit an exception: Traceback (most recent call last):\n"
                     'ERROR 02-21 06:30:25 core.py:291]   File "/x/vllm/v1/engine/core.py", line 284, in run_engine_core\n',
                     encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "MTP_ENGINE_CRASH"
    paste.write_text(paste.read_text(encoding="utf-8").splitlines(keepends=True)[1], encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []  # the same death with nothing of drafting: no MTP cause


def test_vllms_crash_dump_with_scheduled_drafts(tmp_path: Path) -> None:
    # dump_input.py prints the step's SchedulerOutput only when the engine core dies on it.
    paste = tmp_path / "dump.log"
    paste.write_text("scheduled_spec_decode_tokens={cmpl-1: [-1, -1, -1]}\n", encoding="utf-8")
    assert diagnose(log_files=[paste]).causes[0].code == "MTP_ENGINE_CRASH"
    paste.write_text("(EngineCore pid=1) ERROR 04-23 21:09:12 [dump_input.py:79] Dumping scheduler output for model execution: "
                     "SchedulerOutput(scheduled_new_reqs=[], scheduled_spec_decode_tokens={}, num_scheduled_tokens={a: 1})\n",
                     encoding="utf-8")
    assert diagnose(log_files=[paste]).causes == []  # no draft tokens in the step: a crash, not MTP's


def test_a_table_of_speeds_before_and_after_speculation(tmp_path: Path) -> None:
    paste = tmp_path / "rollout.md"
    table = "| Host | Model | draft n_max | Decode Δ |\n|---|---|---|---|\n| a | A | 2 | 20.0 → {a} |\n| b | B | 3 | 50.0 → {b} |\n"
    paste.write_text(table.format(a="35.5 (+77%)", b="61.0"), encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == [] and [log.speed for log in report.logs] == [20.0, 35.5, 50.0, 61.0]
    # without a column that names drafting the arrows are someone else's before and after: not read
    paste.write_text(table.replace("draft n_max", "driver").format(a="35.5", b="61.0"), encoding="utf-8")
    with pytest.raises(FormatError):
        diagnose(log_files=[paste])


def test_runs_under_a_posters_labels(tmp_path: Path) -> None:
    loggers = ("(APIServer pid={pid}) INFO 04-09 11:27:10 [loggers.py:259] Engine 000: Avg prompt throughput: 9.0 tokens/s, "
               "Avg generation throughput: {speed} tokens/s, Running: 1 reqs\n")
    spec = ("(APIServer pid=2) INFO 04-09 11:17:53 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 1.90, "
            "Accepted: 450 tokens, Drafted: 500 tokens, Per-position acceptance rate: 0.900, Avg Draft acceptance rate: 90.0%\n")
    paste = tmp_path / "two.log"
    paste.write_text("without mtp\n" + loggers.format(pid=1, speed="300.0") + "with mtp\n" + loggers.format(pid=2, speed="150.0")
                     + spec, encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert [(log.speed, log.baseline) for log in report.logs] == [(300.0, True), (150.0, False)]
    assert report.causes[0].code == "SLOWER_THAN_BASELINE"


def test_llamas_loader_error_after_a_posters_words_ties_nothing(tmp_path: Path) -> None:
    paste = tmp_path / "load.log"
    paste.write_text("log below:llama_model_load: error loading model: check_tensor_dims: tensor 'blk.40.attn_qkv.weight' "
                     "not found\n", encoding="utf-8")
    report = diagnose(log_files=[paste])
    assert report.causes == [] and report.logs[0].runtime is Engine.llama_cpp
