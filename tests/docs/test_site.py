"""The documentation site builds with `mkdocs build --strict`: a broken link or anchor, or a
page left out of the nav, fails it; and the README's links into docs/ land on a page and
a heading that exist."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import pytest
from markdown_it import MarkdownIt
from packaging.requirements import Requirement

from tests.docs.documented import DOCS, README, ROOT

MKDOCS_CONFIG = ROOT / "mkdocs.yml"


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of `config` into `site`, as CI runs it."""
    # Material prints a notice about MkDocs 2.0 on every build; it is not a warning of ours.
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


class Built(NamedTuple):
    folder: Path
    run: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The site, built once for the tests of this module."""
    folder = tmp_path_factory.mktemp("site")
    return Built(folder, mkdocs_build(MKDOCS_CONFIG, folder))


def built_page(site: Path, doc: Path) -> Path:
    """Where a page of docs/ lands in the built site (one folder per page)."""
    return site / "index.html" if doc.stem == "index" else site / doc.stem / "index.html"


def test_the_site_builds_strictly_with_no_warning(site: Built) -> None:
    assert site.run.returncode == 0, site.run.stderr
    assert "WARNING" not in site.run.stderr, site.run.stderr
    for page in DOCS.glob("*.md"):
        assert built_page(site.folder, page).is_file(), f"{page.name} was not built"


def test_a_broken_anchor_or_a_page_missing_from_the_nav_fails_the_build(tmp_path: Path) -> None:
    """The strict build is what catches rot: checked on a copy with both faults."""
    shutil.copy(MKDOCS_CONFIG, tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    (tmp_path / "docs" / "orphan.md").write_text("# Not in the nav\n")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [grading](grading.md#no-such-heading).\n")
    built = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "orphan.md" in built.stderr
    assert "no-such-heading" in built.stderr


def readme_links() -> list[str]:
    """Every link and image address of the README."""
    found = []
    for token in MarkdownIt("commonmark").parse(README.read_text()):
        for child in token.children or []:
            address = child.attrs.get("href") or child.attrs.get("src")
            if isinstance(address, str):
                found.append(address)
    return found


def test_the_readme_links_into_docs_land_on_a_page_and_a_heading(site: Built) -> None:
    assert site.run.returncode == 0, site.run.stderr
    local = [a for a in readme_links() if not urlsplit(a).scheme]
    into_docs = [a for a in local if a.startswith("docs/")]
    assert len(into_docs) >= 15, into_docs  # the README points into docs/ throughout
    wrong = []
    for address in local:
        path, _, anchor = address.partition("#")
        if not (ROOT / path).is_file():
            wrong.append(f"{address}: no file {path}")
        elif anchor:
            page = built_page(site.folder, Path(path)).read_text()
            if f'id="{anchor}"' not in page:
                wrong.append(f"{address}: {path} has no heading #{anchor}")
    assert not wrong, "README.md links:\n" + "\n".join(wrong)


def test_the_readme_keeps_the_test_command_ci_runs() -> None:
    """CI runs the README's test command: it stays in the README, in its own section."""
    text = README.read_text()
    section = text[text.index("## Running the tests") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    (command,) = [line for line in ci if line.startswith("python -m pytest")]
    assert f'pip install -e ".[dev]" && {command}' in section


def test_the_docs_extra_alone_builds_the_site(tmp_path: Path) -> None:
    """`pip install -e '.[docs]'` is all the site needs: its requirements, read from the
    installed distribution's metadata, go into a fresh virtual environment with nothing
    else, and that environment's MkDocs builds the site strictly."""
    extra = [
        Requirement(line)
        for line in metadata.requires("evalrelay") or []
        if Requirement(line).marker is not None
        and Requirement(line).marker.evaluate({"extra": "docs"})  # type: ignore[union-attr]
    ]
    assert {r.name for r in extra} >= {"mkdocs", "mkdocs-material", "pymdown-extensions"}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    wanted = [str(r).split(";")[0].strip() for r in extra]
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *wanted],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    built = subprocess.run(
        [str(python), "-m", "mkdocs", "build", "--strict", "-f", str(MKDOCS_CONFIG),
         "-d", str(tmp_path / "site")],
        cwd=ROOT, env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "index.html").is_file()
