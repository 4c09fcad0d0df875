"""Ollama and LM Studio: `check ollama:...` and `check lmstudio:...` on stores laid out on disk as the apps
write them (tests/appstores.py), made from tiny-model GGUFs; the verdicts in the apps' own terms; bad
stores as one line and exit 2; `sweep` and `diagnose` of an app's model on the real llama-server.
No test needs the apps installed: OLLAMA_MODELS and HOME point at temporary folders."""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
import pytest
from appstores import (
    DRAFT,
    MODEL,
    TENSOR,
    add_blob,
    add_file_blob,
    blob_path,
    write_lmstudio_engine,
    write_lmstudio_pointer,
    write_lmstudio_repo,
    write_lmstudio_settings,
    write_ollama_mlx_model,
    write_ollama_model,
)
from gguf_factory import TensorSpec, write_gguf

import mtpinspect
from mtpinspect.apps import app_setting, ollama_create_command
from mtpinspect.cache_dir import CACHE_ENV
from mtpinspect.errors import FormatError, SourceError, UsageError
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.build_cache import cache_root
from mtpinspect.runtime.command_server import server_for_commands
from mtpinspect.runtime.flags import BATCH, FLASH_ATTN, PARALLEL, UBATCH
from mtpinspect.sources import ollama as ollama_store
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model
from mtpinspect.vocabulary import App

SCHEMAS = Path(mtpinspect.__file__).parent / "schemas"
CHECK_SCHEMA = json.loads((SCHEMAS / "check.schema.json").read_text())
SWEEP_SCHEMA = json.loads((SCHEMAS / "sweep.schema.json").read_text())
DIAGNOSE_SCHEMA = json.loads((SCHEMAS / "diagnose.schema.json").read_text())
THREADS = ("-t", "1")


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny models the stores are made of: a bundled head, no head, and a trunk + mtp- sidecar pair."""
    root = tmp_path_factory.mktemp("ggufs")
    (root / "plain").mkdir()
    (root / "pair").mkdir()
    (head,) = write_tiny_model(root / "tiny-F32.gguf", TinyModelSpec())
    (nohead,) = write_tiny_model(root / "plain" / "tiny-nohead-F32.gguf", TinyModelSpec(nextn=False))
    main, side = write_tiny_model(root / "pair" / "tiny-pair-F32.gguf", TinyModelSpec(layout="sidecar"))
    return {"head": head, "nohead": nohead, "main": main, "sidecar": side}


def home_env(home: Path) -> dict[str, str]:
    """HOME moved to a test folder, with mtpinspect's cache (the built llama-server) where it was."""
    return {"HOME": str(home), CACHE_ENV: str(cache_root().parent)}


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ollama-models"
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    return root


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mtpinspect", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def check_json(*args: str, env: dict[str, str]) -> tuple[int, dict]:
    done = cli("check", *args, "--format", "json", env=env)
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    for report in doc if isinstance(doc, list) else [doc]:
        jsonschema.validate(report, CHECK_SCHEMA)
    return done.returncode, doc


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def no_claim_the_apps_cannot(report: dict) -> None:
    """Nothing check prints may say that Ollama or LM Studio cannot run MTP."""
    text = json.dumps(report)
    assert not re.search(r"(Ollama|LM Studio)[^.;]*(cannot|can't|neither|does not|doesn't|do not) (run|expose|support)",
                         text), text


# -- Ollama ----------------------------------------------------------------------------------------


def test_manifest_paths_follow_ollama_names(store: Path, ggufs: dict[str, Path]) -> None:
    write_ollama_model(store, "qwen3.6:27b-mtp-q4_K_M", gguf=ggufs["head"])
    write_ollama_model(store, "hf.co/unsloth/Tiny-GGUF:Q8_0", gguf=ggufs["head"])
    write_ollama_model(store, "someone/tiny", gguf=ggufs["head"])
    assert (store / "manifests/registry.ollama.ai/library/qwen3.6/27b-mtp-q4_K_M").is_file()
    assert (store / "manifests/hf.co/unsloth/Tiny-GGUF/Q8_0").is_file()
    assert (store / "manifests/registry.ollama.ai/someone/tiny/latest").is_file()
    names = [n.shown for n in ollama_store.OllamaStore().names()]
    assert names == ["hf.co/unsloth/Tiny-GGUF:Q8_0", "qwen3.6:27b-mtp-q4_K_M", "someone/tiny:latest"]
    for source in ("ollama:qwen3.6:27b-mtp-q4_K_M", "ollama:hf.co/unsloth/Tiny-GGUF:Q8_0", "ollama:someone/tiny",
                   "ollama:QWEN3.6:27B-MTP-Q4_K_M"):
        report = mtpinspect.check(source)
        assert report.source_kind == "ollama" and report.app is not None
        assert Path(report.app.model_file).read_bytes() == ggufs["head"].read_bytes()


def test_head_and_draft_num_predict_is_supported(store: Path, ggufs: dict[str, Path]) -> None:
    write_ollama_model(store, "qwen3.6:27b-mtp-q4_K_M", gguf=ggufs["head"],
                       params={"draft_num_predict": 3, "temperature": 0.6, "stop": ["<|im_end|>"]})
    code, report = check_json("ollama:qwen3.6:27b-mtp-q4_K_M", env={"OLLAMA_MODELS": str(store)})
    ollama = report["runtimes"]["ollama"]
    assert code == 0 and report["source_kind"] == "ollama"
    assert ollama["status"] == "supported" and ollama["setting"] == "PARAMETER draft_num_predict 3"
    assert "--spec-type draft-mtp --spec-draft-n-max 3" in ollama["reason"]
    assert ollama["command"] is None  # nothing to change
    assert report["app"]["parameters"]["temperature"] == 0.6 and report["app"]["draft_num_predict"] == 3
    assert "OLLAMA_MTP_OFF" not in [f["code"] for f in report["findings"]]
    # The llama.cpp command runs the very blob Ollama loads, with the llama-server mtpinspect would run.
    server = server_for_commands().program
    assert report["runtimes"]["llama.cpp"]["command"].startswith(f"{server} -m {report['app']['model_file']} ")
    no_claim_the_apps_cannot(report)


@pytest.mark.parametrize("params", [None, {"temperature": 0.6}, {"draft_num_predict": 0}])
def test_head_without_draft_num_predict_is_off(store: Path, ggufs: dict[str, Path], params: dict | None) -> None:
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"], params=params)
    code, report = check_json("ollama:tiny:head", env={"OLLAMA_MODELS": str(store)})
    ollama = report["runtimes"]["ollama"]
    finding = next(f for f in report["findings"] if f["code"] == "OLLAMA_MTP_OFF")
    assert code == 0 and report["usable"]  # the head works: one setting switches it on
    assert ollama["status"] == "off" and finding["severity"] == "warning"
    said = "sets draft_num_predict 0" if params and "draft_num_predict" in params else "sets no draft_num_predict"
    assert said in finding["message"] and "Ollama decodes without speculation" in finding["message"]
    # A request's options or `/set parameter` turn it on without a new Modelfile (server/routes.go 136-156).
    assert "unless a request's \"options\"" in finding["message"] and "/set parameter draft_num_predict" in finding["message"]
    assert ollama["setting"] == "PARAMETER draft_num_predict 2"
    assert ollama["command"] == ollama_create_command("tiny:head", "tiny:head", 2)
    assert "off in ollama" in report["verdict"]
    no_claim_the_apps_cannot(report)


def test_mtp_tag_without_head_or_drafter(store: Path, ggufs: dict[str, Path]) -> None:
    write_ollama_model(store, "tiny:1b-mtp", gguf=ggufs["nohead"], params={"draft_num_predict": 3})
    code, report = check_json("ollama:tiny:1b-mtp", env={"OLLAMA_MODELS": str(store)})
    finding = next(f for f in report["findings"] if f["code"] == "OLLAMA_TAG_WITHOUT_HEAD")
    assert code == 1 and report["runtimes"]["ollama"]["status"] == "unsupported"
    assert "the tag is named tiny:1b-mtp" in finding["message"] and "no DRAFT layer" in finding["message"]
    no_claim_the_apps_cannot(report)
    # The same GGUF under a plain name is just a model without a head.
    write_ollama_model(store, "tiny:plain", gguf=ggufs["nohead"])
    _, plain = check_json("ollama:tiny:plain", env={"OLLAMA_MODELS": str(store)})
    assert "OLLAMA_TAG_WITHOUT_HEAD" not in [f["code"] for f in plain["findings"]]


@pytest.mark.parametrize("params", [None, {"draft_num_predict": 2}])
def test_drafter_layer_is_the_sidecar(store: Path, ggufs: dict[str, Path], params: dict | None) -> None:
    manifest = write_ollama_model(store, "tiny:drafted", gguf=ggufs["main"], draft=ggufs["sidecar"], params=params)
    code, report = check_json("ollama:tiny:drafted", env={"OLLAMA_MODELS": str(store)})
    draft_blob = str(blob_path(store, manifest, DRAFT))
    codes = [f["code"] for f in report["findings"]]
    assert code == 0 and report["layout"] == "sidecar" and "OLLAMA_DRAFT_LAYER" in codes
    assert report["app"]["draft_file"] == draft_blob
    assert f"-md {draft_blob}" in report["runtimes"]["llama.cpp"]["command"]
    n_max = 2 if params else 4  # Ollama's default with a DRAFT layer
    assert report["runtimes"]["ollama"]["status"] == "supported"
    assert f"--spec-draft-n-max {n_max} --spec-draft-backend-sampling and the DRAFT layer" in report["runtimes"]["ollama"]["reason"]
    assert report["runtimes"]["ollama"]["setting"] == f"PARAMETER draft_num_predict {n_max}"
    # Released LM Studio versions do not load an mtp- file as an MTP drafter (bug tracker #2244).
    lm = report["runtimes"]["lm-studio"]
    assert lm["status"] == "unsupported" and "lmstudio-bug-tracker#2244" in lm["reason"]
    no_claim_the_apps_cannot(report)


def test_damaged_blob_is_exit_2_one_line(store: Path, ggufs: dict[str, Path]) -> None:
    manifest = write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    blob = blob_path(store, manifest, MODEL)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other content
    blob.write_bytes(bytes(data))
    line = one_line_error(cli("check", "ollama:tiny:head", env={"OLLAMA_MODELS": str(store)}))
    assert str(blob) in line and "does not match its digest" in line
    blob.write_bytes(bytes(data[:1000]))  # cut short
    line = one_line_error(cli("check", "ollama:tiny:head", env={"OLLAMA_MODELS": str(store)}))
    assert f"holds 1,000 bytes, the manifest says {len(data):,}" in line


def test_large_blobs_are_hashed_only_when_asked(store: Path, ggufs: dict[str, Path], tmp_path: Path) -> None:
    # A GGUF followed by zeros up to past DIGEST_LIMIT (sparse, so cheap on disk), then one byte changed.
    big = tmp_path / "big.gguf"
    big.write_bytes(ggufs["head"].read_bytes())
    with open(big, "r+b") as f:
        f.truncate(ollama_store.DIGEST_LIMIT + (1 << 20))
    manifest = write_ollama_model(store, "tiny:big", gguf=big, params={"draft_num_predict": 2})
    blob = blob_path(store, manifest, MODEL)
    with open(blob, "r+b") as f:
        f.seek(ollama_store.DIGEST_LIMIT)
        f.write(b"\x01")
    report = mtpinspect.check("ollama:tiny:big")
    assert report.app is not None and report.app.digests is not None
    assert "size only: model (65 MiB)" in report.app.digests and "sha256 verified: config, params" in report.app.digests
    with pytest.raises(SourceError, match="does not match its digest"):
        mtpinspect.check("ollama:tiny:big", verify_digest=True)
    line = one_line_error(cli("check", "ollama:tiny:big", "--verify-digest", env={"OLLAMA_MODELS": str(store)}))
    assert "does not match its digest" in line


def test_missing_store_model_and_tag_say_what_was_looked_for(store: Path, ggufs: dict[str, Path], tmp_path: Path) -> None:
    env = {"OLLAMA_MODELS": str(store)}
    line = one_line_error(cli("check", "ollama:qwen3.6", env=env))
    assert f"no Ollama store at {store} (OLLAMA_MODELS)" in line
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    write_ollama_model(store, "tiny:other", gguf=ggufs["head"])
    line = one_line_error(cli("check", "ollama:qwen3.6:27b", env=env))
    assert "no model qwen3.6" in line and "manifests/registry.ollama.ai/library/qwen3.6/27b" in line
    assert f"the Ollama store {store}" in line and "models there: tiny" in line
    line = one_line_error(cli("check", "ollama:tiny", env=env))
    assert "no tag 'latest' of tiny" in line and "its tags: head, other" in line
    # Without OLLAMA_MODELS the store is ~/.ollama/models.
    line = one_line_error(cli("check", "ollama:tiny:head", env={"OLLAMA_MODELS": "", **home_env(tmp_path / "home")}))
    assert f"no Ollama store at {tmp_path / 'home' / '.ollama' / 'models'}" in line


def test_bad_stores_are_one_line(store: Path, ggufs: dict[str, Path]) -> None:
    env = {"OLLAMA_MODELS": str(store)}
    manifest = write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    blob_path(store, manifest, MODEL).unlink()
    assert "which is not in" in one_line_error(cli("check", "ollama:tiny:head", env=env))
    manifest.write_text('{"schemaVersion": 2, "layers": [')
    assert "not valid JSON" in one_line_error(cli("check", "ollama:tiny:head", env=env))
    write_ollama_model(store, "tiny:odd", gguf=ggufs["head"], params={"draft_num_predict": "three"})
    assert "draft_num_predict is 'three', not a whole number" in one_line_error(cli("check", "ollama:tiny:odd", env=env))
    # An MLX model's tensor layer names its tensor; one without a name is no manifest Ollama writes.
    tensor = add_blob(store, b"\0" * 64, TENSOR)
    write_ollama_model(store, "mlx:bf16", gguf=None, template=None, extra_layers=[tensor])
    assert "has no name" in one_line_error(cli("check", "ollama:mlx:bf16", env=env))
    assert "not an Ollama model name" in one_line_error(cli("check", "ollama:../etc:x", env=env))


def test_all_lists_every_model(store: Path, ggufs: dict[str, Path]) -> None:
    write_ollama_model(store, "qwen3.6:27b-mtp-q4_K_M", gguf=ggufs["head"], params={"draft_num_predict": 3})
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    write_ollama_model(store, "tiny:1b-mtp", gguf=ggufs["nohead"])
    write_ollama_model(store, "hf.co/org/Tiny-GGUF:Q8_0", gguf=ggufs["main"], draft=ggufs["sidecar"])
    write_ollama_model(store, "gpt-oss:120b-cloud", gguf=None, config_extra={"remote_host": "https://ollama.com:443"})
    env = {"OLLAMA_MODELS": str(store)}
    code, reports = check_json("ollama:", "--all", env=env)
    rows = {r["app"]["name"]: (r["runtimes"]["ollama"]["status"], r["layout"]) for r in reports}
    assert code == 0
    assert rows == {
        "hf.co/org/Tiny-GGUF:Q8_0": ("supported", "sidecar"),
        "qwen3.6:27b-mtp-q4_K_M": ("supported", "bundled"),
        "tiny:1b-mtp": ("unsupported", "none"),
        "tiny:head": ("off", "bundled"),
    }
    assert any("gpt-oss:120b-cloud: a cloud model" in note for note in reports[0]["notes"])
    table = cli("check", "ollama:", "--all", env=env)
    assert table.returncode == 0 and "Ollama: 4 model(s)" in table.stdout and "draft_num_predict" in table.stdout
    code, tags = check_json("ollama:tiny", "--all", env=env)
    assert sorted(r["app"]["name"] for r in tags) == ["tiny:1b-mtp", "tiny:head"]
    assert "--all checks every tag" in one_line_error(cli("check", "ollama:tiny:head", "--all", env=env))


def test_all_gives_a_damaged_model_its_row(store: Path, ggufs: dict[str, Path]) -> None:
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"], params={"draft_num_predict": 2})
    manifest = write_ollama_model(store, "tiny:cut", gguf=ggufs["nohead"])
    blob = blob_path(store, manifest, MODEL)
    blob.write_bytes(blob.read_bytes()[:4096])
    env = {"OLLAMA_MODELS": str(store)}
    code, reports = check_json("ollama:", "--all", env=env)
    rows = {r["source"]: r for r in reports}
    assert code == 0 and rows["ollama:tiny:head"]["runtimes"]["ollama"]["status"] == "supported"
    assert "holds 4,096 bytes" in rows["ollama:tiny:cut"]["error"]
    table = cli("check", "ollama:", "--all", env=env)
    assert "ollama:tiny:cut" in table.stdout and "error:" in table.stdout
    (store / "blobs" / blob_path(store, manifest, MODEL).name).unlink()
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    blob_path(store, store / "manifests/registry.ollama.ai/library/tiny/head", MODEL).write_bytes(b"GGUF")
    assert "none of the 2 GGUF models could be read" in one_line_error(cli("check", "ollama:", "--all", env=env))


# -- LM Studio ------------------------------------------------------------------------------------


def test_lm_studio_repo_bundled_sidecar_and_legacy_folder(tmp_path: Path, ggufs: dict[str, Path]) -> None:
    home = tmp_path / "home"
    env = home_env(home)
    write_lmstudio_repo(home, "lmstudio-community/Tiny-GGUF", [ggufs["head"]])
    write_lmstudio_repo(home, "unsloth/Tiny-Pair-GGUF", [ggufs["main"], ggufs["sidecar"]])
    code, report = check_json("lmstudio:lmstudio-community/Tiny-GGUF", env=env)
    lm = report["runtimes"]["lm-studio"]
    assert code == 0 and report["source_kind"] == "lm-studio" and lm["status"] == "supported"
    assert lm["setting"] == app_setting(App.lm_studio, 2)
    assert lm["setting"] == '"Draft MTP" on, "Max Draft Tokens" 2, "Min Draft Tokens" 0, "Drafting Probability Cutoff" 0'
    assert "0.4.14" in lm["reason"]
    assert report["app"]["model_file"] == str(home / ".lmstudio/models/lmstudio-community/Tiny-GGUF" / ggufs["head"].name)
    no_claim_the_apps_cannot(report)
    code, pair = check_json("lmstudio:unsloth/Tiny-Pair-GGUF", env=env)
    assert pair["layout"] == "sidecar" and pair["files"]["sidecar"] == [ggufs["sidecar"].name]
    assert pair["runtimes"]["llama.cpp"]["status"] == "supported" and pair["runtimes"]["lm-studio"]["status"] == "unsupported"
    assert "DRAFT" in pair["runtimes"]["ollama"]["command"]  # Ollama takes the sidecar as a DRAFT layer
    no_claim_the_apps_cannot(pair)
    code, every = check_json("lmstudio:", "--all", env=env)
    assert sorted(r["app"]["name"] for r in every) == ["lmstudio-community/Tiny-GGUF", "unsloth/Tiny-Pair-GGUF"]
    # Where ~/.cache/lm-studio exists LM Studio makes it its home (findLMStudioHome.ts), whatever ~/.lmstudio holds.
    write_lmstudio_repo(home, "old/Legacy-GGUF", [ggufs["nohead"]], legacy=True)
    code, legacy = check_json("lmstudio:old/Legacy-GGUF", env=env)
    assert code == 1 and legacy["app"]["location"] == str(home / ".cache/lm-studio/models/old/Legacy-GGUF")
    assert "~/.cache/lm-studio" not in json.dumps(legacy)
    line = one_line_error(cli("check", "lmstudio:lmstudio-community/Tiny-GGUF", env=env))
    assert "the older home exists" in line and str(home / ".cache/lm-studio/models") in line
    line = one_line_error(cli("check", "lmstudio:nobody/Nothing-GGUF", env=env))
    assert "no folder nobody/Nothing-GGUF in LM Studio's models folder" in line
    assert "old/Legacy-GGUF" in line  # what is there
    line = one_line_error(cli("check", "lmstudio:a/b", env=home_env(tmp_path / "empty")))
    assert "no LM Studio models folder" in line and ".lmstudio/models" in line


def test_lm_studio_quant_picks_one_of_several(tmp_path: Path, ggufs: dict[str, Path]) -> None:
    home = tmp_path / "home"
    folder = write_lmstudio_repo(home, "org/Tiny-GGUF", [ggufs["head"]])
    (folder / "tiny-Q8_0.gguf").write_bytes(ggufs["nohead"].read_bytes())
    env = home_env(home)
    assert "pick one with" in one_line_error(cli("check", "lmstudio:org/Tiny-GGUF", env=env))
    _, q8 = check_json("lmstudio:org/Tiny-GGUF:Q8_0", env=env)
    _, f32 = check_json("lmstudio:org/Tiny-GGUF:F32", env=env)
    assert (q8["files"]["gguf"], q8["mtp_layers"]) == (["tiny-Q8_0.gguf"], 0)
    assert (f32["files"]["gguf"], f32["mtp_layers"]) == ([ggufs["head"].name], 1)


def test_every_gguf_verdict_names_the_apps(tmp_path: Path, ggufs: dict[str, Path]) -> None:
    """A GGUF from anywhere gets the apps' verdicts, and the Modelfile that runs its head."""
    report = mtpinspect.check(str(ggufs["head"]))
    ollama, lm = report.runtimes["ollama"], report.runtimes["lm-studio"]
    assert ollama.status == "supported" and lm.status == "supported"
    assert ollama.command == ollama_create_command(str(ggufs["head"]), "tiny-f32-mtp", 2)
    pair = mtpinspect.check(str(ggufs["main"]))
    assert pair.runtimes["ollama"].setting == f"DRAFT {ggufs['sidecar']}; PARAMETER draft_num_predict 2"
    none = mtpinspect.check(str(ggufs["nohead"]))
    assert none.runtimes["ollama"].status == "unsupported"
    assert none.runtimes["ollama"].reason == f"Ollama runs llama.cpp's llama-server; for it: {none.runtimes['llama.cpp'].reason}"
    assert not any("Ollama" in note or "LM Studio" in note for r in (report, pair, none) for note in r.notes)


def test_usage_errors(store: Path, ggufs: dict[str, Path]) -> None:
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    with pytest.raises(UsageError, match="--mtp-file applies to GGUF files and folders"):
        mtpinspect.check("ollama:tiny:head", mtp_file=str(ggufs["sidecar"]))
    with pytest.raises(UsageError, match="--revision"):
        mtpinspect.check("ollama:tiny:head", revision="main")
    with pytest.raises(UsageError, match="name the model"):
        mtpinspect.check("ollama:")
    with pytest.raises(FormatError, match="not a sweep report"):
        mtpinspect.check("ollama:tiny:head", sweep_report=ggufs["head"])


# -- measured on the real llama-server ----------------------------------------------------------


@pytest.mark.server
def test_sweep_of_an_ollama_model_and_check_with_its_report(store: Path, ggufs: dict[str, Path], tmp_path: Path) -> None:
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"], params={"temperature": 0.6})
    out = tmp_path / "sweep"
    done = cli("sweep", "ollama:tiny:head", "--n-max", "1,2", "--repeat", "1", "--prompts", "code", "--n-predict", "32",
               "--out", str(out), "--no-plot", "--", *THREADS, env={"OLLAMA_MODELS": str(store)})
    assert done.returncode == 0, done.stderr
    doc = json.loads((out / "report.json").read_text())
    jsonschema.validate(doc, SWEEP_SCHEMA)
    n_max = doc["recommendation"]["n_max"]
    blob = mtpinspect.check("ollama:tiny:head").app.model_file  # type: ignore[union-attr]
    assert doc["model"] == blob and doc["runs"]["ok"] == doc["runs"]["planned"] == 9  # 3 configurations x 3 code prompts
    assert doc["app"]["app"] == "ollama" and doc["app"]["name"] == "tiny:head"
    assert doc["app"]["setting"].startswith(app_setting(App.ollama, n_max))
    assert f"in Ollama (tiny:head): {doc['app']['setting']}" in done.stdout
    # Ollama's current setting (none: off) is what a "leave it off" recommends; otherwise the Modelfile to change it.
    assert (doc["app"]["command"] is None) == (n_max is None)
    report = mtpinspect.check("ollama:tiny:head", sweep_report=out / "report.json")
    assert report.app_n_max is not None and report.app_n_max.measured and report.app_n_max.n_max == n_max
    assert report.runtimes["ollama"].setting is not None
    assert report.runtimes["ollama"].setting.startswith(app_setting(App.ollama, n_max).split(" (")[0])
    assert report.runtimes["lm-studio"].setting == app_setting(App.lm_studio, n_max)
    # A sweep of another GGUF is refused.
    write_ollama_model(store, "tiny:plain", gguf=ggufs["nohead"])
    with pytest.raises(UsageError, match="a sweep of .*, not of"):
        mtpinspect.check("ollama:tiny:plain", sweep_report=out / "report.json")


@pytest.mark.server
def test_sweep_takes_the_draft_layer(store: Path, ggufs: dict[str, Path], tmp_path: Path) -> None:
    manifest = write_ollama_model(store, "tiny:drafted", gguf=ggufs["main"], draft=ggufs["sidecar"])
    report = run_sweep("ollama:tiny:drafted", SweepOptions(
        n_max=(2,), repeat=1, prompts="code", n_predict=32, out_dir=tmp_path / "sweep", plot=False, server_args=THREADS))
    draft_blob = str(blob_path(store, manifest, DRAFT))
    assert report.settings["mtp_file"] == draft_blob
    mtp = [g for g in report.results if g.n_max == 2]
    assert mtp and all(g.drafted > 0 and g.acceptance and g.acceptance > 0.9 for g in mtp)
    assert report.app is not None and report.app.app is App.ollama


@pytest.mark.server
def test_sweep_of_an_lm_studio_repo(tmp_path: Path, ggufs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    for key, value in home_env(home).items():
        monkeypatch.setenv(key, value)
    write_lmstudio_repo(home, "lmstudio-community/Tiny-GGUF", [ggufs["head"]])
    report = run_sweep("lmstudio:lmstudio-community/Tiny-GGUF", SweepOptions(
        n_max=(1,), repeat=1, prompts="code", n_predict=32, out_dir=tmp_path / "sweep", plot=False, server_args=THREADS))
    assert report.app is not None and report.app.app is App.lm_studio and report.app.command is None
    assert report.app.setting == app_setting(App.lm_studio, report.recommendation.n_max)


@pytest.mark.server
def test_diagnose_ollama_model_without_draft_num_predict(store: Path, ggufs: dict[str, Path]) -> None:
    from mtpinspect.diagnosis import diagnose
    from mtpinspect.jsonable import to_jsonable

    write_ollama_model(store, "tiny:head", gguf=ggufs["head"])
    report = diagnose("ollama:tiny:head", server_args=THREADS, n_predict=32)
    jsonschema.validate(to_jsonable(report), DIAGNOSE_SCHEMA)
    first = report.causes[0]
    assert first.code == "MTP_NOT_ENABLED"
    assert first.fix.startswith("in Ollama: " + ollama_create_command("tiny:head", "tiny:head", 2))
    # The run is what Ollama starts: no --spec-type, its default temperature, and its default -c (4096 under
    # 23 GiB of VRAM) capped at the tiny model's training context, 2048.
    assert report.server_args.spec_type is None and report.server_args.temperature == 0.8
    assert report.server_args.ctx_size == 2048
    assert "HIGH_TEMPERATURE" in [c.code for c in report.causes]
    assert any("the Modelfile sets no temperature" in note for note in report.notes)
    assert report.probe is not None and any(f.drafted for f in report.probe.mtp_figures())


@pytest.mark.server
def test_diagnose_ollama_model_uses_the_modelfile_settings(store: Path, ggufs: dict[str, Path]) -> None:
    from mtpinspect.diagnosis import diagnose

    write_ollama_model(store, "tiny:head", gguf=ggufs["head"],
                       params={"draft_num_predict": 3, "temperature": 0, "num_ctx": 512})
    report = diagnose("ollama:tiny:head", server_args=THREADS, n_predict=32)
    args = report.server_args
    assert (args.spec_type, args.n_max, args.temperature, args.ctx_size, args.threads) == ("draft-mtp", 3, 0.0, 512, 1)
    # The rest of what Ollama passes (llm/llama_server.go 369-400, 807-824).
    assert "--spec-draft-backend-sampling" in args and args.value(FLASH_ATTN) == "auto"
    assert (args.value(PARALLEL), args.value(BATCH), args.value(UBATCH)) == ("1", "512", "512")
    assert any("pinned llama.cpp 0c1e570" in note and "another build" in note for note in report.notes)
    assert report.probe is not None and report.probe.as_given is not None
    assert report.probe.as_given.drafted  # the run as Ollama starts it drafts
    assert "MTP_NOT_ENABLED" not in [c.code for c in report.causes]
    assert "HIGH_TEMPERATURE" not in [c.code for c in report.causes]
    for cause in report.causes:
        if cause.code in ("SLOWER_THAN_BASELINE", "NMAX_TOO_HIGH"):
            assert cause.fix.startswith("in Ollama: PARAMETER draft_num_predict")


@pytest.mark.server
def test_diagnose_mtp_tag_without_head(store: Path, ggufs: dict[str, Path]) -> None:
    from mtpinspect.diagnosis import diagnose

    write_ollama_model(store, "tiny:1b-mtp", gguf=ggufs["nohead"], params={"draft_num_predict": 3})
    report = diagnose("ollama:tiny:1b-mtp", server_args=THREADS, n_predict=32)
    assert report.causes[0].code in ("MTP_WEIGHTS_MISSING", "NO_MTP_HEAD")
    assert report.causes[0].fix.startswith("in Ollama: a tag whose GGUF carries the head")
    assert report.server_args.spec_type is None  # Ollama passes no --spec-type without a head
    assert any("there is no head to draft with" in note for note in report.notes)


# -- the apps as their sources run them (mtpinspect/app_facts.py) ------------------------------------


class _VersionStandIn(http.server.BaseHTTPRequestHandler):
    """Ollama's GET /api/version (server/routes.go 1880), answering the version the test sets."""

    version = "0.32.15"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"version": self.version}).encode() if self.path == "/api/version" else b"404"
        self.send_response(200 if self.path == "/api/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def ollama_server(monkeypatch: pytest.MonkeyPatch):
    """A loopback stand-in for the running Ollama server; OLLAMA_HOST points at it. Yields a setter."""
    handler = type("Handler", (_VersionStandIn,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{server.server_address[1]}")

    def answer(version: str) -> None:
        handler.version = version

    yield answer
    server.shutdown()
    server.server_close()


@pytest.fixture()
def no_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Ollama server answering: OLLAMA_HOST at a closed loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")


def dflash_gguf(path: Path) -> Path:
    """A DFlash drafter's GGUF header (general.architecture dflash), as Ollama's externalDraftType reads it."""
    return write_gguf(path, arch="dflash", metadata={"dflash.block_count": 1, "dflash.embedding_length": 64},
                      tensors=[TensorSpec("blk.0.attn_q.weight", (64, 64)), TensorSpec("fc.weight", (128, 64))])


def test_dflash_draft_layer_runs_as_draft_dflash(store: Path, ggufs: dict[str, Path], tmp_path: Path,
                                                 ollama_server) -> None:
    from mtpinspect.diagnosis.app_terms import ollama_run_settings

    drafter = dflash_gguf(tmp_path / "dflash-tiny.gguf")
    write_ollama_model(store, "tiny:dflash", gguf=ggufs["main"], draft=drafter, draft_architecture="dflash",
                       params={"draft_num_predict": 6})
    ollama_server("0.32.15")
    report = mtpinspect.check("ollama:tiny:dflash")
    finding = next(f for f in report.findings if f.code == "OLLAMA_DRAFT_LAYER")
    assert "--spec-type draft-dflash" in finding.message and "draft-mtp" not in finding.message
    args, origin = ollama_run_settings(report.app, report)
    assert (args.spec_type, args.n_max) == ("draft-dflash", 6) and "--spec-draft-backend-sampling" not in args
    assert args.draft_model == report.app.draft_file
    # Before 0.32.7 Ollama started every DRAFT layer as draft-mtp (llm/llama_server.go, commit 43f4eda).
    ollama_server("0.32.6")
    report = mtpinspect.check("ollama:tiny:dflash")
    args, origin = ollama_run_settings(report.app, report)
    assert args.spec_type == "draft-mtp" and "--spec-draft-backend-sampling" in args
    assert any("Ollama 0.32.6" in line and "vendors llama.cpp b10242" in line and "0c1e570" in line for line in origin)


def test_two_model_layers_the_last_wins(store: Path, ggufs: dict[str, Path], no_ollama: None) -> None:
    manifest = write_ollama_model(store, "tiny:two", gguf=ggufs["head"], draft=ggufs["sidecar"],
                                  extra_layers=[add_file_blob(store, ggufs["nohead"], MODEL),
                                                add_file_blob(store, ggufs["main"], DRAFT)])
    report = mtpinspect.check("ollama:tiny:two")
    layers = json.loads(manifest.read_text())["layers"]
    last_model = [entry for entry in layers if entry["mediaType"] == MODEL][-1]["digest"].replace(":", "-")
    assert Path(report.app.model_file).name == last_model and report.mtp_layers == 0
    assert Path(report.app.draft_file).read_bytes() == ggufs["main"].read_bytes()
    assert any("2 model layers; Ollama loads the last one" in n for n in report.notes)
    assert any("2 draft layers; Ollama loads the last one" in n for n in report.notes)


def test_service_store_is_found(tmp_path: Path, ggufs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                no_ollama: None) -> None:
    from mtpinspect import app_facts

    service = tmp_path / "usr/share/ollama/.ollama/models"
    monkeypatch.setattr(app_facts, "OLLAMA_SERVICE_STORE", service)  # where the Linux installer's service keeps it
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(SourceError, match=f"Linux service's store {service} holds none"):
        mtpinspect.check("ollama:tiny:head")
    write_ollama_model(service, "tiny:head", gguf=ggufs["head"], params={"draft_num_predict": 2})
    report = mtpinspect.check("ollama:tiny:head")
    assert report.app.location.startswith(str(service)) and report.runtimes["ollama"].status == "supported"
    # The user's own store, once it exists, comes first (as `ollama serve` run by the user uses it).
    write_ollama_model(tmp_path / "home/.ollama/models", "tiny:head", gguf=ggufs["nohead"])
    assert mtpinspect.check("ollama:tiny:head").app.location.startswith(str(tmp_path / "home/.ollama/models"))


QWEN35_MLX = {"model_type": "qwen3_5_text", "architectures": ["Qwen3_5ForCausalLM"], "num_hidden_layers": 2,
              "hidden_size": 64, "vocab_size": 128, "mtp_num_hidden_layers": 1}
TRUNK = {"model.embed_tokens.weight": ("BF16", [128, 64]), "model.layers.0.mlp.up_proj.weight": ("BF16", [64, 64]),
         "model.layers.1.mlp.up_proj.weight": ("BF16", [64, 64]), "lm_head.weight": ("BF16", [128, 64])}
HEAD = {"mtp.fc.weight": ("BF16", [64, 128]), "mtp.layers.0.mlp.up_proj.weight": ("BF16", [64, 64]),
        "mtp.norm.weight": ("BF16", [64])}


@pytest.mark.parametrize("kind", ["head", "none", "drafter"])
def test_mlx_model_is_judged_from_its_safetensors(store: Path, kind: str, no_ollama: None) -> None:
    tensors = {**TRUNK, **(HEAD if kind == "head" else {})}
    if kind == "drafter":
        tensors["draft.layers.0.mlp.up_proj.weight"] = ("BF16", [64, 64])
    config = {**QWEN35_MLX, "mtp_num_hidden_layers": 1 if kind == "head" else 0}
    write_ollama_mlx_model(store, f"qwen-mlx:{kind}", config=config, tensors=tensors,
                           draft_config={"model_type": "dflash"} if kind == "drafter" else None)
    code, report = check_json(f"ollama:qwen-mlx:{kind}", env={"OLLAMA_MODELS": str(store), "OLLAMA_HOST": os.environ["OLLAMA_HOST"]})
    ollama = report["runtimes"]["ollama"]
    assert report["app"]["engine"] == "mlx" and report["source_kind"] == "ollama"
    if kind == "head":
        assert report["mtp_layers"] == 1 and ollama["status"] == "supported"
        assert "MTP head (1 layer(s)) by itself" in ollama["reason"] and "draft_num_predict is not read" in ollama["reason"]
    elif kind == "drafter":
        assert ollama["status"] == "supported" and "drafter stored in the manifest" in ollama["reason"]
    else:
        assert report["mtp_layers"] == 0 and ollama["status"] == "unsupported"
        assert "hold no MTP head" in ollama["reason"]
    no_claim_the_apps_cannot(report)
    # --all gives it its row instead of skipping it.
    _, rows = check_json("ollama:", "--all", env={"OLLAMA_MODELS": str(store), "OLLAMA_HOST": os.environ["OLLAMA_HOST"]})
    assert [r["app"]["engine"] for r in rows] == ["mlx"]


@pytest.mark.parametrize(("version", "status"), [("0.29.3", "unsupported"), ("0.32.15", "supported")])
def test_ollama_version_is_asked_and_spoken(store: Path, ggufs: dict[str, Path], ollama_server, version: str,
                                            status: str) -> None:
    write_ollama_model(store, "tiny:head", gguf=ggufs["head"], params={"draft_num_predict": 3})
    ollama_server(version)
    report = mtpinspect.check("ollama:tiny:head")
    assert report.app.version == version and report.runtimes["ollama"].status == status
    if status == "unsupported":
        assert f"Ollama {version} (the server running here) runs GGUFs on its own runner" in report.runtimes["ollama"].reason
    else:
        assert f"Ollama {version} starts llama-server with --spec-type draft-mtp --spec-draft-n-max 3 " \
               "--spec-draft-backend-sampling" in report.runtimes["ollama"].reason


def test_lm_studio_home_pointer_downloads_folder_and_engine(tmp_path: Path, ggufs: dict[str, Path]) -> None:
    home, lm_home, models = tmp_path / "home", tmp_path / "elsewhere/lmstudio", tmp_path / "big-disk/models"
    write_lmstudio_pointer(home, lm_home)
    write_lmstudio_settings(lm_home, models)
    write_lmstudio_repo(home, "acme/Tiny-GGUF", [ggufs["head"]], models=models)
    write_lmstudio_repo(home, "decoy/Tiny-GGUF", [ggufs["head"]])  # ~/.lmstudio/models: not LM Studio's folder now
    env = home_env(home)
    write_lmstudio_engine(lm_home, "2.14.0")
    code, old = check_json("lmstudio:acme/Tiny-GGUF", env=env)
    assert old["app"]["location"] == str(models / "acme/Tiny-GGUF") and old["app"]["version"] == "2.14.0"
    assert old["runtimes"]["lm-studio"]["status"] == "unsupported" and "too old for MTP" in old["runtimes"]["lm-studio"]["reason"]
    write_lmstudio_engine(lm_home, "2.29.0", "linux-x86_64-nvidia-cuda12-avx2")
    _, new = check_json("lmstudio:acme/Tiny-GGUF", env=env)
    lm = new["runtimes"]["lm-studio"]
    assert lm["status"] == "supported" and "newest engine installed here: 2.29.0" in lm["reason"]
    assert lm["setting"] == app_setting(App.lm_studio, 2) and '"Draft MTP" on' in lm["setting"]
    _, every = check_json("lmstudio:", "--all", env=env)
    assert [r["app"]["name"] for r in every] == ["acme/Tiny-GGUF"]
    line = one_line_error(cli("check", "lmstudio:decoy/Tiny-GGUF", env=env))
    assert f"downloadsFolder in {lm_home / 'settings.json'}" in line and f"named in {home / '.lmstudio-home-pointer'}" in line


def test_app_facts_have_sources_and_version_ranges() -> None:
    from mtpinspect import app_facts

    facts = [n for n in vars(app_facts) if n.isupper() and not n.startswith("_") and n not in
             ("SOURCES", "OLLAMA_HEAD", "LMSTUDIO_JS_HEAD", "CHECKED_ON")]
    assert sorted(set(facts) - set(app_facts.SOURCES)) == []
    assert all(str(source).count(" at ") >= 1 for source in app_facts.SOURCES.values())
    build = app_facts.ollama_llama_cpp_build
    assert (build("0.29.9"), build("0.30.0"), build("0.30.3"), build("0.32.7"), build("0.32.15"), build("0.33.0-rc2"),
            build("0.34.0")) == (None, "b9452", "b9479", "b10242", "b10488", "b10488", None)
    assert app_facts.ollama_default_num_ctx(8) == 4096 and app_facts.ollama_default_num_ctx(48) == 262144


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, from the import statements (TYPE_CHECKING ones and those
    inside functions too)."""
    import ast

    root = Path(mtpinspect.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        module = ".".join(("mtpinspect", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mtpinspect"):
                if node.module != "mtpinspect":  # `from mtpinspect import app_facts` imports the module, not the package's API
                    found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("mtpinspect"))
        graph[module] = found
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def test_no_import_cycles_and_sources_import_no_higher_floor() -> None:
    """No module of the package reaches itself through its imports (no cycle anywhere, e.g.
    inspection.evidence <-> inspection.pairing), and nothing in sources/ imports a floor above it."""
    graph = _import_graph()
    sources = [m for m in graph if m.startswith("mtpinspect.sources")]
    allowed = ("mtpinspect.sources", "mtpinspect.app_facts", "mtpinspect.vocabulary", "mtpinspect.errors",
               "mtpinspect.files", "mtpinspect.jsonable", "mtpinspect.cache_dir", "mtpinspect.workers")
    upward = {m: sorted(d for d in graph[m] if not d.startswith(allowed)) for m in sources}
    assert {m: d for m, d in upward.items() if d} == {}

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for dep in graph[todo.pop()] - seen:
                seen.add(dep)
                todo.append(dep)
        return seen

    assert {"mtpinspect.inspection.evidence", "mtpinspect.inspection.pairing", "mtpinspect.apps"} <= graph.keys()
    assert "mtpinspect.inspection.pairing" in graph["mtpinspect.inspection.evidence"]  # the edge the walk must see
    assert sorted(m for m in graph if m in reach(m)) == []


# The package's floors, lowest first: a module imports from its own floor or a lower one, never a higher
# one. Inspection reads a sweep's report (check --sweep-report), so sweep/ sits below it; diagnose combines both.
FLOORS = (
    ("vocabulary", "causes", "errors", "formulas", "units", "app_facts", "jsonable", "files", "cache_dir", "workers"),
    ("sources", "runtime", "tiny_drafts"),
    ("formats", "apps", "training"),
    ("tiny_model", "trained_model"),
    ("sweep",),
    ("drift",),
    ("inspection",),
    ("logread",),
    ("diagnosis",),
    ("cli", "__main__", ""),  # "": the package's own __init__, whose API imports inspection on first use
)


def test_every_import_goes_to_the_same_or_a_lower_floor() -> None:
    floor = {name: level for level, names in enumerate(FLOORS) for name in names}

    def of(module: str) -> int:
        return floor[module.split(".")[1] if "." in module else ""]

    graph = _import_graph()
    assert sorted({(m.split(".") + [""])[1] for m in graph} - floor.keys()) == []  # every package has a floor
    upward = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps if of(d) > of(m))
    assert upward == []


def test_gemma4_assistant_is_not_an_lm_studio_drafter(tmp_path: Path) -> None:
    """A Gemma 4 target with its assistant drafter beside it (headers only; the engine is not asked: a loadable
    Gemma 4 needs more than a tiny header): LM Studio's released versions cannot draft with the assistant
    (bug tracker #2229, #2150, #2044); llama-server -md and an Ollama DRAFT layer (draft-mtp) can."""
    write_gguf(tmp_path / "gemma-4-tiny.gguf", arch="gemma4",
               metadata={"gemma4.block_count": 2, "gemma4.embedding_length": 64, "gemma4.context_length": 2048},
               tensors=[TensorSpec("token_embd.weight", (64, 128)), TensorSpec("blk.0.attn_q.weight", (64, 64)),
                        TensorSpec("output_norm.weight", (64,))])
    write_gguf(tmp_path / "mtp-gemma-4-tiny.gguf", arch="gemma4-assistant",
               metadata={"gemma4-assistant.block_count": 1, "gemma4-assistant.nextn_predict_layers": 1,
                         "gemma4-assistant.embedding_length": 64},
               tensors=[TensorSpec("blk.0.attn_q.weight", (64, 64)), TensorSpec("nextn.pre_projection.weight", (128, 64)),
                        TensorSpec("nextn.post_projection.weight", (64, 64))])
    report = mtpinspect.check(str(tmp_path / "gemma-4-tiny.gguf"), verify=False)
    lm, ollama = report.runtimes["lm-studio"], report.runtimes["ollama"]
    assert report.layout == "separate-checkpoint" and report.runtimes["llama.cpp"].status == "supported"
    assert lm.status == "unsupported" and "not supported in released LM Studio versions" in lm.reason
    assert "lmstudio-bug-tracker#2229" in lm.reason and "Gemma4Assistant requires ctx_other" in lm.reason
    assert lm.command == report.runtimes["llama.cpp"].command and "--spec-type draft-mtp" in lm.command
    assert ollama.status == "supported" and "DRAFT " in (ollama.command or "")
    assert "drafts with a Gemma 4 assistant" not in json.dumps(to_jsonable(report))
