"""Secrets given as files: `NAME_FILE=/run/secrets/x` makes the file's content `NAME` for
this process, read by the process itself when it starts.

Docker and Kubernetes mount secrets as files, so that no container configuration shows
them. Read here, after the process was made private (`bridge.private`), a key is in this
process's memory only: not in the environment it was started with (which
`/proc/<pid>/environ` shows), and not in any program's it starts, each of which gets an
environment of its own (an agent's clean one, a grading script's). A worker started by
this one reads the same files again.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.masking import SECRET_VARS_VARIABLE, looks_secret

OWN_FILES = frozenset({"REDIS_PASSWORD", "EVALRELAY_REDIS_PASSWORD", "EVALRELAY_SERVE_TOKEN"})
"""`NAME_FILE`s that evalrelay reads where it uses them, so their secret is never a
variable, not even this process's."""
_FILE_VARIABLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)_FILE$")
_loaded: set[str] = set()


def load_secret_files(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set each secret `NAME` that a `NAME_FILE` points to, unless `NAME` is set already;
    the names set. Only a name masking takes for a secret's (`OPENAI_API_KEY`, a name in
    `EVALRELAY_SECRET_VARS`) is read: what is read is then masked wherever it shows, and
    other `_FILE` variables (`SSL_CERT_FILE`) name files that are no secret's. A file that
    is missing, a folder (Docker mounts a missing secret as one) or empty leaves `NAME`
    unset: a target needing it then says which key it lacks. A file this user cannot read
    is an error saying so."""
    environ = os.environ if environ is None else environ
    named = {n.strip() for n in environ.get(SECRET_VARS_VARIABLE, "").split(",") if n.strip()}
    loaded = []
    for variable, path in sorted(environ.items()):
        found = _FILE_VARIABLE.match(variable)
        if found is None or found[1] in OWN_FILES or environ.get(found[1]):
            continue
        if not (looks_secret(found[1]) or found[1] in named):
            continue
        file = Path(path)
        if not file.is_file():
            continue
        try:
            value = file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise EvalrelayError(
                f"{variable} names {path}, which this user (uid {os.getuid()}) cannot read: "
                f"{exc.strerror}; make the secret readable to it"
            ) from None
        if value:
            environ[found[1]] = value
            loaded.append(found[1])
    _loaded.update(loaded)
    return loaded


def without_secret_files() -> dict[str, str]:
    """This process's environment less what was read from `NAME_FILE`s: for another
    evalrelay process it starts, which reads the files itself."""
    return {name: value for name, value in os.environ.items() if name not in _loaded}
