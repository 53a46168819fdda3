"""Mutation testing of the core modules: would their tests notice a one-line slip?

Each mutant is one small change to one module (a comparison or a `Field` bound flipped,
`and` for `or`, a `not` dropped, a number off by one, a return value replaced by None, a
statement deleted), made in a copy of the tree, never in the working tree. The module's
fast tests run against each (`-x -q`, a time limit per mutant); a mutant they pass is a
survivor, printed as `file:line: mutation`. A survivor is a behaviour no test holds, or an
equivalent change (one that cannot alter behaviour): add a test for the first kind, say
why for the second.

    python bench/mutants.py                      # every module
    python bench/mutants.py --module grade --limit 20
    python bench/mutants.py --list --module build   # the mutants, none run
    python bench/mutants.py --module grade > grade.out; ...; python bench/mutants.py \
        --module grade --only grade.out             # again, only the survivors listed

Run from the repository root with the dev extra installed and EVALRELAY_TEST_REDIS_URL set
(the tests need a Redis of their own), before each release.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES: dict[str, tuple[str, list[str]]] = {
    "build": ("bridge/prompt/build.py", ["tests/bridge/prompt/test_build.py"]),
    "grade": ("worker/grading/grade.py", ["tests/worker/grading/"]),  # it runs every evaluator
    "checks": (
        "worker/grading/checks.py",
        ["tests/worker/grading/test_checks.py", "tests/worker/grading/test_deadline.py"],
    ),
    "masking": ("bridge/masking.py", ["tests/bridge/test_masking.py"]),
    "lease": ("bridge/delivery/lease.py", ["tests/bridge/delivery/test_lease.py"]),
    "collector": ("bridge/results/collector.py", ["tests/bridge/results/test_collector.py"]),
    "limits": ("bridge/evalfile/limits.py", ["tests/bridge/evalfile/test_limits.py"]),
}
"""Each core module, and the fast tests that are its own."""

FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
DELETABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.For, ast.Raise)


@dataclass(frozen=True)
class Mutant:
    module: str
    path: str
    line: int
    what: str
    source: str
    """The whole module with this one change."""

    @property
    def printed(self) -> str:
        """How a survivor is printed, and named to `--only`."""
        return f"{self.path}:{self.line}: {self.what}"


def listed(path: Path) -> set[str]:
    """The mutants named in a file of `file:line: mutation` lines (other lines ignored)."""
    return {line.strip() for line in path.read_text().splitlines() if ".py:" in line}


def mutants(module: str, path: str) -> Iterator[Mutant]:
    """Every mutant of the module at `path`, in the order of the source."""
    text = (ROOT / path).read_text()
    original = ast.unparse(ast.parse(text))
    kinds = [type(node) for node in ast.walk(ast.parse(text))]
    found = []
    for index, kind in enumerate(kinds):
        for mutate, applies_to in MUTATIONS:
            if not issubclass(kind, applies_to):
                continue
            tree = ast.parse(text)
            node = list(ast.walk(tree))[index]
            parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
            what = mutate(node, parents)
            if what is None:
                continue
            source = ast.unparse(tree)
            line = getattr(node, "lineno", 0) or getattr(parents.get(id(node)), "lineno", 0)
            if source != original:
                found.append(Mutant(module, path, line, what, source))
    yield from sorted(found, key=lambda m: m.line)


Parents = dict[int, ast.AST]


def _replace(parents: Parents, old: ast.AST, new: ast.AST) -> None:
    """Put `new` where `old` stands in its parent."""
    parent = parents[id(old)]
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
        elif isinstance(value, list) and any(v is old for v in value):
            value[next(i for i, v in enumerate(value) if v is old)] = new


def _in_annotation_or_fstring(node: ast.AST, parents: Parents) -> bool:
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.JoinedStr):
            return True
        if isinstance(parent, ast.AnnAssign) and child is parent.annotation:
            return True
        if isinstance(parent, ast.arg) or (
            isinstance(parent, ast.FunctionDef) and child is parent.returns
        ):
            return True
        child, parent = parent, parents.get(id(parent))
    return False


def flip_comparison(node: ast.AST, parents: Parents) -> str | None:
    if not isinstance(node, ast.Compare):
        return None
    before = ast.unparse(node)
    node.ops[0] = FLIPPED[type(node.ops[0])]()
    return f"{before}  ->  {ast.unparse(node)}"


def swap_and_or(node: ast.AST, parents: Parents) -> str | None:
    if not isinstance(node, ast.BoolOp):
        return None
    before = ast.unparse(node)
    node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    return f"{before}  ->  {ast.unparse(node)}"


def drop_not(node: ast.AST, parents: Parents) -> str | None:
    if not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return None
    _replace(parents, node, node.operand)
    return f"{ast.unparse(node)}  ->  {ast.unparse(node.operand)}"


def constant_by_one(node: ast.AST, parents: Parents) -> str | None:
    """A number one more, a truth value the other, a short separator one character less."""
    if not isinstance(node, ast.Constant) or _in_annotation_or_fstring(node, parents):
        return None
    value = node.value
    if isinstance(value, bool):
        node.value = not value
    elif isinstance(value, int | float):
        node.value = value + 1
    elif isinstance(value, str) and 0 < len(value) <= 3:
        if isinstance(parents.get(id(node)), ast.Expr):
            return None  # a docstring
        node.value = value[:-1]
    else:
        return None
    return f"{value!r}  ->  {node.value!r}"


def return_none(node: ast.AST, parents: Parents) -> str | None:
    if not isinstance(node, ast.Return) or node.value is None:
        return None
    if isinstance(node.value, ast.Constant) and node.value.value is None:
        return None
    before = ast.unparse(node)
    node.value = ast.Constant(None)
    return f"{before}  ->  return None"


def delete_statement(node: ast.AST, parents: Parents) -> str | None:
    if not isinstance(node, DELETABLE) or isinstance(parents.get(id(node)), ast.Module):
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return None  # a docstring
    first = ast.unparse(node).splitlines()[0]
    _replace(parents, node, ast.Pass())
    return f"deleted: {first}"


BOUNDS = {"gt": "ge", "ge": "gt", "lt": "le", "le": "lt"}
"""pydantic's `Field` bounds: a comparison written as a keyword."""


def flip_bound(node: ast.AST, parents: Parents) -> str | None:
    if not isinstance(node, ast.keyword) or node.arg not in BOUNDS:
        return None
    before = ast.unparse(node)
    node.arg = BOUNDS[node.arg]
    return f"{before}  ->  {ast.unparse(node)}"


MUTATIONS: list[tuple[Callable[[ast.AST, Parents], str | None], type | tuple[type, ...]]] = [
    (flip_comparison, ast.Compare),
    (flip_bound, ast.keyword),
    (swap_and_or, ast.BoolOp),
    (drop_not, ast.UnaryOp),
    (constant_by_one, ast.Constant),
    (return_none, ast.Return),
    (delete_statement, DELETABLE),
]
"""Each mutation, and the nodes it may change."""


class Sandbox:
    """A copy of the project's code and tests in which one module at a time is replaced."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="evalrelay-mutants-"))
        keep = ("evalrelay", "bridge", "worker", "tests", "workspace_templates", "examples", "docs")
        for name in keep:
            if (ROOT / name).exists():
                shutil.copytree(
                    ROOT / name, self.root / name, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"),
                )
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, self.root / name)

    def run(self, tests: list[str], path: str, source: str, timeout: float) -> str:
        """'killed', 'timeout' or 'survived': what the tests made of this module source."""
        target = self.root / path
        original = target.read_text()
        target.write_text(source)
        env = {
            **os.environ,
            "PYTHONPATH": str(self.root),  # child processes import the mutant too
            "PYTHONDONTWRITEBYTECODE": "1",  # never a stale compiled module
        }
        argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        try:
            done = subprocess.run(
                argv, cwd=self.root, env=env, capture_output=True, timeout=timeout,
                start_new_session=True,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return "timeout"
        finally:
            target.write_text(original)
        return "survived" if done.returncode == 0 else "killed"

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES), help="repeatable")
    parser.add_argument("--limit", type=int, help="at most this many mutants per module")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant")
    parser.add_argument("--list", action="store_true", help="print the mutants, run none")
    parser.add_argument(
        "--only",
        type=Path,
        metavar="FILE",
        help="run only the mutants listed in FILE (`file:line: mutation` lines, as printed)",
    )
    options = parser.parse_args()
    wanted = listed(options.only) if options.only else None
    if not options.list and not os.environ.get("EVALRELAY_TEST_REDIS_URL"):
        parser.error("set EVALRELAY_TEST_REDIS_URL to a Redis of the tests' own")
    sandbox = None if options.list else Sandbox()
    survivors: list[Mutant] = []
    try:
        for module in options.module or sorted(MODULES):
            path, tests = MODULES[module]
            found = list(mutants(module, path))
            if wanted is not None:
                found = [mutant for mutant in found if mutant.printed in wanted]
            found = found[: options.limit]
            if sandbox is None:
                for mutant in found:
                    print(mutant.printed)
                continue
            unchanged = ast.unparse(ast.parse((ROOT / path).read_text()))
            if sandbox.run(tests, path, unchanged, options.timeout * 3) != "survived":
                print(f"{module}: its tests fail without any mutant; fix them first")
                return 2
            started, killed = time.monotonic(), 0
            for mutant in found:
                outcome = sandbox.run(tests, path, mutant.source, options.timeout)
                if outcome == "survived":
                    survivors.append(mutant)
                    print(mutant.printed, flush=True)
                else:
                    killed += 1
            print(
                f"{module}: {killed} of {len(found)} mutants killed, "
                f"{len(found) - killed} survived ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    finally:
        if sandbox is not None:
            sandbox.close()
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
