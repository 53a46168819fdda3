"""The Jinja environment of the HTML pages: one, so the report and the comparison share
their styles and chart macros (`style.css.j2`, `charts.html.j2`).

Jinja is imported when the first page is made, not with this module: `run` imports the
report writer at its start and writes the page only at its end, after the summary."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jinja2 import Environment, Template


@cache
def _environment() -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("evalrelay.bridge.reports", "."),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
    )


def page_template(name: str) -> Template:
    return _environment().get_template(name)
