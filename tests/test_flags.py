"""ServerArgs: llama-server's command line read and edited by flag, under every spelling."""

from __future__ import annotations

import pytest

from mtpinspect.errors import UsageError
from mtpinspect.runtime.flags import CTX_SIZE, DRAFT_MODEL, LAUNCHER_FLAGS, N_MAX, PARALLEL, SPEC_FLAGS, ServerArgs


def test_values_under_every_spelling_and_with_equals() -> None:
    args = ServerArgs.of(["--model-draft", "a.gguf", "-c=4096", "--threads", "8", "--draft-p-min", "0.3"])
    assert args.draft_model == "a.gguf"
    assert (args.ctx_size, args.threads, args.p_min) == (4096, 8, 0.3)
    assert args.n_max is None and args.temperature is None and args.spec_type is None
    assert args.has(CTX_SIZE) and not args.has(N_MAX, PARALLEL)


def test_last_value_wins_but_spec_types_add_up() -> None:
    args = ServerArgs.of(["-c", "1024", "--spec-type", "ngram-mod", "-c", "2048", "--spec-type=draft-mtp"])
    assert args.ctx_size == 2048
    assert args.spec_type == "ngram-mod,draft-mtp"
    assert args.spec_types == ["ngram-mod", "draft-mtp"]


def test_without_takes_flags_and_their_values_out() -> None:
    args = ServerArgs.of(["-t", "4", "-md", "mtp.gguf", "--spec-type=draft-mtp", "--spec-draft-n-max", "3", "--metrics"])
    assert args.sets_spec
    rest = args.without(*SPEC_FLAGS)
    assert rest.args == ("-t", "4", "--metrics")
    assert not rest.sets_spec
    assert rest.added(*DRAFT_MODEL.spelled("x.gguf")).args == ("-t", "4", "--metrics", "-md", "x.gguf")


def test_present_names_the_spelling_used() -> None:
    args = ServerArgs.of(["--port=8080", "--model", "m.gguf", "-t", "2"])
    assert args.present(LAUNCHER_FLAGS) == ["--model", "--port"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [(["--spec-draft-n-max"], "--spec-draft-n-max: expects a value"), (["-c", "many"], "invalid literal"),
     (["--temp", "hot"], "could not convert")],
)
def test_bad_values_are_usage_errors(argv: list[str], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        ServerArgs.of(argv).checked()
