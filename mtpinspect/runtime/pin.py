"""The llama.cpp this project is pinned to: the one it builds, and the one whose behaviour its tables,
flag spellings and log patterns describe (inspection/support.py, runtime/flags.py, runtime/logs.py)."""

PINNED_PACKAGE = "llama-cpp-python"
PINNED_VERSION = "0.3.36"
# The llama.cpp commit vendored in that source distribution.
PINNED_LLAMA_CPP = "0c1e570"
# Its file name on the index (PEP 625), and its sha256 as published on PyPI.
PINNED_SDIST_NAME = f"{PINNED_PACKAGE.replace('-', '_')}-{PINNED_VERSION}.tar.gz"
PINNED_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# The first llama.cpp release with PR #22673 (--spec-type draft-mtp), published 2026-05-16: an upstream
# build numbered below it has no MTP.
FIRST_MTP_RELEASE = "b9180"
FIRST_MTP_BUILD = 9180
