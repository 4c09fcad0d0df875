"""A model tree on the Hub stand-in, for `mtpinspect find` (tests/test_find.py, bench/bench_find.py).

The base `zai-org/GLM-4.7` and 32 repos tagged `base_model:quantized:zai-org/GLM-4.7`, two pages of the
model search at SEARCH_PAGE_SIZE, made of the real-world cases of cases/ (each served under several repo
ids; content, not name, is what check judges): GGUF repos with two quantizations each (a BF16 with its
nextn block, a Q2_K whose head is low-bit: a verdict per file), split GGUFs, a GGUF whose architecture
has no MTP graph, mtp- sidecar GGUFs, the maker's FP8, an NVFP4 that keeps the head, an FP8 that
quantizes part of it, an NVFP4 that dropped it, and a gated GGUF repo (its files need a token). One
fine-tune and one adapter stand beside them, for --relation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from casekit import load_cases, materialize
from hubstub import HubStub

BASE = "zai-org/GLM-4.7"
SEARCH_PAGE_SIZE = 20
QUANTIZED = 32


@dataclass(frozen=True)
class Tree:
    base: str
    quantized: list[str]  # repo ids, most downloaded first
    gated: str
    finetune: str
    adapter: str


def _cases(workdir: Path) -> dict[str, Path]:
    wanted = {"glm-4.7-gguf-bundled", "glm-4.7-gguf-q2k-head", "glm-4.7-gguf-split", "glm4-arch-gguf-unused-nextn",
              "qwen3.6-35b-a3b-gguf-sidecar", "glm-4.7-fp8-mtp-safetensors", "glm-5.1-nvfp4", "glm-5.1-fp8",
              "glm-5-nvfp4-no-mtp", "glm-5.1"}
    return {case.id: materialize(case, workdir / case.id) for case in load_cases() if case.id in wanted}


def serve_tree(stub: HubStub, workdir: Path) -> Tree:
    """Serve the tree on ``stub`` (its model search paged at SEARCH_PAGE_SIZE)."""
    cases = _cases(workdir)

    def files(case_id: str, rename: dict[str, str] | None = None) -> dict[str, Path]:
        folder = cases[case_id]
        return {(rename or {}).get(p.name, p.name): p for p in sorted(folder.rglob("*")) if p.is_file()}

    two_quants = {**files("glm-4.7-gguf-bundled"),
                  **files("glm-4.7-gguf-q2k-head", {"GLM-4.7-Q2_K-nextn.gguf": "GLM-4.7-Q2_K.gguf"})}
    repos: list[tuple[str, dict[str, Path]]] = [
        ("zai-org/GLM-4.7-FP8", files("glm-4.7-fp8-mtp-safetensors")),
        ("nvidia/GLM-4.7-NVFP4", files("glm-5.1-nvfp4")),
        ("quanter/GLM-4.7-FP8-dynamic", files("glm-5.1-fp8")),
        ("derived/GLM-4.7-NVFP4-no-mtp", files("glm-5-nvfp4-no-mtp")),
        *((f"gguf{i:02d}/GLM-4.7-GGUF", two_quants) for i in range(16)),
        *((f"split{i}/GLM-4.7-GGUF", files("glm-4.7-gguf-split")) for i in range(4)),
        *((f"glm4arch{i}/GLM-4.7-GGUF", files("glm4-arch-gguf-unused-nextn")) for i in range(3)),
        *((f"sidecar{i}/GLM-4.7-MTP-GGUF", files("qwen3.6-35b-a3b-gguf-sidecar")) for i in range(4)),
    ]
    gated = "gated/GLM-4.7-GGUF"
    stub.search_page_size = SEARCH_PAGE_SIZE
    stub.add_repo(BASE, {"README.md": b"# GLM-4.7 (stand-in)\n", **files("glm-5.1")})
    for rank, (repo_id, repo_files) in enumerate(repos):
        stub.add_repo(repo_id, repo_files, base_model=("quantized", BASE), downloads=100_000 - 1000 * rank)
    stub.add_repo(gated, files("glm-4.7-gguf-bundled"), gated=True, base_model=("quantized", BASE), downloads=50_000)
    stub.add_repo("tuner/GLM-4.7-Chat", files("glm-5.1"), base_model=("finetune", BASE), downloads=7)
    stub.add_repo("tuner/GLM-4.7-LoRA", files("glm-5.1"), base_model=("adapter", BASE), downloads=3)
    quantized = [repo_id for repo_id, _ in repos] + [gated]
    assert len(quantized) == QUANTIZED
    return Tree(BASE, quantized, gated, "tuner/GLM-4.7-Chat", "tuner/GLM-4.7-LoRA")
