"""The Jinja environment of the HTML pages: one, so the report and the comparison share
their styles and chart macros (`style.css.j2`, `charts.html.j2`)."""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined, Template


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("bridge.reports", "."),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
    )


def page_template(name: str) -> Template:
    return _environment().get_template(name)
