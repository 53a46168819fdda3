"""The environment an agent under evaluation starts with: what any program needs to run,
its vendor's own variables, and what its target names; never the rest of the worker's.

The agent is untrusted: an LLM chooses the commands it runs, and whatever its environment
holds it can print into its answer. The worker's environment holds the Redis URL (with its
password, the way to the queue, the results and the grades) and keys for every provider:
none of that is the agent's business.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

BASE_VARIABLES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    # Where the machine keeps its certificate authorities, and how it reaches the network.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
"""What every program may expect, whatever runs it."""

BASE_PREFIXES = ("LC_",)


def agent_environment(
    vendor: Iterable[str] = (),
    named: Mapping[str, str] | None = None,
    inherit: Iterable[str] = (),
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one agent run.

    `vendor`: the variables its CLI reads for its own model and key (OPENAI_API_KEY for
    Codex), or prefixes ending in `*` (`COPILOT_*`); `named`: the target's `env`, already
    read; `inherit`: more of the worker's variables the target lets through
    (`inherit_env`), by name or `PREFIX_*`.
    """
    source = os.environ if source is None else source
    wanted = [*BASE_VARIABLES, *vendor, *inherit]
    names = {n for n in wanted if not n.endswith("*")}
    prefixes = (*BASE_PREFIXES, *(n[:-1] for n in wanted if n.endswith("*")))
    env = {k: v for k, v in source.items() if k in names or k.startswith(prefixes)}
    return {**env, **(named or {})}
