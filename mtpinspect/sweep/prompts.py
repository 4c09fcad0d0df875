"""Prompt sets for a sweep: the built-in classes, or the user's text and JSONL files.

Acceptance depends on the kind of text (code drafts well, free prose in another language less so), so
every prompt carries a class and the sweep reports per class. A JSONL line is
``{"id": ..., "class": ..., "prompt": ...}`` (``category`` is accepted for ``class``, as in
ik_llama.cpp's spec-bench datasets); a ``.txt`` file is one prompt. When no class is given, the file's
stem is the class, so ``code.txt`` and ``prose.txt`` in one directory make two classes.

Besides the classes there are named *sets* (``cases/prompts/sets/``), each of several classes, never part
of the default: ``mtp-bench-categories`` holds one prompt of our own in each of the nine categories of
mtp-bench.py (the script whose figures users post about MTP), named as it names them, so a sweep's rows
(``--request chat --n-predict 192 --repeat 1``) can be read beside a posted mtp-bench table.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.errors import FormatError, SourceError
from mtpinspect.files import read_bounded

BUILTIN_PACKAGE = "mtpinspect.prompts"
SETS_FOLDER = "sets"
PROMPT_SUFFIXES = (".jsonl", ".txt")
# Prompt sets are kilobytes (spec-bench's whole JSONL is under 1 MiB); the cap only stops runaway input.
MAX_PROMPT_FILE_BYTES = 16 << 20


@dataclass(frozen=True)
class Prompt:
    id: str
    prompt_class: str
    text: str


def builtin_classes() -> list[str]:
    """Names of the built-in prompt classes (code, prose-en, prose-ja, extraction)."""
    root = importlib.resources.files(BUILTIN_PACKAGE)
    return sorted(entry.name[: -len(".jsonl")] for entry in root.iterdir() if entry.name.endswith(".jsonl"))


def builtin_sets() -> list[str]:
    """Names of the built-in prompt sets (mtp-bench-categories)."""
    root = importlib.resources.files(BUILTIN_PACKAGE).joinpath(SETS_FOLDER)
    return sorted(entry.name[: -len(".jsonl")] for entry in root.iterdir() if entry.name.endswith(".jsonl"))


def load_set(name: str) -> list[Prompt]:
    """A built-in prompt set, by name."""
    if name not in builtin_sets():
        raise SourceError(f"{name}: no such built-in prompt set (known: {', '.join(builtin_sets())})")
    source = f"{BUILTIN_PACKAGE}/{SETS_FOLDER}/{name}.jsonl"
    text = importlib.resources.files(BUILTIN_PACKAGE).joinpath(SETS_FOLDER, f"{name}.jsonl").read_text(encoding="utf-8")
    prompts = _parse_jsonl(text, source, name)
    check_unique(prompts)
    return prompts


def load_builtin(classes: list[str] | None = None) -> list[Prompt]:
    """The built-in prompts, all classes or the ones named."""
    known = builtin_classes()
    wanted = known if classes is None else classes
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SourceError(f"{unknown[0]}: no such built-in prompt class (known: {', '.join(known)})")
    root = importlib.resources.files(BUILTIN_PACKAGE)
    prompts: list[Prompt] = []
    for name in wanted:
        source = f"{BUILTIN_PACKAGE}/{name}.jsonl"
        prompts.extend(_parse_jsonl(root.joinpath(f"{name}.jsonl").read_text(encoding="utf-8"), source, name))
    return prompts


def load_prompts(spec: str | Path) -> list[Prompt]:
    """Prompts from a .txt file, a .jsonl file, a directory of them, a built-in class or set name."""
    path = Path(spec)
    if not path.exists():
        if str(spec) in builtin_classes():
            return load_builtin([str(spec)])
        if str(spec) in builtin_sets():
            return load_set(str(spec))
        raise SourceError(f"{spec}: no such prompt file or directory, nor a built-in class "
                          f"({', '.join(builtin_classes())}) or set ({', '.join(builtin_sets())})")
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in PROMPT_SUFFIXES and p.is_file())
        if not files:
            raise SourceError(f"{path}: no .txt or .jsonl prompt files in this directory")
    else:
        files = [path]
    prompts: list[Prompt] = []
    for file in files:
        prompts.extend(_load_file(file))
    check_unique(prompts)
    return prompts


def _load_file(path: Path) -> list[Prompt]:
    try:
        text = read_bounded(path, MAX_PROMPT_FILE_BYTES, "prompt file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.suffix == ".jsonl":
        return _parse_jsonl(text, str(path), path.stem)
    if not text.strip():
        raise FormatError(f"{path}: empty prompt file")
    return [Prompt(id=path.stem, prompt_class=path.stem, text=text)]


def _parse_jsonl(text: str, source: str, default_class: str) -> list[Prompt]:
    prompts: list[Prompt] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"{source}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("prompt"), str) or not item["prompt"].strip():
            raise FormatError(f'{source}:{number}: expected an object with a non-empty "prompt" string')
        prompt_class = item.get("class", item.get("category", default_class))
        prompt_id = item.get("id", f"{default_class}-{number}")
        prompts.append(Prompt(id=str(prompt_id), prompt_class=str(prompt_class), text=item["prompt"]))
    if not prompts:
        raise FormatError(f"{source}: no prompts in this file")
    return prompts


def check_unique(prompts: list[Prompt]) -> None:
    # Runs are matched on resume by prompt id, so two prompts with one id would shadow each other.
    seen: set[str] = set()
    for prompt in prompts:
        if prompt.id in seen:
            raise FormatError(f"prompt id {prompt.id!r} appears twice; ids must be unique across the prompt files")
        seen.add(prompt.id)


def prompt_set(source: str | Path | Sequence[Prompt] | None) -> list[Prompt]:
    """The prompts a measurement runs: the built-in set (None), a file, directory or class, or given ones."""
    if source is None:
        return load_builtin()
    if isinstance(source, (str, Path)):
        return load_prompts(source)
    prompts = list(source)
    check_unique(prompts)
    return prompts
