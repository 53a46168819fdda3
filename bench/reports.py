"""What `report --html`, `status CAMPAIGN` and `compare` cost on a big campaign, at two sizes
side by side, so that time and memory can be seen to stay flat (issue 17).

Each size gets two synthetic campaigns (`before` and `after`, a few outcomes apart) of
results made with the real `Result` model, written as the collector writes them (one
line per job, in no particular order), and announced in Redis as `run` leaves them: the
campaign's info, its jobs, the collected ids and the counts. Each command then runs as
its own process, from a folder that holds nothing, so it finds the campaign as a user's
would: through Redis. For each: wall time, peak RSS (the child's `ru_maxrss`) and the
size of what it wrote: the HTML page apart from the parts folder beside it.

The page `report --html` wrote is then opened in headless Chromium (when it is
installed), next to an empty page as the baseline: when the page is ready (its script
has put the first rows in, by `performance.now()`), the browser's wall time, and the
peak memory of all its processes (proportional set size, sampled); then the same for
expanding the hundred rows of its last page, which reads their details.

    python bench/reports.py [--results 100000] [--redis redis://127.0.0.1:6379/15]

The smaller size is a tenth of `--results`. Redis database `--redis` is emptied before
and after.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import psutil
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalrelay.bridge.contract.job import Job, TargetRef, job_id  # noqa: E402
from evalrelay.bridge.prompt.messages import ChatMessage  # noqa: E402
from evalrelay.bridge.prompt.request import PromptRequest  # noqa: E402
from evalrelay.bridge.queue.campaigns import CampaignInfo, announce, store_jobs  # noqa: E402
from evalrelay.bridge.results.collected import make_home  # noqa: E402
from evalrelay.bridge.results.result import ErrorInfo, EvaluatorResult, Result, Status, Usage  # noqa: E402
from evalrelay.bridge.results.results_file import ResultsFile  # noqa: E402

TARGETS = ("gpt-4o-mini", "claude-sonnet", "local-qwen")
DATASETS = ("geography", "arithmetic")
START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SYSTEM_PROMPT = (
    "You are a careful assistant answering questions for an evaluation. Answer in one short "
    "paragraph, state the answer first, then give the reasoning that supports it. If you are "
    "not sure, say so plainly instead of guessing. Do not use Markdown headings. "
)
WORDS = ("the", "capital", "river", "border", "coast", "because", "north", "city", "trade", "old")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _request(case: int) -> PromptRequest:
    """The same request for a case on every target, as `plan_jobs` builds it."""
    question = f"Question {case}: " + _text(random.Random(case), 40)
    return PromptRequest(
        question=question,
        chat_prompt=[
            ChatMessage(role="system", content=SYSTEM_PROMPT),
            ChatMessage(role="user", content=question),
        ],
        system_prompt=SYSTEM_PROMPT,
    )


def synthetic_result(campaign_id: str, index: int, drift: int) -> Result:
    """Result `index` of a campaign of API targets: mostly graded answers, some failures
    and errors. `drift` changes the outcome of about one result in twenty."""
    case, target = divmod(index, len(TARGETS))
    rng = random.Random(index * 7919 + (drift if index % 20 == 0 else 0))
    roll = rng.random()
    dataset = DATASETS[case % len(DATASETS)]
    started = START + timedelta(milliseconds=index * 37)
    duration = rng.randint(400, 9000)
    fields: dict[str, object] = {}
    if roll < 0.85:
        score = round(rng.random() ** 0.3, 3)
        passed = score >= 0.8
        fields = {
            "status": Status.OK,
            "answer": _text(rng, 70),
            "score": score,
            "passed": passed,
            "hits": ["names the place"] if passed else [],
            "misses": [] if passed else ["does not name the place", "reasoning is circular"],
            "reasoning": _text(rng, 25),
            "evaluator_results": [
                EvaluatorResult(name="contains", type="contains", score=1.0 if passed else 0.0),
                EvaluatorResult(
                    name="judge",
                    type="llm_judge",
                    score=score,
                    reasoning=_text(rng, 25),
                    details={"model": "gpt-4o", "attempts": 1},
                ),
            ],
            "usage": Usage(input_tokens=rng.randint(150, 400), output_tokens=rng.randint(40, 200)),
        }
    elif roll < 0.9:
        fields = {"status": Status.MODEL_FAILURE, "answer": "", "error": "empty answer"}
    elif roll < 0.96:
        fields = {"status": Status.INFRA_ERROR, "error": "connection refused by 10.0.0.7:443"}
    elif roll < 0.99:
        fields = {"status": Status.TIMEOUT, "error": "the job's time limit ran out"}
    else:
        fields = {"status": Status.RATE_LIMITED, "error": "429 Too Many Requests, 3 times"}
    error = fields.pop("error", None)
    status = fields["status"]
    return Result.model_validate(
        {
            "campaign_id": campaign_id,
            "job_id": job_id(campaign_id, dataset, f"case-{case:06d}", TARGETS[target], 0),
            "case_id": f"case-{case:06d}",
            "dataset": dataset,
            "target": TARGETS[target],
            "metadata": {"tags": [dataset]},
            "expected_outcome": "Names the right place and says why.",
            "reference_answer": f"The answer to question {case}.",
            "raw_request": _request(case),
            "started_at": started,
            "finished_at": started + timedelta(milliseconds=duration),
            "duration_ms": duration,
            "worker": f"worker-{index % 4}@host",
            "error": ErrorInfo(kind=str(status), message=str(error)) if error else None,
            "artifacts": {
                "model": TARGETS[target],
                "finish_reason": "stop",
                "request_id": f"req-{rng.getrandbits(64):016x}",
                "latency_ms": duration - 20,
                "calls": [{"attempt": 1, "status": "ok", "duration_ms": duration - 25}],
            },
            **fields,
        }
    )


def write_campaign(folder: Path, campaign_id: str, count: int, drift: int) -> Path:
    """The JSONL in the order jobs finish (shuffled), one line per result, never all held."""
    order = list(range(count))
    random.Random(count).shuffle(order)
    path = folder / f"{campaign_id}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for index in order:
            handle.write(synthetic_result(campaign_id, index, drift).model_dump_json() + "\n")
    return path


def announce_campaign(
    client: redis.Redis, folder: Path, campaign_id: str, count: int, jobs_too: bool
) -> None:
    """What `run` and its collector leave in Redis: the info, every job (`jobs_too`: only
    for the campaign `status` shows, to spare the shared server), collected ids and counts
    (`make_home`, as a collector opening the file does)."""
    target = {
        name: TargetRef(name=name, kind="openai", queue="api", settings={"model": name})
        for name in TARGETS
    }
    jobs = []
    for index in range(count if jobs_too else 0):
        case, t = divmod(index, len(TARGETS))
        dataset, case_id = DATASETS[case % len(DATASETS)], f"case-{case:06d}"
        jobs.append(
            Job(
                campaign_id=campaign_id,
                job_id=job_id(campaign_id, dataset, case_id, TARGETS[t], 0),
                case_id=case_id,
                dataset=dataset,
                target=target[TARGETS[t]],
                request=_request(case),
                timeout_seconds=300,
            )
        )
        if len(jobs) == 1000:
            store_jobs(client, jobs)
            jobs = []
    store_jobs(client, jobs)
    info = CampaignInfo(
        campaign_id=campaign_id,
        created_at=datetime.now(UTC),
        sources=["evals/big.yaml"],
        targets=sorted(TARGETS),
        total=count,
        out_dir=str(folder),
    )
    announce(client, info, [])
    results = ResultsFile(folder, campaign_id, expected=count)
    results.close()
    make_home(client, campaign_id, results, "bench")


class Measured(NamedTuple):
    seconds: float
    peak_mib: float
    output_bytes: int
    """Of the report written (but its parts folder), or else of what was printed."""
    parts_bytes: int
    """Of the HTML report's parts folder."""
    exit_code: int


LAUNCHER = """
import os, sys, time
began = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    print(time.perf_counter() - began, usage.ru_maxrss, os.waitstatus_to_exitcode(status), file=out)
"""
"""Starts the command from a process that holds almost nothing: a child forked straight
from this one (which holds the synthetic campaigns' Redis work) would count this one's
pages in its own peak until it execs."""


def measure(args: list[str], env: dict[str, str], cwd: Path, written: Path | None) -> Measured:
    """One CLI process: its wall time, its peak RSS (`ru_maxrss` of that child alone,
    from `wait4`), and the size of `written` (a file, or a folder's files) or else of
    what it printed."""
    out, figures = cwd / "stdout.txt", cwd / "figures.txt"
    command = [sys.executable, "-m", "evalrelay", *args]
    with out.open("wb") as stdout:
        subprocess.run(
            [sys.executable, "-c", LAUNCHER, str(figures), *command],
            env=env,
            cwd=cwd,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=True,
        )
    seconds, peak_kib, code = figures.read_text().split()
    size, parts = written_bytes(written or out)
    return Measured(float(seconds), int(peak_kib) / 1024, size, parts, int(code))


def written_bytes(written: Path) -> tuple[int, int]:
    """The bytes of `written` (a file, or a folder's files) and of the parts folders of
    the HTML reports among them, apart."""
    pages = [written] if written.is_file() else [p for p in written.iterdir() if p.is_file()]
    size = sum(p.stat().st_size for p in pages)
    folders = [p.with_name(p.name + ".parts") for p in pages if p.suffix == ".html"]
    parts = sum(f.stat().st_size for d in folders if d.is_dir() for f in d.iterdir())
    return size, parts


def commands(before: str, after: str, out: Path) -> Iterator[tuple[str, list[str], Path | None]]:
    """(label, arguments, file written) for one size."""
    html = out / "report.html"
    yield "python startup (--help)", ["--help"], None
    yield "report --html", ["report", after, "--html", str(html)], html
    yield "report (all three)", ["report", after, "--out", str(out / "all")], out / "all"
    yield "status", ["status"], None
    yield "status CAMPAIGN", ["status", after], None
    yield "compare BEFORE AFTER", ["compare", before, after], None


def run_size(
    client: redis.Redis, folder: Path, count: int, env: dict[str, str]
) -> tuple[dict[str, Measured], dict[str, Browsed]]:
    results = folder / f"results-{count}"
    results.mkdir()
    before, after = f"before-{count}", f"after-{count}"
    began = time.perf_counter()
    for campaign_id, drift in ((before, 0), (after, 1)):
        write_campaign(results, campaign_id, count, drift)
        announce_campaign(client, results, campaign_id, count, jobs_too=bool(drift))
    size = (results / f"{after}.jsonl").stat().st_size
    print(
        f"{count:,} results: written and announced in {time.perf_counter() - began:.0f} s "
        f"(JSONL {size / 1e6:.1f} MB)",
        flush=True,
    )
    cwd = folder / f"cwd-{count}"
    cwd.mkdir()
    measured = {}
    for label, args, written in commands(before, after, cwd):
        measured[label] = measure(args, env, cwd, written)
        print(f"  {label}: {cell(measured[label])}", flush=True)
    return measured, (browse_report(cwd, count) if _has_chromium() else {})


def _has_chromium() -> bool:
    return bool(shutil.which("chromium") or shutil.which("chromium-browser"))


def cell(m: Measured) -> str:
    size = _bytes(m.output_bytes)
    parts = f"+ {_bytes(m.parts_bytes)}" if m.parts_bytes else ""
    code = f" exit {m.exit_code}" if m.exit_code else ""
    return f"{m.seconds:6.2f} s {m.peak_mib:6.0f} MiB {size:>9} {parts:>10}{code}"


def _bytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e5 else f"{count} B"


class Browsed(NamedTuple):
    ready_ms: float | None
    """From the start of navigation to the end of the page's own script."""
    seconds: float
    """The browser's wall time, start to exit."""
    peak_mib: float
    """The largest sum of the proportional set sizes of the browser's processes."""
    answers: int
    """Answers shown in the document: the details of opened rows."""


READY = "<script>document.body.setAttribute('data-ready', performance.now().toFixed(0));</script>"
EXPAND = "<script>document.getElementById('expand-all').click();</script>"


def browse(page: Path, script: str, fragment: str = "", wait: bool = False) -> Browsed:
    """`page` with `script` run after its own, in headless Chromium as the report tests
    open it; `wait` lets it read what the script asked for (virtual time) before the DOM
    is taken."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None
    timed = page.with_name("timed-" + page.name)  # beside the page: its parts folder is there
    timed.write_bytes(page.read_bytes().replace(b"</body>", script.encode() + b"</body>"))
    dom = page.with_name("dom.html")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--dump-dom"]
    flags += [f"--user-data-dir={page.parent / 'chromium-profile'}"]
    flags += ["--virtual-time-budget=5000"] if wait else []
    began = time.perf_counter()
    with dom.open("wb") as out:
        browser = subprocess.Popen(
            [chromium, *flags, timed.as_uri() + fragment], stdout=out, stderr=subprocess.DEVNULL
        )
        peak = _watch_memory(browser)
    seconds = time.perf_counter() - began
    text = dom.read_text(errors="replace")
    ready = re.search(r'data-ready="(\d+)"', text)
    answers = text.count('<pre class="answer">')
    timed.unlink()
    return Browsed(float(ready.group(1)) if ready else None, seconds, peak / 2**20, answers)


def _watch_memory(browser: subprocess.Popen[bytes]) -> int:
    """The peak total PSS of `browser` and its children, every 50 ms until it exits."""
    root, peak = psutil.Process(browser.pid), 0
    while browser.poll() is None:
        total = 0
        with contextlib.suppress(psutil.Error):  # a process that ended as it was read
            for process in [root, *root.children(recursive=True)]:
                total += process.memory_full_info().pss
        peak = max(peak, total)
        time.sleep(0.05)
    browser.wait()
    return peak


def browse_report(cwd: Path, count: int) -> dict[str, Browsed]:
    """The report `report --html` wrote, opened, and its last page of rows expanded."""
    page = cwd / "report.html"
    empty = cwd / "empty.html"
    empty.write_text("<!DOCTYPE html><html><body></body></html>")
    last = (count + 99) // 100
    browsed = {
        "empty page (baseline)": browse(empty, READY),
        "open the report": browse(page, READY),
        "expand the last page": browse(page, READY + EXPAND, f"#view=list&page={last}", wait=True),
    }
    for label, b in browsed.items():
        print(f"  browser, {label}: {_browsed(b)}", flush=True)
    return browsed


def _browsed(b: Browsed) -> str:
    ready = "-" if b.ready_ms is None else f"{b.ready_ms:.0f} ms"
    return f"ready {ready:>8}, {b.seconds:5.2f} s, {b.peak_mib:5.0f} MiB, {b.answers} answers"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    args = parser.parse_args()
    sizes = (args.results // 10, args.results)
    client = redis.Redis.from_url(args.redis)
    client.flushdb()
    env = {**os.environ, "EVALRELAY_REDIS_URL": args.redis, "COLUMNS": "120"}
    try:
        with tempfile.TemporaryDirectory(prefix="evalrelay-bench-") as folder:
            runs = {count: run_size(client, Path(folder), count, env) for count in sizes}
    finally:
        client.flushdb()
    (small, small_browsed), (big, big_browsed) = (runs[count] for count in sizes)
    print()
    print(f"{'command':<24} {f'{sizes[0]:,} results':>45}   {f'{sizes[1]:,} results':>45}")
    for label in small:
        print(f"{label:<24} {cell(small[label]):>45}   {cell(big[label]):>45}")
    print("(time, peak RSS, size of the report written or of the output printed, + its parts)")
    if not small_browsed:
        print("no chromium: the page was not opened")
    for label in small_browsed:
        print(
            f"{label:<24} {_browsed(small_browsed[label]):>45}   {_browsed(big_browsed[label]):>45}"
        )
    if small_browsed:
        print(
            "(Chromium: page ready after, wall time, peak PSS of all its processes, answers shown)"
        )


if __name__ == "__main__":
    main()
