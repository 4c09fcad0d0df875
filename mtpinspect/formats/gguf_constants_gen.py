"""Writes mtpinspect/formats/gguf_constants.py, the GGUF constants the header reader needs, from the
installed gguf-py.

Importing gguf-py imports numpy (about half the start-up time of `check` on a local file); the reader
needs only a few enums, numbers and key names from it. They are copied here into a plain module, and
tests/test_gguf_constants.py regenerates it and compares, so a gguf-py upgrade that changes a constant
(a new ggml type, a renamed key) fails a test until the table is written again:

    python -m mtpinspect.formats.gguf_constants_gen          # rewrite the table
    python -m mtpinspect.formats.gguf_constants_gen --check  # exit 1 when it differs from gguf-py
"""

from __future__ import annotations

import argparse
import sys
from enum import IntEnum
from importlib.metadata import version
from pathlib import Path

TABLE = Path(__file__).with_name("gguf_constants.py")
# The integer enums the reader names types and file types with.
ENUMS = ("GGUFValueType", "GGMLQuantizationType", "LlamaFileType")
# The plain numbers.
NUMBERS = ("GGUF_MAGIC", "GGUF_VERSION", "GGUF_DEFAULT_ALIGNMENT")
# The groups of gguf.constants.Keys whose key names the reader uses.
KEY_GROUPS = ("General", "Tokenizer")


def _enum(cls: type[IntEnum]) -> list[str]:
    lines = [f"class {cls.__name__}(IntEnum):"]
    # __members__ keeps aliases (two names for one value), as gguf-py declares them.
    lines += [f"    {name} = {int(member)}" for name, member in cls.__members__.items()]
    return lines


def _key_group(name: str, group: type) -> list[str]:
    lines = [f"    class {name}:"]
    lines += [f"        {key} = {value!r}" for key, value in vars(group).items()
              if not key.startswith("_") and isinstance(value, str)]
    return lines


def render() -> str:
    """The table's text, from the gguf-py installed here."""
    from gguf import constants  # only here: this is the one import of gguf-py the table saves the others

    lines = [
        f'"""GGUF constants for the header reader, generated from gguf-py {version("gguf")} by',
        "mtpinspect/formats/gguf_constants_gen.py; do not edit (run `python -m mtpinspect.formats.gguf_constants_gen`).",
        "",
        "A plain module, so that reading a GGUF does not import gguf-py and numpy.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        f'GGUF_PY_VERSION = "{version("gguf")}"',
    ]
    lines += [f"{name} = {int(getattr(constants, name))}" for name in NUMBERS]
    for name in ENUMS:
        lines += ["", "", *_enum(getattr(constants, name))]
    lines += ["", "", "# (block size in elements, bytes per block) of each ggml type.",
              "GGML_QUANT_SIZES: dict[GGMLQuantizationType, tuple[int, int]] = {"]
    lines += [f"    GGMLQuantizationType.{qtype.name}: ({block}, {size})," for qtype, (block, size) in constants.GGML_QUANT_SIZES.items()]
    lines += ["}", "", "", "class Keys:"]
    for name in KEY_GROUPS:
        lines += _key_group(name, getattr(constants.Keys, name))
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the checked-in table differs from gguf-py")
    args = parser.parse_args(argv)
    text = render()
    current = TABLE.read_text(encoding="utf-8") if TABLE.exists() else ""
    if args.check:
        if text != current:
            print(f"{TABLE}: differs from the installed gguf-py {version('gguf')}: run "
                  "`python -m mtpinspect.formats.gguf_constants_gen`", file=sys.stderr)
            return 1
        return 0
    if text != current:
        TABLE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
