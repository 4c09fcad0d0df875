"""Inspection: sources -> formats -> evidence -> verdict -> report, reading headers only (pipeline.py: check,
check_all, judge). The package itself imports nothing: diagnose and find use parts of it (the report's
types, the support table) without loading the whole pipeline (tests/test_imports.py)."""
