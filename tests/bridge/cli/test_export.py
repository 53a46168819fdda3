"""`evalrelay export --inspect`: the command in this process and as a real process, a
20,000-result campaign in bounded memory, and Inspect's own viewer serving what it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inspect_ai.log import read_eval_log, read_eval_log_sample, read_eval_log_sample_summaries

from evalrelay.bridge.cli.main import cli
from tests.bridge.reports.reporting import CAMPAIGN, many_results, write_campaign
from tests.conftest import free_port, loopback_server

RSS_SCRIPT = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
print(json.dumps({"code": done.returncode, "out": done.stdout,
                  "rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""
"""Runs a command and tells its peak memory (RSS), that of the command alone."""


def test_export_by_id_writes_a_log_per_target_and_prints_each(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN)
    out = tmp_path / "inspect" / "evals.eval"
    outcome = CliRunner().invoke(
        cli, ["export", "camp", "--results", str(results), "--inspect", str(out)]
    )
    assert outcome.exit_code == 0, outcome.output
    claude, gpt = out.with_name("evals-claude.eval"), out.with_name("evals-gpt.eval")
    assert outcome.output.splitlines() == [f"inspect: {claude}", f"inspect: {gpt}"]
    assert not out.exists()
    assert read_eval_log(str(claude), header_only=True).eval.model == "claude"
    assert len(read_eval_log(str(gpt)).samples or []) == 4


def test_target_picks_one_and_writes_file_as_given(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", CAMPAIGN)
    out = tmp_path / "gpt.json"
    outcome = CliRunner().invoke(
        cli, ["export", str(path), "--inspect", str(out), "--target", "gpt"]
    )
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.splitlines() == [f"inspect: {out}"]
    assert "inspect view shows gpt.json only under a name that starts with a timestamp" in (
        outcome.stderr
    )
    assert [s.id for s in read_eval_log(str(out)).samples or []] == [
        "capital",
        "desert",
        "mountain",
        "river",
    ]


def test_a_json_log_named_as_inspect_names_them_needs_no_note(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", CAMPAIGN)
    out = tmp_path / "2026-11-21T12-00-00_geo.json"
    outcome = CliRunner().invoke(cli, ["export", str(path), "--inspect", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stderr == ""
    assert (tmp_path / "2026-11-21T12-00-00_geo-gpt.json").is_file()


def test_unknown_target_and_wrong_suffix_are_one_line_errors(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", CAMPAIGN)
    unknown = CliRunner().invoke(
        cli, ["export", str(path), "--inspect", str(tmp_path / "x.eval"), "--target", "llama"]
    )
    assert unknown.exit_code != 0
    assert "no target 'llama'; its targets: claude, gpt" in str(unknown.exception)
    wrong = CliRunner().invoke(
        cli, ["export", "no-such-campaign", "--inspect", str(tmp_path / "x.zip")]
    )
    assert "give one of those suffixes, not '.zip'" in str(wrong.exception)  # checked first
    assert not list(tmp_path.glob("x*"))


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalrelay", *args]


def test_the_real_command_writes_a_log_inspect_reads(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", CAMPAIGN)
    out = tmp_path / "logs" / "camp.eval"
    done = subprocess.run(
        command("export", str(path), "--inspect", str(out), "--target", "gpt"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"inspect: {out}\n"
    log = read_eval_log(str(out))
    assert log.results is not None and log.results.total_samples == 4
    bad = subprocess.run(
        command("export", str(path), "--inspect", str(tmp_path / "x.txt")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr


def peak(argv: list[str], cwd: Path) -> dict[str, Any]:
    """`argv` run as a process of its own: its exit code, output and peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + RSS_SCRIPT, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_twenty_thousand_results_export_in_bounded_memory(tmp_path: Path) -> None:
    """Holding the 20,000 results would take ~130 MB more than the command's imports (and
    their samples, ~45 MB a target more); the export reads them one at a time."""
    path = write_campaign(tmp_path / "results", many_results(20_000))
    out = tmp_path / "logs" / "big.eval"
    # The command's imports without its work: every command's module, export's among them.
    load = "from evalrelay.bridge.cli.main import cli; cli.every_command()"
    imports = peak([sys.executable, "-c", load], tmp_path)
    export = peak(command("export", str(path), "--inspect", str(out)), tmp_path)
    assert export["code"] == 0
    logs = [out.with_name(f"big-{t}.eval") for t in ("claude", "gpt", "mistral")]
    assert export["out"].splitlines() == [f"inspect: {log}" for log in logs]
    assert export["rss_kb"] - imports["rss_kb"] < 40_000, (export, imports)
    for log in logs:
        header = read_eval_log(str(log), header_only=True)
        assert header.results is not None and header.results.total_samples in (6666, 6667)
        assert header.eval.dataset.samples == header.results.total_samples
    assert len(read_eval_log_sample_summaries(str(logs[1]))) == 6667
    needle = read_eval_log_sample(str(logs[1]), id="case-0906", epoch=1)
    assert needle.output.completion == "a needle in the haystack"


def test_inspect_view_lists_and_serves_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inspect's own viewer, as `inspect view --log-dir` runs it, on loopback."""
    path = write_campaign(tmp_path / "results", CAMPAIGN)
    logs = tmp_path / "logs"
    CliRunner().invoke(cli, ["export", str(path), "--inspect", str(logs / "camp.eval")])
    port = free_port()
    viewer = Path(sys.executable).with_name("inspect")
    argv = [str(viewer), "view", "--log-dir", str(logs), "--port", str(port)]
    api = f"http://127.0.0.1:{port}/api"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # what it keeps stays in the test's
    with loopback_server(argv, f"{api}/logs", tmp_path / "view.log", 60):
        listing = get(f"{api}/logs")
        names = sorted(Path(urllib.parse.urlparse(f["name"]).path).name for f in listing["files"])
        assert names == ["camp-claude.eval", "camp-gpt.eval"]
        assert {f["task"] for f in listing["files"]} == {"geo"}
        gpt = (logs / "camp-gpt.eval").as_uri()
        [header] = get(f"{api}/log-headers?file={urllib.parse.quote(gpt)}")
        assert (header["eval"]["model"], header["status"]) == ("gpt", "success")
        assert header["results"]["scores"][0]["metrics"]["accuracy"]["value"] == 0.5
        log = get(f"{api}/logs/{urllib.parse.quote(gpt, safe='')}")
        assert sorted(s["id"] for s in log["samples"]) == ["capital", "desert", "mountain", "river"]
        size = int(urllib.request.urlopen(f"{api}/log-size/{urllib.parse.quote(gpt)}").read())
        assert size == (logs / "camp-gpt.eval").stat().st_size
        start = urllib.request.urlopen(f"{api}/log-bytes/{urllib.parse.quote(gpt)}?start=0&end=3")
        assert start.read() == b"PK\x03\x04"  # the viewer reads the zip itself, by ranges


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)
