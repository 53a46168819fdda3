"""The box that code named by an eval file runs in: grading scripts, answer transforms,
code asserts, a `code_judge` aggregator, `workspace_command` and, where a file is loaded,
promptfoo's test generators and prompt functions.

Such code is the file's author's, not the operator's, so it runs under bubblewrap with
what it needs and nothing else: the system's folders, its interpreter and its project
read-only, the folders it must write (an agent's workspace, for `workspace_command`)
read-write, a private /tmp and HOME, no network, no capability, as `nobody`, with limits
on its processes and memory, dying with the process that started it. The worker's keys,
the operator's targets file, other campaigns' results and Redis are out of its reach.

`EVALRELAY_CODE_BOX=none` runs the code on the host instead, with the clean environment
only: for a worker whose own container is the box and cannot make namespaces (Docker's
default profile refuses them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

BOX_VARIABLE = "EVALRELAY_CODE_BOX"
INBOX_LIFECYCLE = ("queued", "done", "failed")
"""The folders a dropped file moves through inside its inbox (`bridge.inbox.folders`):
they mark a folder as an inbox, above which a dropped file's code reads nothing."""
MODES = ("bubblewrap", "none")

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
SYSTEM_FILES = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/mime.types",
)
"""What of /etc a program needs (certificates, users, the linker, the time zone); the rest
of it, where a service may keep a password, stays out."""
NOBODY = "65534"
BOX_HOME = "/home/box"
PROJECT_MARKERS = ("evalrelay.yaml", ".git", ".agentv", "promptfooconfig.yaml")
"""What marks a project's top folder: the box reads the whole project, so that a script
may import its neighbours and read the project's data files."""
PROCESSES = 256
"""Processes and threads the boxed code may run at once (a test runner, a compiler)."""
MEMORY_MB = 4096
"""Each boxed process's data (heap and writable memory): a backstop against a runaway script."""


class BoxUnavailable(RuntimeError):
    """The box cannot be made on this machine; the message says what to install or set."""


def box_mode(environ: Mapping[str, str] | None = None) -> str:
    """`bubblewrap` (the default) or `none`, from `EVALRELAY_CODE_BOX`."""
    mode = (os.environ if environ is None else environ).get(BOX_VARIABLE, "") or "bubblewrap"
    if mode not in MODES:
        raise BoxUnavailable(f"{BOX_VARIABLE}={mode!r} is not one of {', '.join(MODES)}")
    return mode


def boxed(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    memory_mb: int = MEMORY_MB,
    processes: int = PROCESSES,
) -> tuple[list[str], dict[str, str]]:
    """`argv` and `env` as they run in the box, which reads `cwd`'s project, the program's
    own folders and `readable`, and writes `writable`. Unchanged with
    `EVALRELAY_CODE_BOX=none`; BoxUnavailable when bubblewrap is missing."""
    if box_mode() == "none":
        return argv, env
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if bwrap is None or prlimit is None:
        raise BoxUnavailable(
            "code named by an eval file runs boxed under bubblewrap, which this machine lacks: "
            f"apt-get install bubblewrap util-linux, or set {BOX_VARIABLE}=none where the "
            "process's own container is the box"
        )
    project = project_folder(cwd)
    seen = [
        *([project] if _narrow(project) else []),
        *program_folders(argv[0], env.get("PATH", "")),
    ]
    command = [
        bwrap,
        *mounts(writable=list(writable), readable=[*seen, *readable]),
        "--tmpfs", BOX_HOME,
        "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--uid", NOBODY, "--gid", NOBODY, "--hostname", "box",
        "--chdir", str(cwd.absolute()), "--", prlimit, f"--nproc={processes}",
    ]  # fmt: skip
    # The data limit, not the address space's: Node.js reserves far more address space
    # than it uses, and would not start under an address-space limit of this size.
    command.append(f"--data={memory_mb * 1024 * 1024}")
    return [*command, "--", *argv], {**env, "HOME": BOX_HOME, "TMPDIR": "/tmp"}


def mounts(*, writable: list[Path], readable: list[Path]) -> list[str]:
    """bubblewrap's mounts: the system's folders and `readable` read-only, `writable`
    read-write, each at its own path; /proc, /dev and an empty /tmp of the box's own."""
    args: list[str] = []
    for folder in SYSTEM_FOLDERS:
        source = Path(folder)
        if source.is_symlink():  # /bin -> usr/bin on a merged /usr
            args += ["--symlink", str(source.readlink()), folder]
        elif source.exists():
            args += ["--ro-bind", folder, folder]
    for name in SYSTEM_FILES:
        args += ["--ro-bind-try", name, name]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in readable:
        args += ["--ro-bind-try", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    return args


def project_folder(cwd: Path) -> Path:
    """The nearest folder at or above `cwd` that marks a project's top, else `cwd`. An
    inbox is a top of its own: a dropped file's code reads the inbox, never the
    operator's project around it (its targets file, other campaigns' results)."""
    start = cwd.resolve()
    for folder in (start, *start.parents):
        if all((folder / name).is_dir() for name in INBOX_LIFECYCLE):
            return folder
        if _narrow(folder) and any((folder / m).exists() for m in PROJECT_MARKERS):
            return folder
    return start


def _narrow(folder: Path) -> bool:
    """Whether a folder may be shown to the box whole: not `/`, not a top folder (`/root`,
    `/home`, `/etc`), not the home folder, where keys and other projects live."""
    return len(folder.parts) >= 3 and folder != Path.home()


def program_folders(program: str, path: str) -> list[Path]:
    """The folders a program needs to start: the one it is in (an npm package's whole
    prefix), the prefix of what it links to, and for a Python virtual environment the
    environment and the Python it was made from. The same for each virtual environment
    on `path`, so that `sh -c "python3 ..."` finds the packages it would find outside."""
    found = shutil.which(program, path=path or None) if "/" not in program else program
    folders: list[Path] = []
    # A version manager's shim (pyenv's, asdf's) needs the manager's whole tree: it is left
    # out, and the box finds the program further along PATH, the system's own.
    if found and Path(found).parent.name != "shims":
        folders += _prefixes(Path(found).absolute())
    for entry in path.split(os.pathsep):
        if entry and (Path(entry).parent / "pyvenv.cfg").is_file():
            folders += _prefixes(Path(entry) / "python")
    return [f for f in dict.fromkeys(folders) if _narrow(f)]


def _prefixes(program: Path) -> Iterable[Path]:
    yield install_root(program)
    environment = program.parent.parent
    config = environment / "pyvenv.cfg"
    if config.is_file():
        yield environment
        for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                yield Path(value.strip()).parent  # the base Python's prefix
    real = program.resolve()
    if real != program:
        yield install_root(real)
        if real.parent.name == "bin":
            yield real.parent.parent


def install_root(program: str | Path) -> Path:
    """An npm package's whole prefix (its `node_modules` and `.bin`), else the program's
    own folder."""
    parts = Path(program).parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules")])
    return Path(program).parent
