"""Reading a pasted text as an expert does: who said each line, what it means, what the runs in it measured.

The steps, one module each, in the order a text goes through them (runs.py drives them):

- decoding: any encoding and line end (files.pasted_text);
- voices.py: who said each line; request bodies, prompts and chat text are content, never a message;
- catalogue.py: what an engine's, app's or traceback's line means (word-bounded, content skipped);
- drafters.py: the one table of every engine's drafting code (modules, frames, native frames, drafter tensors) the
  catalogue's drafting messages and the tie to the speculative path are read from, and the drafters' names (Drafter)
  reports use;
- formats.py and figures.py: each engine's line formats, and the acceptance figures read by their words
  wherever they stand, added up as each format's scope says;
- tables/: any table (pipes, box-drawing, aligned columns, comma-separated, metrics by row) and results block,
  its runs read by its header and row words: the setting, the speed or latency, the key runs share (its own steps:
  words, cut, columns, record, commanded, as_runs, sentences, samples);
- run_facts.py: what the run was (MTP on or off, the drafters, the app);
- runs.py: one LogEvidence per run in the text (several engines' runs each judged);
- mtp_bench.py: mtp-bench's rows and JSON given to --log;
- rules_run.py: the tie to MTP (no MTP cause without one), the causes what the run was establishes, and the runs of
  one text set against each other by speed;
  rules_message.py: the causes one catalogue line establishes; rules_loader.py: llama.cpp's missing block tensor read
  against the GGUF's layout (all name causes from mtpinspect/causes.py).

Ranking the causes of every source (check, the probe, logs), the failed-start and crash rules shared with the
probe (failures.py) and the advice are diagnosis/'s. The package itself imports nothing, so importing one step
does not load the others.
"""
