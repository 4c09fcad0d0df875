"""Reading a pasted text as an expert does: who said each line, what it means, what the runs in it measured.

The steps, one module each, in the order a text goes through them (runs.py drives them):

- decoding: any encoding and line end (files.pasted_text);
- voices.py: who said each line; request bodies, prompts and chat text are content, never a message;
- catalogue.py: what an engine's, app's or traceback's line means (word-bounded, content skipped);
- formats.py and figures.py: each engine's line formats, and the acceptance figures read by their words
  wherever they stand, added up as each format's scope says;
- run_facts.py: what the run was (MTP on or off, the drafters, the app);
- runs.py: one LogEvidence per run in the text (several engines' runs each judged);
- mtp_bench.py: mtp-bench's rows and JSON given to --log.

The rules that name a cause from what was read (which need the cause catalogue, check's evidence and the
advice) are diagnosis/'s: message_rules.py, run_rules.py, failures.py, rank.py. The package itself imports
nothing, so importing one step does not load the others.
"""
