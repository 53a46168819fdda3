"""Options that take one value, given twice: an error, never the last one silently.

Click keeps the last value of a repeated single-value option, so `run --target a --target b`
ran only on `b` with no word; a user who repeats an option means something by it.
"""

from __future__ import annotations

import click


class Commands(click.Group):
    """evalrelay's command group: each command refuses a single-value option given twice."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            refuse_repeated(command, rest)
        return name, command, rest


def refuse_repeated(command: click.Command, args: list[str]) -> None:
    """A UsageError when `args` give an option of `command` that takes one value twice."""
    single = {
        spelling: param
        for param in command.params
        if isinstance(param, click.Option) and not (param.multiple or param.count or param.is_flag)
        for spelling in param.opts
    }
    seen: dict[str | None, str] = {}
    for arg in args:
        if arg == "--":
            break
        spelling = arg.split("=", 1)[0]
        param = single.get(spelling)
        if param is None:
            continue
        if param.name in seen:
            first = seen[param.name]
            twice = spelling if first == spelling else f"{first} and {spelling}"
            raise click.UsageError(f"{twice} given twice; it takes one value: give it once")
        seen[param.name] = spelling
