"""How pytest-xdist shares the tests among its workers (`pytest -n 3`).

Each test goes to whichever worker is free, as xdist's default `load` does, except the
tests of a module whose module fixture is costly: all of those go to one worker, so the
fixture runs once, not once on each worker a test of the module lands on. (xdist's own
`--dist loadgroup` marks do not reach its scheduler under pytest 9, whose node ids no
longer take the group suffix xdist writes.) Only node ids reach the scheduler, so the
modules are named here by path.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

SHARED_FIXTURE_MODULES = frozenset(
    {
        "tests/bridge/evalfile/harbor/test_harbor_parity.py",  # real Harbor runs the corpus
        "tests/bridge/evalfile/test_hostile_files.py",  # validate of every hostile file
        "tests/bridge/reports/test_compare_statistics.py",  # a campaign run
        "tests/bridge/reports/test_pages.py",  # two campaigns run
        "tests/docs/test_site.py",  # the docs site built
        "tests/worker/providers/test_openai.py",  # a llama-cpp server started
        "tests/worker/trials/test_trials_run.py",  # a task image built
    }
)


class SharedFixtureScheduling(LoadScopeScheduling):
    """A test is a unit of its own, but for the tests of a shared-fixture module: one."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in SHARED_FIXTURE_MODULES else nodeid
