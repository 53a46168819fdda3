"""evalrelay's command group: commands imported when used, and options that take one value
given twice refused.

Click keeps the last value of a repeated single-value option, so `run --target a --target b`
ran only on `b` with no word; a user who repeats an option means something by it.
"""

from __future__ import annotations

import importlib

import click


class Commands(click.Group):
    """evalrelay's command group. A command's module is imported only when that command runs
    (or help lists it): every process, workers and collectors included, starts without the
    imports of the commands it is not (the web server's, the exporters')."""

    def __init__(self, *args: object, lazy: dict[str, str] | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})
        """Command name → `module:attribute` of its click command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            assert isinstance(command, click.Command) and command.name == cmd_name
            self.add_command(command)
        return super().get_command(ctx, cmd_name)

    def every_command(self) -> dict[str, click.Command]:
        """Each command by name, all imported: for what documents or checks them all."""
        with click.Context(self) as ctx:
            found = {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}
        return {name: command for name, command in found.items() if command is not None}

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
