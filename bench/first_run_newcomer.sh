#!/bin/bash
# The README's Quick start as written, each output line stamped with the time (UTC).
cd ~/mtpinspect
stamp() { while IFS= read -r l; do printf '%(%H:%M:%S)T %s\n' -1 "$l"; done; }
{
echo "start"
python3 -m venv .venv && . .venv/bin/activate
echo "venv: $(command -v python) $(python --version)"
pip install . && mtpinspect sweep
echo "exit $?"
} 2>&1 | stamp
