"""The live view's Jinja templates (`bridge/live/*.html.j2`), autoescaped: every name,
path and error they show comes from results and is text, never markup."""

from __future__ import annotations

import functools
from importlib import resources

from jinja2 import Environment, FunctionLoader, StrictUndefined
from markupsafe import Markup


def _source(name: str) -> str:
    return resources.files("evalrelay.bridge.live").joinpath(name).read_text(encoding="utf-8")


@functools.cache
def environment() -> Environment:
    return Environment(
        loader=FunctionLoader(_source),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(name: str, **values: object) -> Markup:
    return Markup(environment().get_template(name).render(**values))
