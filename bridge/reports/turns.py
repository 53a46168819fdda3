"""A conversation's turns as the text reports list them: each turn's verdict, its score
and why, the same words in the Markdown and JUnit reports."""

from __future__ import annotations

from evalrelay.bridge.results.result import TurnResult


def turn_verdict(turn: TurnResult) -> str:
    """`passed`, `failed`, `skipped` (not sent) or `not graded` (no evaluator could judge)."""
    if turn.status == "skipped":
        return "skipped"
    if turn.passed is None:
        return "not graded"
    return "passed" if turn.passed else "failed"


def turn_why(turn: TurnResult) -> str:
    """Why a turn did not pass: its error, its misses, or its judge's reasoning."""
    if turn.passed:
        return ""
    return turn.error or "; ".join(turn.misses) or (turn.reasoning or "")


def turn_line(turn: TurnResult) -> str:
    """`turn 2: failed, score 0.00: wrong city`, on one line."""
    score = "" if turn.score is None else f", score {turn.score:.2f}"
    why = turn_why(turn)
    return " ".join(
        f"turn {turn.turn}: {turn_verdict(turn)}{score}{f': {why}' if why else ''}".split()
    )
