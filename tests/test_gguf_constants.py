"""The generated table of gguf-py constants (mtpinspect/formats/gguf_constants.py) is what gguf-py gives."""

from __future__ import annotations

import subprocess
import sys

from gguf import constants

from mtpinspect.formats import gguf_constants, gguf_constants_gen


def test_the_checked_in_table_is_what_the_generator_writes_from_the_installed_gguf() -> None:
    # A gguf-py upgrade that adds a ggml type or renames a key fails here until the table is generated again.
    assert gguf_constants_gen.TABLE.read_text(encoding="utf-8") == gguf_constants_gen.render()


def test_the_table_holds_gguf_py_values() -> None:
    for name in gguf_constants_gen.ENUMS:
        ours, theirs = getattr(gguf_constants, name), getattr(constants, name)
        assert {n: int(m) for n, m in ours.__members__.items()} == {n: int(m) for n, m in theirs.__members__.items()}
    assert {int(q): v for q, v in gguf_constants.GGML_QUANT_SIZES.items()} == {int(q): v for q, v in constants.GGML_QUANT_SIZES.items()}
    assert gguf_constants.Keys.Tokenizer.MERGES == constants.Keys.Tokenizer.MERGES == "tokenizer.ggml.merges"
    assert gguf_constants.GGUF_MAGIC == constants.GGUF_MAGIC


def test_check_mode_exits_1_on_a_stale_table(tmp_path, monkeypatch) -> None:
    stale = tmp_path / "gguf_constants.py"
    stale.write_text(gguf_constants_gen.render().replace("GGUF_VERSION = ", "GGUF_VERSION = 9"), encoding="utf-8")
    monkeypatch.setattr(gguf_constants_gen, "TABLE", stale)
    assert gguf_constants_gen.main(["--check"]) == 1
    assert gguf_constants_gen.main([]) == 0  # rewrites it
    assert gguf_constants_gen.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == gguf_constants_gen.render()


def test_the_generator_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "mtpinspect.formats.gguf_constants_gen", "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
