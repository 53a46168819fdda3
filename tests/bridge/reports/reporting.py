"""A campaign's results file written by hand, so each report can be checked line by line."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.changes import FileChange, WorkspaceChanges
from evalrelay.bridge.results.result import ErrorInfo, EvaluatorResult, Result, Status, TurnResult
from evalrelay.bridge.results.trajectory import Trajectory, TrajectoryStep
from tests.browser import dom

START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def result(case_id: str, target: str, status: Status, **fields: Any) -> Result:
    error = fields.pop("error", None)
    return Result(
        campaign_id="camp",
        job_id=fields.pop("job_id", f"{case_id}-{target}"),
        case_id=case_id,
        dataset=fields.pop("dataset", "geo"),
        target=target,
        status=status,
        raw_request=fields.pop(
            "raw_request",
            PromptRequest(question=f"Question of {case_id}?", system_prompt="Be brief."),
        ),
        started_at=START,
        finished_at=START + timedelta(seconds=2),
        duration_ms=2000,
        worker="w1",
        error=ErrorInfo(kind=status.value, message=error) if error else None,
        **fields,
    )


def graded(case_id: str, target: str, score: float, **fields: Any) -> Result:
    passed = score >= 0.8
    return result(
        case_id,
        target,
        Status.OK,
        answer=fields.pop("answer", f"Answer to {case_id}"),
        score=score,
        passed=passed,
        hits=["names the city"] if passed else [],
        misses=[] if passed else ["wrong city"],
        reasoning="checked by hand",
        evaluator_results=[
            EvaluatorResult(name="contains", type="contains", score=score, hits=[], misses=[])
        ],
        reference_answer="Paris",
        **fields,
    )


CAMPAIGN = [
    graded("capital", "gpt", 0.9),
    graded("river", "gpt", 0.3, answer="<script>alert('x')</script> The Thames"),
    result("mountain", "gpt", Status.INFRA_ERROR, error="connection refused by 127.0.0.1:9"),
    result("desert", "gpt", Status.MODEL_FAILURE, answer="", error="empty answer"),
    result("capital", "claude", Status.OK, answer="Paris"),
    result("river", "claude", Status.CANCELLED),
]


def write_campaign(folder: Path, results: list[Result], name: str = "camp") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in results))
    return path


def rendered(page: Path, fragment: str, tmp_path: Path) -> str:
    """The page's DOM after its scripts ran, from headless Chromium."""
    return dom(page.as_uri() + fragment, tmp_path / "chromium-profile")


OPEN_ALL = 'document.getElementById("expand-all").click();'
"""Opens every row shown, which reads their details."""


def with_script(page: Path, script: str) -> Path:
    """The page with `script` run after its own: what a user's clicks and typing do. The
    copy sits beside the page, so it finds the page's parts folder."""
    acted = page.with_name("acted.html")
    acted.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    return acted


TARGETS = ("claude", "gpt", "mistral")
SYSTEM = "Answer as a careful geographer, in one sentence. " * 30
NEEDLE = ("case-0906", "gpt")


def many_results(count: int = 3000) -> list[Result]:
    """`count` results over three targets, written in no order; every seventh case failed,
    and one answer (NEEDLE's) is the only one that says 'needle'."""
    results = []
    for i in range(count):
        case_id, target = f"case-{i // 3:04d}", TARGETS[i % 3]
        answer = "a needle in the haystack" if (case_id, target) == NEEDLE else f"Paris {i}"
        request = PromptRequest(question=f"Question of {case_id}?", system_prompt=SYSTEM)
        score = 0.3 if (i // 3) % 7 == 0 else 0.9
        results.append(graded(case_id, target, score, answer=answer, raw_request=request))
    random.Random(17).shuffle(results)
    return results


FILLER = "The city lies on a river and has been the capital for centuries. " * 45


def long_answers(results: list[Result]) -> list[Result]:
    """Each answer made some 3 KB, ending in words of its own: 3,000 of them (9 MB of
    details) outgrow a report of one file, and 2,000 too."""
    return [
        r.model_copy(update={"answer": f"{r.answer}. {FILLER}(end of {r.case_id} {r.target})"})
        for r in results
    ]


def agent_run(case_id: str, target: str = "codex") -> Result:
    """A graded agent result with a three-step trajectory (the edit failed once) and the
    workspace change it left."""
    steps = [
        TrajectoryStep(tool="Read", kind="read", arguments={"file_path": "a.py"},
                       output="print('hi')", ok=True, paths=["a.py"], duration_ms=12),
        TrajectoryStep(tool="Bash", kind="command", arguments={"command": "make"},
                       output="x" * 3000 + "[cut]", output_chars_cut=5000, ok=True),
        TrajectoryStep(tool="Write", kind="edit", arguments={"file_path": "b.txt"},
                       output="permission denied", ok=False, paths=["b.txt"]),
    ]  # fmt: skip
    diff = "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+done\n"
    return graded(
        case_id,
        target,
        1.0,
        trajectory=Trajectory(agent=target, steps=steps, model_calls=4, cost_usd=0.25),
        workspace_changes=WorkspaceChanges(
            files=[FileChange(path="b.txt", change="added")], diff=diff
        ),
    )


def conversation(case_id: str, target: str) -> Result:
    """A conversation-mode result: a turn passed, one failed, one not sent."""
    return graded(case_id, target, 1 / 3).model_copy(
        update={
            "turns": [
                TurnResult(
                    turn=1,
                    input="Capital of France?",
                    status="ok",
                    answer="Paris",
                    score=1.0,
                    passed=True,
                ),
                TurnResult(
                    turn=2,
                    input="And of Italy?",
                    status="ok",
                    answer="Milan",
                    score=0.0,
                    passed=False,
                    misses=["Rome"],
                ),
                TurnResult(
                    turn=3,
                    input="Thanks!",
                    status="skipped",
                    score=0.0,
                    passed=False,
                    error="turn 2 failed and on_turn_failure is stop",
                ),
            ]
        }
    )
