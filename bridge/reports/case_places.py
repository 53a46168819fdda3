"""Where each case is written in its eval files: the line of its `id`, for annotations
that point a reviewer at the failing case (`compare --github`).

YAML and JSON files are composed with their positions (JSON is YAML); a JSONL dataset is
read a line at a time. A file that cannot be read places no case: the annotation is left
out, never the comparison.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml

CasePlaces = dict[str, tuple[str, int]]
"""Case id → the eval file (as given) and the 1-based line of its `id`."""


def case_places(sources: Iterable[str]) -> CasePlaces:
    """Of a case id found in several files, the first."""
    places: CasePlaces = {}
    for source in sources:
        for case_id, line in _ids_in(Path(source)):
            places.setdefault(case_id, (source, line))
    return places


def _ids_in(path: Path) -> Iterator[tuple[str, int]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    if path.suffix == ".jsonl":
        yield from _ids_in_lines(text)
        return
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return
    if root is not None:
        yield from _ids_in_node(root)


def _ids_in_lines(text: str) -> Iterator[tuple[str, int]]:
    for number, line in enumerate(text.splitlines(), 1):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str | int):
            yield str(data["id"]), number


def _ids_in_node(node: yaml.Node) -> Iterator[tuple[str, int]]:
    """Every mapping's `id`, depth first."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if (
                isinstance(key, yaml.ScalarNode)
                and key.value == "id"
                and isinstance(value, yaml.ScalarNode)
            ):
                yield str(value.value), key.start_mark.line + 1
            yield from _ids_in_node(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _ids_in_node(item)
