"""Argument handling shared by the commands that start llama-server."""

from __future__ import annotations

import click


class ServerArgsCommand(click.Command):
    """Takes everything after ``--`` as llama-server arguments (``ctx.meta["server_args"]``), so a
    positional MODEL can stay optional and the server's own flags never reach our parser."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            ctx.meta["server_args"] = tuple(args[split + 1 :])
            args = args[:split]
        return super().parse_args(ctx, args)
