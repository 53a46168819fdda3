"""Each case id at the line of its `id`, in YAML, JSON and JSONL eval files."""

from __future__ import annotations

import json
from pathlib import Path

from evalrelay.bridge.reports.case_places import case_places


def test_cases_are_placed_at_their_id_lines(tmp_path: Path) -> None:
    yaml_file = tmp_path / "a.yaml"
    yaml_file.write_text("evalcases:\n  - id: one\n    input: x\n  - input: y\n    id: two\n")
    jsonl = tmp_path / "b.jsonl"
    jsonl.write_text(json.dumps({"id": "three"}) + "\n\n" + json.dumps({"id": "one"}) + "\n")
    broken = tmp_path / "c.yaml"
    broken.write_text("evalcases: [\n")
    places = case_places([str(yaml_file), str(jsonl), str(broken), str(tmp_path / "gone")])
    assert places == {
        "one": (str(yaml_file), 2),  # the first file that has it
        "two": (str(yaml_file), 5),
        "three": (str(jsonl), 1),
    }
