"""The real llama-server: find or build it (find.py, build.py, pin.py), run it (server.py, flags.py), and
read what it reports (logs.py, metrics.py, memory.py); and the same llama.cpp's metadata-only verdict on
a GGUF (verify.py, through the helper built next to llama-server)."""
