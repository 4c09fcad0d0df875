"""Shared test set-up: the test helpers in this folder are importable as plain modules."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
