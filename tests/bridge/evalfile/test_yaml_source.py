"""The fast loader (libyaml's parser) reads exactly what PyYAML's Python loader reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalrelay.bridge.evalfile.yaml_source import FastStrictLoader, StrictSafeLoader, load_yaml
from tests.conftest import one_turn_cases

ROOT = Path(__file__).resolve().parents[3]

SAMPLES = {
    "core scalars": "a: no\nb: 1:30\nc: 0o17\nd: 1_000\ne: .inf\nf: ~\ng: 2026-01-01\nh: True\n",
    "anchors and merge keys": "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n",
    "block scalars": "text: |\n  line one\n  line two\nfolded: >-\n  a\n  b\n",
    "flow and quotes": "l: [1, 'two', \"th\\u00e9\", {k: v}]\nm: {a: [], b: {}}\n",
    "one-turn cases": one_turn_cases(5),
}


def nodes(root: yaml.Node) -> list[tuple[str, int, int, int, int]]:
    """Every node's tag and where it starts and ends, depth first."""
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        start, end = node.start_mark, node.end_mark
        found.append((node.tag, start.line, start.column, end.line, end.column))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
    return found


def read_with(loader_class: type, text: str) -> tuple[object, yaml.Node]:
    loader = loader_class(text)
    loader.duplicates = []
    try:
        root = loader.get_single_node()
        return loader.construct_document(root), root
    finally:
        loader.dispose()


@pytest.mark.parametrize("name", [*SAMPLES, "examples/evals/quickstart.yaml"])
def test_both_loaders_read_the_same_values_at_the_same_places(name: str) -> None:
    text = (ROOT / name).read_text() if name.startswith("examples/") else SAMPLES[name]
    fast_data, fast_root = read_with(FastStrictLoader, text)
    slow_data, slow_root = read_with(StrictSafeLoader, text)
    assert fast_data == slow_data
    assert nodes(fast_root) == nodes(slow_root)


def test_core_scalars_are_read_by_yaml_1_2_rules_on_the_fast_path() -> None:
    data = load_yaml(Path("x.yaml"), SAMPLES["core scalars"]).data
    assert data == {
        "a": "no", "b": "1:30", "c": 15, "d": "1_000", "e": float("inf"), "f": None,
        "g": "2026-01-01", "h": True,
    }  # fmt: skip


def test_an_error_found_by_libyaml_is_explained_in_pyyaml_s_words(tmp_path: Path) -> None:
    """libyaml words its errors otherwise; the message is the one our table explains."""
    path = tmp_path / "bad.yaml"
    text = "evalcases:\n  - id: 'open\n"
    with pytest.raises(yaml.YAMLError):
        read_with(FastStrictLoader, text)
    with pytest.raises(Exception) as raised:
        load_yaml(path, text)
    said = str(raised.value)
    assert f"{path}:2:9" in said and "quote" in said


def test_duplicate_keys_are_found_on_the_fast_path() -> None:
    with pytest.raises(Exception, match=r"x.yaml:2:1: duplicate key 'a'"):
        load_yaml(Path("x.yaml"), "a: 1\na: 2\n")


def test_a_large_file_without_aliases_is_not_taken_for_an_alias_bomb() -> None:
    """300,000 values written out: only what aliases add counts against the limit."""
    data = load_yaml(Path("x.yaml"), one_turn_cases(30_000)).data
    assert len(data["evalcases"]) == 30_000


def test_aliases_are_counted_by_what_they_add() -> None:
    values = ", ".join(f"v{i}" for i in range(1000))
    text = f"base: &b [{values}]\n" + "".join(f"k{i}: *b\n" for i in range(199))
    assert len(load_yaml(Path("x.yaml"), text).data) == 200  # 199,000 values added: allowed
    with pytest.raises(Exception, match="aliases expand to more than 200000 values"):
        load_yaml(Path("x.yaml"), text + "k199: *b\nk200: *b\n")
