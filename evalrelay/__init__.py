"""evalrelay: run LLM and coding-agent eval cases at any scale.

The `evalrelay` command is the usual way in (docs/commands.md). From Python:

    import evalrelay

    run = evalrelay.run("evals", targets=["mock"])
    print(run.summary.mean_score(), run.results_file)

`load`, `run` and `compare` are documented in `evalrelay.api` and docs/python.md. The
code lives in three packages: `evalrelay.bridge` (the submitting side: eval files, the
queue, results, reports, commands), `evalrelay.worker` (the executing side: providers,
agents, grading) and `evalrelay.workspace_templates` (agents' workspace folders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrelay.api import Comparison, Run, compare, load, run

__all__ = ["Comparison", "Run", "compare", "load", "run"]


def __getattr__(name: str) -> Any:
    """The API loads on first use: `python -m evalrelay` and the workers never need it."""
    if name in __all__:
        from evalrelay import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalrelay' has no attribute {name!r}")
