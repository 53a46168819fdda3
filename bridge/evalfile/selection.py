"""Choosing some cases of loaded eval files: `--case PATTERN` and `--tag TAG`."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import LoadedCase, LoadedEvalFile


def case_tags(case: LoadedCase) -> set[str]:
    """A case's tags: `metadata.tags` (AgentV's suite `tags` land there too)."""
    tags = case.case.metadata.get("tags")
    if isinstance(tags, str):
        return {tags}
    return {str(tag) for tag in tags} if isinstance(tags, list) else set()


def case_chosen(case_id: str, patterns: Sequence[str]) -> bool:
    """Whether `--case` patterns (shell globs; none means every case) choose this id."""
    return not patterns or any(fnmatchcase(case_id, p) for p in patterns)


def select_cases(
    files: Sequence[LoadedEvalFile], patterns: Sequence[str] = (), tags: Sequence[str] = ()
) -> list[LoadedEvalFile]:
    """The files with only the cases whose id matches a pattern (shell globs, `*`/`?`) and
    that carry one of the tags; files left with no case are dropped. Nothing chosen is an
    error that lists what there is."""
    if not patterns and not tags:
        return list(files)
    chosen = []
    for loaded in files:
        cases = [
            case
            for case in loaded.cases
            if case_chosen(case.id, patterns) and (not tags or case_tags(case) & set(tags))
        ]
        if cases:
            chosen.append(loaded._replace(cases=cases))
    if not chosen:
        wanted = " and ".join(
            part
            for part in (
                f"--case {' '.join(patterns)}" if patterns else "",
                f"--tag {' '.join(tags)}" if tags else "",
            )
            if part
        )
        ids = [case.id for loaded in files for case in loaded.cases]
        known_tags = sorted({t for loaded in files for c in loaded.cases for t in case_tags(c)})
        shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
        raise EvalrelayError(
            f"no case matches {wanted}; the cases are {shown}"
            + (f"; the tags are {', '.join(known_tags)}" if known_tags else "; no case has tags")
        )
    return chosen
