"""GitHub's workflow commands as its toolkit writes them: `%`, CR and LF escaped in the
message; `:` and `,` too in a property, which they would otherwise end."""

from __future__ import annotations

from evalrelay.bridge.reports.github import error_annotation


def test_an_annotation_escapes_what_would_end_its_parts() -> None:
    assert error_annotation("evals/a,b.yaml", 7, "x: y", "50% off\nnext line\r") == (
        "::error file=evals/a%2Cb.yaml,line=7,title=x%3A y::50%25 off%0Anext line%0D"
    )
