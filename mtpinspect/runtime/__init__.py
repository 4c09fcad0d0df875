"""The real llama-server: find or build it (find.py, build.py, pin.py), run it (server.py, flags.py), and
read what it reports (logs.py, metrics.py, memory.py)."""
