"""Control characters of a file never reach the terminal raw, whichever command prints them."""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from rich.table import Table
from rich.text import Text

from evalrelay.bridge.cli.terminal import (
    PrintableFormatter,
    TerminalConsole,
    counted,
    plain_logs,
    printable,
)
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import Processes, WriteFiles, embedded_env

HOSTILE_ID = "title\\e]0;pwned\\a\\e[2J"
"""A case id (YAML's escapes) that would retitle the window, ring the bell, clear the screen."""


def test_case_ids_and_questions_print_as_escapes_in_every_command(
    project: WriteFiles, private_home: Path
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: broken, provider: mock, failure_rate: 1.0, "
            "failure_kind: model_failure}\n",
            "evals.yaml": f'evalcases:\n  - id: "{HOSTILE_ID}"\n'
            '    input_messages: [{role: user, content: "clear\\e[2J the screen\\a"}]\n',
            "bad.yaml": f'evalcases:\n  - id: "{HOSTILE_ID}"\n    input_mesages: []\n',
        }
    )
    env = embedded_env(private_home)
    outputs = {}
    for command in (
        ["validate", "evals.yaml", "bad.yaml"],
        ["render", "evals.yaml"],
        ["run", "evals.yaml", "--target", "broken"],
    ):
        done = evalrelay(*command, env=env, cwd=root)
        outputs[command[0]] = done.stdout + done.stderr
    (results,) = (root / "results").glob("*.jsonl")
    done = evalrelay("report", str(results), "--markdown", "report.md", env=env, cwd=root)
    outputs["report"] = done.stdout + done.stderr
    for command, output in outputs.items():
        assert "\x1b" not in output and "\x07" not in output, f"{command} printed:\n{output!r}"
    assert "case 'title\\x1b]0;pwned\\x07\\x1b[2J'" in outputs["validate"]
    assert "clear\\x1b[2J the screen" in outputs["render"]
    assert "title\\x1b]0;p" in outputs["run"]  # the failures' table, its column cut short


def test_the_console_shows_control_characters_however_they_are_printed() -> None:
    """rich strips BEL but leaves ESC and C1 controls: strings, styled strings, Text objects
    and table cells all come out as escapes, while rich's own colours stay."""
    out = io.StringIO()
    console = TerminalConsole(file=out, force_terminal=True, color_system="standard", width=200)
    hostile = "a\x1b[2Jb\x9b31mc\x00"
    table = Table("case")
    table.add_row(hostile)
    table.add_row(Text(hostile))
    console.print(hostile, style="red")
    console.print(Text(hostile), table)
    written = out.getvalue()
    assert "\x1b[31m" in written  # rich's own red, and bold for the highlighted parts
    assert re.sub(r"\x1b\[[0-9;]*m", "", written).count(printable(hostile)) == 4
    assert "\x1b[2J" not in written and "\x9b" not in written and "\x00" not in written
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"


def test_a_count_says_its_noun_in_the_singular_only_for_one() -> None:
    assert [counted(n, "job") for n in (0, 1, 2)] == ["0 jobs", "1 job", "2 jobs"]


def test_a_process_forked_while_another_thread_logs_logs_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A prefork worker forks its pool children while its other threads log: each child
    can log at once. Through rich, one fork in five hung on its first line, on a lock the
    logging thread held at the fork."""
    root = logging.getLogger()
    kept = list(root.handlers), root.level
    monkeypatch.setattr(sys, "stderr", open(os.devnull, "w"))  # noqa: SIM115
    plain_logs()
    root.setLevel(logging.INFO)
    stop = threading.Event()

    def logging_all_the_time() -> None:
        while not stop.is_set():
            logging.getLogger("evalrelay.test").info("the reaper sends job %s again", "j1")

    logger = threading.Thread(target=logging_all_the_time)
    logger.start()
    hung = 0
    try:
        for _ in range(100):
            pid = os.fork()
            if pid == 0:
                logging.getLogger("evalrelay.test").info("a pool child starts a job")
                os._exit(0)
            deadline = time.monotonic() + 5
            while not os.waitpid(pid, os.WNOHANG)[0]:
                if time.monotonic() > deadline:
                    hung += 1
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.005)
    finally:
        stop.set()
        logger.join()
        root.handlers[:], root.level = kept
    assert hung == 0, f"{hung} of 100 forked children hung on their first log line"


def test_plain_log_lines_show_control_characters_as_escapes() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "case %s", ("a\x1b[2Jb",), None)
    line = PrintableFormatter("%(levelname)s %(message)s").format(record)
    assert line == "WARNING case a\\x1b[2Jb"


NAMED = "targets:\n" + "".join(
    f"  - {{name: {name}, provider: mock, response: '{answer}'}}\n"
    for name, answer in (("a", "Paris"), ("b", "Lyon"), ("m", "Paris, France"))
)
EMOJI = ("\U0001f170", "\U0001f171", "\u24c2")
"""What rich made of `:a:`, `:b:` and `:m:`: 🅰, 🅱 and Ⓜ."""


def test_targets_named_a_b_and_m_print_as_written_in_every_command(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """rich read `g1:m:` in a line of `compare` as the emoji code `:m:`."""
    cases = "".join(
        f"  - {{id: c{i}, input_messages: [{{role: user, content: q{i}}}], "
        "evaluators: [{type: icontains, value: paris}]}\n"
        for i in range(3)
    )
    root = project({"targets.yaml": NAMED, "evals/e.yaml": f"evalcases:\n{cases}"})
    processes.worker(client, "w@test")
    env = processes.env | {"COLUMNS": "200"}
    said = {}
    for name in ("g1", "g2"):
        ran = evalrelay("run", "evals", "--target", "a,b,m", "--name", name, env=env, cwd=root)
        assert ran.returncode == 1, ran.stderr  # b fails every case
        said[f"run {name}"] = ran.stdout + ran.stderr
    said["status"] = evalrelay("status", env=env, cwd=root).stdout
    compared = evalrelay("compare", "g1", "g2", env=env, cwd=root)
    said["compare"] = compared.stdout + compared.stderr
    for command, output in said.items():
        assert not any(emoji in output for emoji in EMOJI), (command, output)
    run = " ".join(said["run g1"].split())
    for line in ("│ a │ 3 │", "│ b │ 3 │", "│ m │ 3 │", "b vs a:", "m vs a:", "m vs b:"):
        assert line in run, (line, run)
    assert "a, b, m" in said["status"], said["status"]
    for t in ("a", "b", "m"):  # each side is CAMPAIGN:TARGET
        assert re.search(rf"\bg2-\S+:{t} vs g1-\S+:{t}: ", said["compare"]), said["compare"]


def test_no_text_is_read_as_markup_or_emoji() -> None:
    """The console prints what it is given; colour comes from styles only."""
    output = io.StringIO()
    console = TerminalConsole(file=output, width=80, color_system=None)
    console.print("target [red]x[/] on g1:m: :a: :smile:")
    table = Table("target")
    table.add_row("[bold]m[/bold] :b:")
    console.print(table)
    assert "target [red]x[/] on g1:m: :a: :smile:" in output.getvalue()
    assert "[bold]m[/bold] :b:" in output.getvalue()


def test_outside_a_terminal_a_long_line_is_not_cut_at_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A results path or an interval written to a pipe or a log stays on one line."""
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    path = "/srv/evalrelay/" + "a-long-folder-name/" * 8 + "results.jsonl"
    TerminalConsole(file=out).print(f"results: {path}  0.812 [0.771, 0.848]")
    assert out.getvalue() == f"results: {path}  0.812 [0.771, 0.848]\n"
    monkeypatch.setenv("COLUMNS", "60")
    narrow = io.StringIO()
    TerminalConsole(file=narrow).print(path)
    assert len(narrow.getvalue().splitlines()) > 1  # COLUMNS still rules


def test_outside_a_terminal_log_lines_are_plain_neither_padded_nor_cut(
    project: WriteFiles, private_home: Path
) -> None:
    """A service's log in a file or `docker logs`: a line per message, as long as it is,
    shaped as in a terminal (`[time] LEVEL    message`)."""
    case = "evalcases:\n  - {id: a, input_messages: [{role: user, content: hi}]}\n"
    root = project({"targets.yaml": "targets:\n  - {name: m, provider: mock}\n", "e.yaml": case})
    env = {k: v for k, v in embedded_env(private_home).items() if k != "COLUMNS"}
    done = evalrelay("-v", "run", "e.yaml", "--target", "m", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    logged = [line for line in done.stderr.splitlines() if re.match(r"\[[\d:]+\] INFO {5}", line)]
    assert any(line.endswith(": ok (published)") for line in logged), done.stderr
    assert all(line == line.rstrip() for line in logged)  # no padding to a width
