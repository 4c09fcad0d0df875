"""Parsers for the files a check reads: GGUF headers, model configs and quantization configs."""
