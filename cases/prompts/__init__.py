"""Built-in prompt sets for `mtpinspect sweep`, one JSONL file per prompt class."""
