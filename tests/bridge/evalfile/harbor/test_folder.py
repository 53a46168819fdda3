"""Reading Harbor task folders: a task is one case, a folder of them a dataset, and every
problem of a task.toml is reported at its line and column, or refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.errors import InvalidFileError, TargetError
from evalrelay.bridge.evalfile.cases import eval_files_under, load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from tests.conftest import WriteFiles

TEST_SH = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"


def task(toml: str, **extra: str) -> dict[str, str]:
    """The files of a single-step task under `tasks/t/`, with `extra` files beside them."""
    files = {
        "task.toml": toml,
        "instruction.md": "Write hello.\n",
        "environment/Dockerfile": "FROM evalrelay-base:bookworm\n",
        "tests/test.sh": TEST_SH,
        **extra,
    }
    return {f"tasks/t/{name}": text for name, text in files.items()}


def problems(root: Path) -> list[str]:
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "tasks/t/task.toml")
    return [str(d).replace(str(root) + "/", "") for d in caught.value.diagnostics]


def test_a_task_is_one_case_named_by_its_task_table(project: WriteFiles) -> None:
    root = project(task('schema_version = "1.1"\n[task]\nname = "org/hello"\n'))
    loaded = load_eval_file(root / "tasks/t/task.toml")
    assert [c.id for c in loaded.cases] == ["org/hello"]
    assert loaded.dataset == "tasks"
    assert loaded.format == "Harbor task (task.toml)"
    assert loaded.cases[0].messages[0].parts[0].value == "Write hello.\n"  # type: ignore[union-attr]


def test_without_a_name_the_task_is_its_folder_and_dataset_toml_names_the_dataset(
    project: WriteFiles,
) -> None:
    root = project({**task(""), "tasks/dataset.toml": '[dataset]\nname = "smoke"\n'})
    loaded = load_eval_file(root / "tasks/t/task.toml")
    assert (loaded.cases[0].id, loaded.dataset) == ("t", "smoke")
    (note,) = loaded.notes
    assert note.endswith(
        "task.toml:1:1: Harbor needs [task].name as `org/name`; evalrelay runs this task as 't'"
    )


def test_schema_errors_name_the_line_and_column_of_the_key(project: WriteFiles) -> None:
    root = project(task('version = "1.0"\n\n[environment]\n  cpus = "many"\n'))
    assert problems(root) == [
        "tasks/t/task.toml:4:3: environment.cpus: Input should be a valid number, "
        "unable to parse string as a number"
    ]


def test_a_step_key_is_placed_in_its_own_steps_entry(project: WriteFiles) -> None:
    toml = '[[steps]]\nname = "a"\n\n[[steps]]\nname = "b"\nmin_reward = "high"\n'
    root = project(task(toml, **{"steps/a/instruction.md": "a", "steps/b/instruction.md": "b"}))
    (problem,) = problems(root)
    assert problem.startswith("tasks/t/task.toml:6:1: steps.1.min_reward")


def test_toml_syntax_errors_name_their_place(project: WriteFiles) -> None:
    root = project(task('[task]\nname = "x\n'))
    (problem,) = problems(root)
    assert problem.startswith("tasks/t/task.toml:2:")
    assert "not valid TOML" in problem


@pytest.mark.parametrize(
    ("toml", "extra", "says"),
    [
        ("[environment]\ngpus = 1\n", {}, "tasks/t/task.toml:2:1: gpus = 1: evalrelay's workers"),
        (
            '[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n',
            {},
            'tasks/t/task.toml:2:1: network_mode = "allowlist" is not enforced here yet',
        ),
        ('[environment]\nos = "windows"\n', {}, "tasks/t/task.toml:2:1: os = 'windows'"),
        (
            "",
            {"environment/docker-compose.yaml": "services: {}\n"},
            "tasks/t/environment/docker-compose.yaml:1:1: multi-container tasks",
        ),
    ],
)
def test_what_cannot_run_here_is_refused_with_the_reason(
    project: WriteFiles, toml: str, extra: dict[str, str], says: str
) -> None:
    root = project(task(toml, **extra))
    (problem,) = problems(root)
    assert problem.startswith(says)


def test_missing_tests_and_instructions_are_named(project: WriteFiles) -> None:
    files = task('[[steps]]\nname = "first"\n')
    del files["tasks/t/tests/test.sh"]
    root = project(files)
    assert problems(root) == [
        "tasks/t/task.toml:1:1: steps/first/instruction.md is missing (step 'first' asks "
        "the agent)",
        "tasks/t/task.toml:1:1: tests/test.sh is missing (step 'first' has no "
        "steps/first/tests/test.sh)",
    ]


def test_schema_one_spellings_read_as_harbor_reads_them(project: WriteFiles) -> None:
    root = project(
        task(
            'version = "1.0"\n[environment]\nmemory = "4G"\nstorage = "10G"\n'
            "allow_internet = false\n"
        )
    )
    env = load_eval_file(root / "tasks/t/task.toml").task.spec.config.environment  # type: ignore[union-attr]
    assert (env.memory_mb, env.storage_mb, env.network) == (4096, 10240, "no-network")


def test_unknown_keys_are_noted_at_their_place_not_refused(project: WriteFiles) -> None:
    root = project(task('[task]\nname = "o/t"\n[verifier]\ntimeout_sec = 5\nretries_please = 2\n'))
    loaded = load_eval_file(root / "tasks/t/task.toml")
    (note,) = loaded.notes
    assert note.endswith(
        "task.toml:5:1: `verifier.retries_please` is not part of Harbor's "
        "task format as evalrelay reads it; ignored"
    )


def test_a_folder_of_tasks_finds_each_task_and_no_yaml_inside_them(project: WriteFiles) -> None:
    root = project(
        {
            **task(""),
            "tasks/t/environment/config.yaml": "not: an eval file\n",
            "tasks/u/task.toml": "",
            "evals/plain.yaml": "evalcases: []\n",
        }
    )
    found = eval_files_under([root / "tasks", root / "evals"])
    assert [p.relative_to(root).as_posix() for p in found] == [
        "tasks/t/task.toml",
        "tasks/u/task.toml",
        "evals/plain.yaml",
    ]


def test_jobs_carry_the_task_files_by_content_and_go_to_the_task_queue(
    project: WriteFiles,
) -> None:
    root = project(task('[task]\nname = "org/t"\n'))
    loaded = load_eval_file(root / "tasks/t/task.toml")
    jobs = plan_jobs("c", [loaded], ["oracle", "nop"], 3)
    assert len(jobs) == 6
    assert {(j.target.name, j.target.queue) for j in jobs} == {("oracle", "task"), ("nop", "task")}
    spec = jobs[0].task
    assert spec is not None
    assert [f.path for f in spec.files] == [
        "environment/Dockerfile",
        "instruction.md",
        "task.toml",
        "tests/test.sh",
    ]
    assert spec.build and spec.image.startswith("evalrelay-task:")
    before = spec.image
    (root / "tasks/t/instruction.md").write_text("Write bye.\n")
    assert load_eval_file(root / "tasks/t/task.toml").task.spec.image == before  # type: ignore[union-attr]
    (root / "tasks/t/environment/Dockerfile").write_text("FROM evalrelay-base:bookworm\nRUN true\n")
    assert load_eval_file(root / "tasks/t/task.toml").task.spec.image != before  # type: ignore[union-attr]


def test_task_agents_and_eval_targets_do_not_mix(project: WriteFiles) -> None:
    root = project(
        {
            **task(""),
            "evals/plain.yaml": (
                "evalcases:\n  - id: a\n    input_messages: [{role: user, content: hi}]\n"
            ),
        }
    )
    with pytest.raises(TargetError, match="cannot work inside a task's container"):
        plan_jobs("c", [load_eval_file(root / "tasks/t/task.toml")], ["mock"], 1)
    with pytest.raises(TargetError, match="runs container tasks"):
        plan_jobs("c", [load_eval_file(root / "evals/plain.yaml")], ["oracle"], 1)


def test_a_missing_key_is_named_in_full_at_its_table(project: WriteFiles) -> None:
    root = project(task("[[steps]]\nmin_reward = 1.0\n"))
    assert problems(root) == ["tasks/t/task.toml:1:1: steps.0.name: Field required"]
