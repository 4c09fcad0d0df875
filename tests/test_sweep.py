"""`mtpinspect sweep` against the real llama-server on tiny MTP models with known acceptance."""

from __future__ import annotations

import io
import json
import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import psutil
import pytest
from cpuburn import burners
from matplotlib import image as mpimg

from mtpinspect.cli._output import Output
from mtpinspect.cli.sweep import command, render
from mtpinspect.errors import MtpinspectError
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.logs import parse_draft_lines
from mtpinspect.sweep import ProgressEvent, SweepOptions, run_sweep
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.machine_load import BUSY_SHARE
from mtpinspect.sweep.progress import RUN_DONE, RUN_START
from mtpinspect.sweep.records import RunRecord, ServerRecord
from mtpinspect.sweep.run import warmup_tokens
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model
from mtpinspect.trained_model import SHIPPED_GGUF
from mtpinspect.vocabulary import RunStatus, ServerStatus

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas" / "sweep.schema.json").read_text(encoding="utf-8")
)
N_PREDICT = 32


@pytest.fixture(scope="module")
def server_binary() -> ServerBinary:
    return find_server(build=True, progress=print)


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    items = [
        {"id": "p1", "class": "code", "prompt": "def fibonacci(n: int) -> int:\n    "},
        {"id": "p2", "class": "code", "prompt": "SELECT name, total FROM orders WHERE"},
    ]
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def _model(tmp_path: Path, **spec: Any) -> Path:
    return write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(**spec))[0]


def _options(server_binary: ServerBinary, out: Path, prompts: Path, **changes: Any) -> SweepOptions:
    base = dict(n_max=(2,), repeat=1, prompts=prompts, n_predict=N_PREDICT, server=server_binary.path, out_dir=out)
    return SweepOptions(**{**base, **changes})


def _records(out: Path) -> tuple[list[RunRecord], list[ServerRecord]]:
    records = Journal(out / "runs.jsonl").read().records
    runs = [RunRecord.from_dict(r) for r in records if r["kind"] == "run"]
    servers = [ServerRecord.from_dict(r) for r in records if r["kind"] == "server"]
    return runs, servers


def _server_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "llama-server" in p.name()]


@pytest.mark.server
def test_perfect_head(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    report = run_sweep(_model(tmp_path, acceptance="perfect"), _options(server_binary, out, prompts, n_max=(1, 2, 3)))
    groups = {g.configuration: g for g in report.results}
    assert list(groups) == ["baseline", "n-max-1", "n-max-2", "n-max-3"]
    for n in (1, 2, 3):
        group = groups[f"n-max-{n}"]
        assert group.runs == 2 and group.acceptance == 1.0
        # Drafts near the n_predict limit are cut short, so deeper positions can see fewer tokens.
        assert len(group.per_position) == n and group.per_position[0] == 1.0
        assert group.per_position == sorted(group.per_position, reverse=True)
        assert group.expected_length == n + 1
        if n >= 2:
            assert group.mean_length > n
        # A perfect head at temperature 0 on the tiny model changes nothing in the text.
        assert group.identical_to_baseline is True and group.first_divergence is None
        assert group.speedup is not None and group.rss_peak_bytes and group.rss_post_load_bytes
    assert groups["baseline"].acceptance is None and groups["baseline"].drafted == 0

    runs, servers = _records(out)
    # One server start per configuration, none per request; the warm-up is not a recorded run.
    assert sorted(s.configuration for s in servers) == sorted(groups)
    assert all(s.status is ServerStatus.started and s.version == server_binary.version for s in servers)
    assert len(runs) == 4 * 2 and all(r.status == RunStatus.ok for r in runs)
    for run in runs:
        assert run.decode_tokens_per_second and run.prompt_tokens_per_second and run.wall_seconds > 0
        assert run.predicted_n == N_PREDICT and run.text
        if run.n_max is None:
            assert run.log is None and run.log_agrees is None
            continue
        # Every figure equals the server's own log line for this request.
        assert run.log is not None and run.log_agrees is True, run.log_mismatch
        assert (run.log.accepted, run.log.generated) == (run.accepted, run.drafted)
        assert run.log.acceptance == pytest.approx(run.acceptance, abs=5e-6)
        assert run.log.mean_length == pytest.approx(run.mean_length, abs=5e-3)
        assert (run.timings_draft_n, run.timings_draft_n_accepted) == (run.drafted, run.accepted)

    # The discarded first request drafted at full length (the drafting graphs are built before any
    # measured run) and stopped there; the first measured run did not read its counters or log line.
    for server in servers:
        log = Path(server.log_path).read_text(encoding="utf-8", errors="replace")
        first_request = re.search(r"task \d+ \|\s+eval time =\s*[\d.]+ ms /\s*(\d+) tokens", log)
        assert first_request is not None
        assert int(first_request.group(1)) == warmup_tokens(server.n_max, N_PREDICT)
        if server.n_max is not None:
            warm_up_draft = parse_draft_lines(log)[0]
            assert (warm_up_draft.generated, warm_up_draft.accepted) == (server.n_max, server.n_max)
            assert len(parse_draft_lines(log)) == 1 + len([r for r in runs if r.server_id == server.server_id])

    assert report.server.command[:3] == [str(server_binary.path), "-m", report.model]
    assert "--spec-type" not in report.server.command
    assert groups["n-max-2"].command[-4:] == ["--spec-type", "draft-mtp", "--spec-draft-n-max", "2"]
    png = Path(report.files.plot or "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert mpimg.imread(png).shape[0] > 100
    document = json.loads(Path(report.files.report).read_text(encoding="utf-8"))
    jsonschema.validate(document, SCHEMA)
    choice = document["recommendation"]
    expected_start = "leave MTP off" if choice["n_max"] is None else f"n-max {choice['n_max']} is fastest"
    assert choice["reason"].startswith(expected_start), choice
    assert not _server_children()


@pytest.mark.server
def test_grouped_order_starts_each_configuration_once(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    report = run_sweep(_model(tmp_path, acceptance="perfect"), _options(server_binary, out, prompts, repeat=3, order="grouped"))
    runs, servers = _records(out)
    assert sorted(s.configuration for s in servers) == ["baseline", "n-max-2"]
    assert len(runs) == 2 * 3 * 2 and {r.repeat for r in runs} == {0, 1, 2}
    assert report.settings["order"] == "grouped"
    assert {g.configuration: g.runs for g in report.results} == {"baseline": 6, "n-max-2": 6}


@pytest.mark.server
@pytest.mark.parametrize("acceptance", ["none", 0.5])
def test_head_that_drafts_badly(server_binary: ServerBinary, tmp_path: Path, prompts: Path, acceptance: Any) -> None:
    report = run_sweep(_model(tmp_path, acceptance=acceptance), _options(server_binary, tmp_path / "out", prompts))
    group = next(g for g in report.results if g.n_max == 2)
    assert group.runs == 2 and group.drafted > 0 and group.log_agrees is True
    if acceptance == "none":
        assert group.acceptance == 0.0 and group.mean_length == 1.0 and group.accepted == 0
    else:
        assert 0.0 < group.acceptance < 1.0 and 1.0 < group.mean_length < 3.0


@pytest.mark.server
def test_model_without_nextn_fails_mtp_only(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    report = run_sweep(_model(tmp_path, nextn=False), _options(server_binary, out, prompts, n_max=(1, 2)))
    groups = {g.configuration: g for g in report.results}
    assert groups["baseline"].runs == 2 and groups["baseline"].tokens_per_second is not None
    for config in ("n-max-1", "n-max-2"):
        assert groups[config].runs == 0 and "MTP" in (groups[config].error or "")
    assert {(f.configuration, f.kind) for f in report.failures} == {("n-max-1", "start"), ("n-max-2", "start")}
    assert all("\n" not in f.reason for f in report.failures)
    assert report.recommendation.n_max is None
    _, servers = _records(out)
    assert [s.status for s in servers if s.n_max] == ["failed", "failed"]
    text = io.StringIO()
    render(report, Output("table", text))
    assert "doesn't contain MTP layers" in text.getvalue()


@pytest.mark.server
def test_server_killed_mid_sweep(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    three = tmp_path / "three.jsonl"
    three.write_text(prompts.read_text() + json.dumps({"id": "p3", "class": "code", "prompt": "fn main() {"}) + "\n")
    killed: list[int] = []

    def kill_second_mtp_request(event: ProgressEvent) -> None:
        if event.phase == RUN_START and event.configuration == "n-max 1" and event.prompt_id == "p2" and not killed:
            (victim,) = _server_children()
            killer = threading.Thread(target=victim.kill)
            killer.start()
            killer.join()
            victim.wait(5)
            killed.append(victim.pid)

    options = _options(server_binary, out, three, n_max=(1, 2))
    model = _model(tmp_path, acceptance="perfect")
    report = run_sweep(model, options, progress=kill_second_mtp_request)
    assert killed
    runs, _ = _records(out)
    crashed = [r for r in runs if r.status != RunStatus.ok]
    assert [(r.configuration, r.prompt_id, r.status) for r in crashed] == [("n-max-1", "p2", RunStatus.crashed)]
    assert "died" in (crashed[0].error or "")
    # Nothing measured is lost, and the sweep went on with the next configuration.
    assert [r.prompt_id for r in runs if r.configuration == "n-max-1" and r.status == RunStatus.ok] == ["p1"]
    assert len([r for r in runs if r.configuration == "n-max-2" and r.status == RunStatus.ok]) == 3
    assert report.runs.failed == 1 and report.runs.not_run == 1
    assert any(f.kind == RunStatus.crashed for f in report.failures)
    assert not _server_children()

    resumed = run_sweep(model, replace(options, resume=True))
    assert resumed.runs.ok == 9 and resumed.runs.failed == 0 and resumed.runs.not_run == 0


@pytest.mark.server
def test_interrupt_keeps_the_journal_and_resume_completes_it(
    server_binary: ServerBinary, tmp_path: Path, prompts: Path
) -> None:
    out = tmp_path / "out"
    model = _model(tmp_path, acceptance="perfect")
    options = _options(server_binary, out, prompts, n_max=(1, 2), repeat=2)

    def stop_after_four(event: ProgressEvent) -> None:
        if event.phase == RUN_DONE and event.done == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(model, options, progress=stop_after_four)
    assert not _server_children()
    first, first_servers = _records(out)
    assert len(first) == 4 and all(r.status == RunStatus.ok for r in first)

    report = run_sweep(model, replace(options, resume=True))
    runs, servers = _records(out)
    keys = [r.key for r in runs]
    assert len(keys) == len(set(keys)) == 3 * 2 * 2  # every run once: none of the first four ran again
    assert runs[:4] == first
    assert report.runs.ok == 12 and report.runs.resumed == 4
    # Visits: baseline, n-max 1, n-max 2 (both rounds), n-max 1, baseline; the first two were done.
    assert [s.configuration for s in servers[len(first_servers):]] == ["n-max-2", "n-max-1", "baseline"]

    again = run_sweep(model, replace(options, plot=False))
    assert again.runs.resumed == 0 and any(p.name.startswith("runs-") for p in out.iterdir())


@pytest.mark.server
def test_a_journal_that_cannot_be_written_stops_the_sweep(
    server_binary: ServerBinary, tmp_path: Path, prompts: Path
) -> None:
    """Run lines are written while the next request runs; a failed write still stops the sweep."""
    out = tmp_path / "out"
    journal = out / "runs.jsonl"

    def break_the_journal(event: ProgressEvent) -> None:
        if event.phase == RUN_DONE and event.done == 1:
            journal.unlink()
            journal.mkdir()  # every later append fails: a directory cannot be opened for appending

    with pytest.raises((OSError, MtpinspectError)):
        run_sweep(_model(tmp_path, acceptance="perfect"), _options(server_binary, out, prompts),
                  progress=break_the_journal)
    assert not _server_children()


@pytest.mark.server
def test_synthetic_cost_curve(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    options = _options(server_binary, tmp_path / "out", prompts, n_max=(1,), synthetic=(0.0, 1.0))
    report = run_sweep(_model(tmp_path, acceptance="none"), options)
    forced = {g.synthetic: g for g in report.results if g.synthetic is not None}
    assert forced[0.0].acceptance == 0.0 and forced[1.0].acceptance == 1.0
    assert "--spec-synth-rates" in forced[1.0].command
    assert report.synthetic is not None and [c.n_max for c in report.synthetic.break_even] == [1]
    points = report.synthetic.break_even[0].points
    assert [p.target for p in points] == [0.0, 1.0] and all(p.speedup for p in points)
    # The note follows the two measured points: below 1x at forced 0, and above or below it at 1.
    (low, high), note = points, report.synthetic.break_even[0].note
    if high.speedup >= 1.0 > low.speedup:
        assert note.startswith("below acceptance ") and report.synthetic.break_even[0].acceptance is not None
    elif high.speedup < 1.0:
        assert note == "slower than baseline even at forced acceptance 1.00"
    else:
        assert note.startswith("faster than baseline at every forced acceptance")
    # The real head of this model drafts nothing right; the synthetic runs must not count for it.
    assert next(g for g in report.results if g.configuration == "n-max-1").acceptance == 0.0
    jsonschema.validate(to_jsonable(report), SCHEMA)


@pytest.mark.server
def test_cli_without_model_runs_the_tiny_demo(
    server_binary: ServerBinary, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    common = ["--n-max", "1", "--repeat", "1", "--prompts", "prose-ja", "--n-predict", "48", "--out", str(out),
              "--server", str(server_binary.path)]
    assert command.main([*common, "--format", "json", "--no-plot", "--", "-t", "1"], standalone_mode=False) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["tiny_model"] is True and Path(document["model"]) == SHIPPED_GGUF.resolve()
    assert document["settings"]["server_args"] == ["-t", "1"] and document["server"]["command"][-2:] == ["-t", "1"]
    assert document["files"]["plot"] is None and not (out / "sweep.png").exists()
    assert {r["prompt_class"] for r in document["results"]} == {"prose-ja"}
    mtp = next(r for r in document["results"] if r["n_max"] == 1)
    assert 0.0 < mtp["acceptance"] < 1.0

    # Same settings with --resume: nothing left to run, the report is rebuilt from the journal.
    assert command.main([*common, "--resume", "--format", "csv", "--", "-t", "1"], standalone_mode=False) == 0
    csv_lines = capsys.readouterr().out.splitlines()
    assert csv_lines[0].startswith("prompt_class,configuration,n_max") and len(csv_lines) == 3


@pytest.mark.server
def test_separate_mtp_file_goes_to_mtp_configurations_only(
    server_binary: ServerBinary, tmp_path: Path, prompts: Path
) -> None:
    main, sidecar = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(acceptance="perfect", layout="sidecar"))
    # Given among the extra server arguments, -md is taken as the MTP file, so the baseline stays plain.
    options = _options(server_binary, tmp_path / "out", prompts, server_args=("-md", str(sidecar), "-t", "1"))
    report = run_sweep(main, options)
    groups = {g.configuration: g for g in report.results}
    assert "-md" not in groups["baseline"].command and groups["baseline"].command[-2:] == ["-t", "1"]
    assert groups["n-max-2"].command[-6:] == ["--spec-draft-n-max", "2", "-md", str(sidecar.resolve()), "-t", "1"]
    assert groups["baseline"].runs == 2 and groups["baseline"].drafted == 0
    assert groups["n-max-2"].acceptance == 1.0 and report.settings["mtp_file"] == str(sidecar.resolve())


def _rendered(report: Any, fmt: str) -> tuple[str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    render(report, Output(fmt, stream=stdout, errors=stderr))
    return stdout.getvalue(), stderr.getvalue()


@pytest.mark.server
def test_other_processes_load_is_measured_and_a_busy_machine_is_warned_of(
    server_binary: ServerBinary, tmp_path: Path, prompts: Path
) -> None:
    """The same small sweep measured as the machine is, then while this test keeps every core busy with
    spinning children of its own (not the sweep's: they are other work). The machine may be busy with
    other tests the first time, so there the figures are checked for sense and the warning for agreeing
    with them; with the spinners it must be busy."""
    model = _model(tmp_path, acceptance="perfect")
    cores = psutil.cpu_count()
    quiet = run_sweep(model, _options(server_binary, tmp_path / "as-is", prompts))
    load = quiet.machine_load
    assert load is not None and load.runs == quiet.runs.ok == 4 and load.cores == cores
    assert 0.0 <= load.median_cores <= load.peak_cores <= cores + 0.2
    assert (load.warning is not None) == (load.busy_runs > 0) == (load.state == "busy")
    runs, _ = _records(tmp_path / "as-is")
    assert all(r.other_load is not None and r.other_load.window_seconds > 0 for r in runs)
    table, _ = _rendered(quiet, "table")
    assert ("Busy machine" in table) == (load.warning is not None)

    with burners(cores):
        busy = run_sweep(model, _options(server_binary, tmp_path / "busy", prompts))
    load = busy.machine_load
    assert load is not None and load.state == "busy" and load.busy_runs >= 1
    assert load.peak_cores > BUSY_SHARE * cores and load.warning is not None
    assert load.warning.startswith(f"speeds may be disturbed: other processes used {load.busy_median_cores:.1f} of {cores} cores")
    document = json.loads(Path(busy.files.report).read_text(encoding="utf-8"))
    jsonschema.validate(document, SCHEMA)
    assert document["machine_load"]["warning"] == load.warning
    table, _ = _rendered(busy, "table")
    assert table.index("Busy machine") < table.index("Decode speed and acceptance")  # said before the speeds
    assert load.warning in table
    markdown, _ = _rendered(busy, "md")
    assert f"**{load.warning}**" in markdown
    # csv and json: stdout is data (json has the warning in machine_load); people read it on stderr.
    csv_text, csv_messages = _rendered(busy, "csv")
    json_text, json_messages = _rendered(busy, "json")
    assert "speeds may be disturbed" not in csv_text and json.loads(json_text)["machine_load"] == document["machine_load"]
    assert csv_messages == json_messages == f"mtpinspect sweep: warning: {load.warning}\n"

    # --resume measures nothing more and summarises the journal's readings alike.
    resumed = run_sweep(model, _options(server_binary, tmp_path / "busy", prompts, resume=True))
    assert resumed.runs.resumed == 4 and resumed.machine_load == load
