"""`evalrelay serve` end to end: the real server, worker, collector and campaign, and what
headless Chromium shows of the pages while the campaign runs and once it is finished."""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from evalrelay.bridge.keys import results_home_key
from evalrelay.bridge.live.access import TOKEN_VARIABLE
from evalrelay.bridge.live.feed import CampaignFeed, CampaignsFeed
from evalrelay.bridge.queue.campaigns import CampaignInfo
from evalrelay.bridge.queue.rebuild import write_record
from evalrelay.bridge.results.collected import ResultsHome
from evalrelay.bridge.results.result import Status
from tests.bridge.cli.test_run import evalrelay
from tests.bridge.queue.test_campaigns import add_campaign
from tests.bridge.reports.pictures import keep
from tests.bridge.reports.reporting import (
    CAMPAIGN,
    OPEN_ALL,
    long_answers,
    many_results,
    result,
    write_campaign,
)
from tests.browser import FLAGS, chromium, dom, screenshot
from tests.conftest import (
    PrivateRedis,
    Processes,
    WriteFiles,
    embedded_env,
    free_port,
    listening,
    one_turn_cases,
    read_jsonl,
    wait_for,
)

CASES = 60
SLOW = (
    "targets:\n"
    "  - {name: slow, provider: mock, latency_ms: 500, failure_rate: 0.3,"
    " failure_kind: infra_error}\n"
)


PRINTED_ADDRESS = re.compile(r"^evalrelay serve: http://\S+:(\d+)/ ", re.MULTILINE)


def printed_port(said: str) -> int | None:
    """The port `evalrelay serve` says it listens on, once it has said so."""
    found = PRINTED_ADDRESS.search(said)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[bytes]
    port: int


def start_serve(
    processes: Processes,
    results: Path,
    *args: str,
    name: str = "serve",
    extra_env: dict[str, str] | None = None,
) -> Served:
    """`evalrelay serve` on a port it chose itself (`--port 0`), once it listens there.

    A port picked free beforehand can be taken by another test's server before this one
    binds it; that server would then answer in this one's place."""
    process = processes.start(
        "serve", "--port", "0", "--results", str(results), *args, name=name, extra_env=extra_env
    )
    wait_for(
        lambda: process.poll() is not None or printed_port(processes.log(name)) is not None,
        30,
        f"serve: {processes.log(name)}",
    )
    port = printed_port(processes.log(name))
    assert process.poll() is None and port is not None, processes.log(name)
    return Served(process, port)


def answers_at(log: Path) -> bool:
    """Whether the server whose output is in `log` answers at the port it printed there."""
    port = printed_port(log.read_text(errors="replace"))
    return port is not None and answers(port)


def answers(port: int) -> bool:
    """Whether the server answers at all (beyond loopback, without its token: 401)."""
    try:
        return get(port, "/api/campaigns")[0] in (200, 401)
    except OSError:
        return False


def get(
    port: int, path: str, host: str | None = None, auth: str = "", cookie: str = ""
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """`path` sent as written (no client tidies `..` or `%2f` away), with Host `host`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host or f"127.0.0.1:{port}")
        if auth:
            connection.putheader("Authorization", auth)
        if cookie:
            connection.putheader("Cookie", cookie)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def campaign_feed(port: int, campaign: str, query: str = "") -> CampaignFeed:
    status, _, body = get(port, f"/api/campaigns/{campaign}{query}")
    assert status == 200, body
    return CampaignFeed.model_validate_json(body)


def distinct_rows(png: Path) -> int:
    """How many different rows of pixels the PNG has (as its filtered scanlines): a blank
    page has one or two, a page of tables and text hundreds."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    position, pixels, width, height, channels = 8, b"", 0, 0, 0
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind, body = data[position + 4 : position + 8], data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8, depth
            channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
        elif kind == b"IDAT":
            pixels += body
        position += 12 + length
    raw = zlib.decompress(pixels)
    stride = 1 + width * channels
    assert len(raw) == stride * height
    return len({raw[row * stride + 1 : (row + 1) * stride] for row in range(height)})


def live_panel(page: str) -> str:
    found = re.search(r'<section id="evalrelay-live".*?</section>', page, re.DOTALL)
    assert found, page[:3000]
    return re.sub(r"<style>.*?</style>|<script>.*?</script>", "", found.group(0), flags=re.DOTALL)


def rows_of(table_body: str, page: str) -> list[list[str]]:
    """The cells of each row of the `<tbody id=table_body>`."""
    found = re.search(rf'<tbody id="{table_body}">(.*?)</tbody>', page, re.DOTALL)
    assert found, page
    return [
        re.findall(r"<td[^>]*>(.*?)</td>", row)
        for row in re.findall(r"<tr>(.*?)</tr>", found.group(1))
    ]


def rows_of_table(table: str, page: str) -> list[list[str]]:
    """The cells of each row of the body of `<table id=table>`."""
    found = re.search(rf'<table id="{table}">.*?<tbody>(.*?)</tbody>', page, re.DOTALL)
    assert found, page
    return [
        re.findall(r"<td[^>]*>(.*?)</td>", row)
        for row in re.findall(r"<tr>(.*?)</tr>", found.group(1))
    ]


def test_a_running_campaign_is_watched_live_and_its_report_shown_once_finished(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    root = project({"targets.yaml": SLOW, "evals/slow.yaml": one_turn_cases(CASES, "case-{i}")})
    results, profile = tmp_path / "results", tmp_path / "chromium"
    processes.start("collect", "--out", str(results), name="collect")
    port = start_serve(processes, results).port
    submitted = evalrelay(
        "run", "evals/slow.yaml", "--detach", "--target", "slow", "--out", str(results),
        env=processes.env, cwd=root,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    campaign = submitted.stdout.strip()
    assert campaign_feed(port, campaign).campaign.done == 0
    processes.worker(client, "w1@test", "-c", "2")

    # The feed: done grows; each poll reads on from where the last one stopped, and the
    # failures it returns are exactly the failed lines, each once, in the file's order.
    polls = [campaign_feed(port, campaign, "?after=0")]

    def poll_again() -> int:
        last = polls[-1]
        query = f"?after={last.offset}" + (f"&file={last.file}" if last.file else "")
        polls.append(campaign_feed(port, campaign, query))
        return sum(len(p.failures) for p in polls)

    wait_for(lambda: poll_again() >= 2, 40, "two failures")
    latest = polls[-1].campaign
    assert latest.total == CASES and latest.state == "running"
    assert polls[0].campaign.done < latest.done < CASES
    offsets = [p.offset for p in polls]
    assert offsets == sorted(offsets) and offsets[-1] > 0
    read = (results / f"{campaign}.jsonl").read_bytes()[: offsets[-1]]
    failed = [line for line in map(json.loads, read.splitlines()) if line["status"] != "ok"]
    failures = [f for p in polls for f in p.failures]
    assert [f.job_id for f in failures] == [line["job_id"] for line in failed]
    assert {f.why for f in failures} == {"infra_error: injected infra_error (mock failure_rate)"}
    assert [w.name for w in polls[-1].workers] == ["w1@test"]

    # The campaigns page, drawn by its script from the feed.
    index = dom(f"http://127.0.0.1:{port}/", profile, wait_ms=1500)
    row = re.search(rf'<tr data-campaign="{campaign}">(.*?)</tr>', index, re.DOTALL)
    assert row, index
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells[0] == f'<a href="/campaigns/{campaign}/">{campaign}</a>'
    assert cells[2] == "running"
    done = int(re.search(rf"(\d+)/{CASES}$", cells[3]).group(1))  # type: ignore[union-attr]
    assert latest.done <= done < CASES
    # The counts by status add up to the jobs done (the first few may all have failed).
    counts = dict(re.findall(r'status-(\w+)">\w+ (\d+)<', cells[4]))
    assert "infra_error" in counts and sum(map(int, counts.values())) == done, cells[4]
    assert [w[:2] for w in rows_of_table("workers", index)] == [["w1@test", "api"]]

    # The campaign's page: the report, with the live panel polling under its title.
    page = dom(f"http://127.0.0.1:{port}/campaigns/{campaign}/", profile, wait_ms=1500)
    assert f"<h1>Campaign {campaign}</h1>" in page
    panel = live_panel(page)
    assert '<span class="live-state running" id="evalrelay-live-state">running</span>' in panel
    shown = re.search(rf'id="evalrelay-live-done">(\d+) / {CASES} results<', panel)
    assert shown and 0 < int(shown.group(1)) < CASES, panel
    assert [w[0] for w in rows_of("evalrelay-live-workers", panel)] == ["w1@test"]
    listed = rows_of("evalrelay-live-failures", panel)
    failed_cases = {
        str(r["case_id"]) for r in read_jsonl(results / f"{campaign}.jsonl") if r["status"] != "ok"
    }
    assert listed and {row[0] for row in listed} <= failed_cases
    assert {row[2] for row in listed} == {"infra_error"}

    index_png = screenshot(
        f"http://127.0.0.1:{port}/", tmp_path / "index.png", profile, (1280, 700)
    )
    page_png = screenshot(
        f"http://127.0.0.1:{port}/campaigns/{campaign}/", tmp_path / "campaign.png", profile
    )
    assert distinct_rows(index_png) > 30 and distinct_rows(page_png) > 100
    keep(index_png, "serve-index")
    keep(page_png, "serve")

    # Finished: the panel says so and stops, the report holds every result.
    wait_for(
        lambda: campaign_feed(port, campaign).campaign.state == "finished",
        60,
        "the campaign to finish",
    )
    wait_for(lambda: campaign_feed(port, campaign).report_current, 30, "the final report")
    final = campaign_feed(port, campaign)
    assert final.report_results == CASES and final.campaign.done == CASES
    page = dom(f"http://127.0.0.1:{port}/campaigns/{campaign}/#view=list", profile, wait_ms=3000)
    panel = live_panel(page)
    assert '<span class="live-state finished" id="evalrelay-live-state">finished</span>' in panel
    assert f"{CASES} / {CASES} results · the campaign is finished" in panel
    assert f"<h1>Campaign {campaign}</h1>" in page and f"{CASES} results" in page
    cases = set(re.findall(r"<td>(case-\d+)</td>", page.split('id="cases"', 1)[1]))
    assert cases == {f"case-{i}" for i in range(CASES)}


ESCAPES = (
    "/campaigns/x/..%2f..%2fetc/passwd",
    "/campaigns/x/../../etc/passwd",
    "/campaigns/..%2f..%2fetc%2fpasswd/",
    "/campaigns/camp/report-00000000.html.parts/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/campaigns/camp/..%2f..%2f..%2fetc/passwd",
    "/api/campaigns/..%2f..%2fetc%2fpasswd",
)


def test_serve_listens_on_loopback_and_answers_only_loopback_names_and_paths_inside(
    processes: Processes, redis_url: str, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN)
    served = start_serve(processes, results)
    port = served.port
    assert listening(served.process.pid) == [("127.0.0.1", port)]
    said = processes.log("serve")
    assert f"evalrelay serve: http://127.0.0.1:{port}/ (Ctrl-C stops)" in said
    assert "warning" not in said
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}"):
        status, _, body = get(port, "/api/campaigns", host=host)
        assert (status, body) == (400, b"Invalid host header"), host
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert get(port, "/api/campaigns", host=host)[0] == 200, host
    assert get(port, "/campaigns/camp/")[0] == 200
    for path in ESCAPES:
        status, _, body = get(port, path)
        assert status == 404 and b"root:" not in body, path


def test_a_port_in_use_is_said_and_nothing_is_started(processes: Processes, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = evalrelay("serve", "--port", str(port), env=processes.env, cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"error: port {port} on 127.0.0.1 is in use (another `evalrelay serve`?); "
        "pass --port with another one"
    )


def test_beyond_loopback_serve_does_not_start_without_a_token(
    processes: Processes, tmp_path: Path
) -> None:
    port = free_port()
    for token in ("", "too-short"):
        env = {**processes.env, TOKEN_VARIABLE: token}
        argv = ("serve", "--host", "0.0.0.0", "--port", str(port))
        refused = evalrelay(*argv, env=env, cwd=tmp_path)
        assert refused.returncode == 1
        assert "beyond loopback, where anyone who reaches it could read every result" in (
            refused.stderr
        )
        assert f"Set {TOKEN_VARIABLE} (or {TOKEN_VARIABLE}_FILE)" in refused.stderr
        with socket.socket() as probe:  # nothing listened
            assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_beyond_loopback_every_request_needs_the_token_from_its_file(
    processes: Processes, redis_url: str, tmp_path: Path
) -> None:
    """Any Host is answered, but only to the token: as a Bearer header (Prometheus's
    `/metrics`), or as the cookie `?token=` sets once; the token read from its file."""
    token = secrets.token_hex(24)
    (tmp_path / "token").write_text(token + "\n")
    processes.env[f"{TOKEN_VARIABLE}_FILE"] = str(tmp_path / "token")
    served = start_serve(processes, tmp_path / "results", "--host", "0.0.0.0")
    port = served.port
    assert listening(served.process.pid) == [("0.0.0.0", port)]
    said = processes.log("serve")
    assert f"evalrelay serve: http://{socket.gethostname()}:{port}/" in said
    assert said.count("every request needs the serve token") == 1
    assert token not in said
    for path in ("/", "/metrics", "/api/campaigns", "/campaigns/x/"):
        status, headers, _ = get(port, path, host="evil.example")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer"), path
    assert get(port, "/metrics", auth="Bearer wrong")[0] == 401
    assert get(port, "/metrics", host="evil.example", auth=f"Bearer {token}")[0] == 200
    assert get(port, "/?token=wrong")[0] == 401
    status, headers, _ = get(port, f"/api/campaigns?token={token}&x=1")
    assert (status, headers["Location"]) == (303, "/api/campaigns?x=1")
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
    assert get(port, "/api/campaigns", cookie=cookie.split(";")[0])[0] == 200
    assert get(port, "/api/campaigns", cookie="evalrelay_serve_token=forged")[0] == 401


def test_a_campaign_only_in_the_results_folder_is_listed_and_its_report_served(
    processes: Processes, redis_url: str, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    write_campaign(results, CAMPAIGN)
    write_campaign(results, CAMPAIGN[:1], name="camp.attempts")  # retry's earlier lines
    write_campaign(results, CAMPAIGN[:1], name="not a campaign id")
    port = start_serve(processes, results).port
    listed = CampaignsFeed.model_validate_json(get(port, "/api/campaigns")[2])
    assert [(c.campaign_id, c.state, c.done, c.total) for c in listed.campaigns] == [
        ("camp", "file only", 6, None)
    ]
    assert listed.campaigns[0].counts == {
        "ok": 3,
        "infra_error": 1,
        "model_failure": 1,
        "cancelled": 1,
    }
    assert listed.redis.reachable

    page = dom(f"http://127.0.0.1:{port}/campaigns/camp/#view=list", tmp_path / "chromium")
    assert "<h1>Campaign camp</h1>" in page
    panel = live_panel(page)
    assert ">results file only</span>" in panel
    assert "6 results · Redis does not know this campaign" in panel
    assert [row[:3] for row in rows_of("evalrelay-live-failures", panel)] == [
        ["river", "claude", "cancelled"],
        ["desert", "gpt", "model_failure"],
        ["mountain", "gpt", "infra_error"],
        ["river", "gpt", "not passed"],  # ok, graded below its threshold
    ]
    cases = page.split('id="cases"', 1)[1]
    assert all(f"<td>{case}</td>" in cases for case in ("capital", "river", "mountain", "desert"))

    status, _, body = get(port, "/campaigns/nope/")
    assert status == 404
    assert "No campaign &#39;nope&#39;: Redis does not know it" in body.decode()
    assert '<a href="/campaigns/camp/">camp</a>' in body.decode()
    status, _, body = get(port, "/api/campaigns/nope")
    assert status == 404 and json.loads(body)["known"] == ["camp"]


def test_a_big_reports_parts_are_served_beside_its_page_and_open_in_the_browser(
    processes: Processes, redis_url: str, tmp_path: Path
) -> None:
    """3,000 results of 3 KB: the details are in a parts folder, which the page loads by
    relative `<script src>` as a row is opened."""
    results = tmp_path / "results"
    write_campaign(results, long_answers(many_results()), name="big")
    port = start_serve(processes, results).port
    status, headers, body = get(port, "/campaigns/big/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    page = body.decode()
    layout = json.loads(re.search(r'id="report-parts">([^<]*)<', page).group(1))  # type: ignore[union-attr]
    assert re.fullmatch(r"report-[0-9a-f]{8}\.html\.parts", layout["folder"]), layout
    assert len(layout["starts"]) > 30
    status, headers, part = get(port, f"/campaigns/big/{layout['folder']}/0001.js")
    assert status == 200 and headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert part.startswith(f'evalrelayPart("{layout["token"]}",1,'.encode())
    assert get(port, f"/campaigns/big/{layout['folder']}/9999.js")[0] == 404

    # The served page, with a click on "expand all": in a copy whose relative addresses
    # are the server's (a file may load scripts from it), since a served page cannot be
    # clicked from here.
    served = f"http://127.0.0.1:{port}/campaigns/big/"
    acted = tmp_path / "acted.html"
    acted.write_text(
        page.replace("<head>", f'<head><base href="{served}">', 1).replace(
            "</body>", f"<script>{OPEN_ALL}</script></body>"
        )
    )
    opened = dom(acted.as_uri() + "#view=list", tmp_path / "chromium", wait_ms=5000)
    rows = re.findall(r"<td>(case-\d+)</td><td>(\w+)</td>", opened)
    ends = re.findall(r"\(end of (case-\d+) (\w+)\)</pre>", opened)
    assert len(rows) == 100 and sorted(ends) == sorted(rows)


def test_pages_from_the_results_folder_stay_while_redis_is_out_of_reach(
    processes: Processes, private_redis: PrivateRedis, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    client = redis.Redis.from_url(private_redis.url, decode_responses=True)
    add_campaign(client, "known", total=10, done=4, out_dir=str(results))
    write_campaign(results, CAMPAIGN, name="known")
    write_campaign(results, CAMPAIGN[:2], name="camp")
    port = start_serve(
        processes, results, extra_env={"EVALRELAY_REDIS_URL": private_redis.url}
    ).port

    def listed() -> CampaignsFeed:
        return CampaignsFeed.model_validate_json(get(port, "/api/campaigns")[2])

    before = listed()
    # Newest first: camp's results started in November, known was created in March.
    assert [(c.campaign_id, c.state, c.done) for c in before.campaigns] == [
        ("camp", "file only", 2),
        ("known", "running", 4),  # Redis's count
    ]
    private_redis.stop()
    wait_for(lambda: not listed().redis.reachable, 10, "Redis out of reach")
    away = listed()
    assert away.redis.message and "Error" in away.redis.message
    assert [(c.campaign_id, c.state, c.done, c.total) for c in away.campaigns] == [
        ("camp", "out of reach", 2, None),
        ("known", "out of reach", 6, 10),  # its file's lines
    ]
    for campaign in ("known", "camp"):
        assert get(port, f"/campaigns/{campaign}/")[0] == 200
        assert not campaign_feed(port, campaign).redis.reachable
    index = dom(f"http://127.0.0.1:{port}/", tmp_path / "chromium", wait_ms=1000)
    assert "Redis is out of reach (" in index
    private_redis.start()
    wait_for(lambda: listed().redis.reachable, 15, "Redis back")
    assert [c.state for c in listed().campaigns] == ["file only", "running"]


def test_a_campaign_whose_file_is_on_another_host_shows_redis_progress_and_where(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    campaign = "evals-20260301-120000-aaaa"
    add_campaign(client, campaign, total=4, done=3, out_dir="/srv/results")
    home = ResultsHome(host="collector-7", path=f"/srv/results/{campaign}.jsonl", collector="c")
    client.set(results_home_key(campaign), home.model_dump_json())
    port = start_serve(processes, tmp_path / "results").port
    feed = campaign_feed(port, campaign)
    assert not feed.file_here and feed.report_results is None
    assert (feed.campaign.done, feed.campaign.total) == (3, 4)
    page = dom(f"http://127.0.0.1:{port}/campaigns/{campaign}/", tmp_path / "chromium")
    panel = live_panel(page)
    assert (
        f"The results file is on another host: collector-7:/srv/results/{campaign}.jsonl" in panel
    )
    assert 'id="evalrelay-live-done">3 / 4 results<' in panel
    assert 'id="cases"' not in page


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_and_what_it_started(
    stop: signal.Signals, private_home: Path, tmp_path: Path
) -> None:
    """With no Redis configured, the embedded one serves for as long as the server does."""
    socket_path = private_home / "redis" / "redis.sock"
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "evalrelay", "serve", "--port", "0",
             "--results", str(tmp_path / "results")],
            env=embedded_env(private_home), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(lambda: server.poll() is not None or answers_at(log), 30, log.read_text())
        assert redis_answers(socket_path)
        assert len(list((private_home / "serve-cache").iterdir())) == 1
        started = time.monotonic()
        os.kill(server.pid, stop)
        assert server.wait(15) == 0, log.read_text()
    finally:
        if server.poll() is None:
            server.kill()
    assert time.monotonic() - started < 5
    assert log.read_text().endswith("evalrelay serve: stopped\n")
    assert not redis_answers(socket_path)
    assert list((private_home / "serve-cache").iterdir()) == []


def redis_answers(socket_path: Path) -> bool:
    """Something listens on the embedded Redis's socket (redis-py would retry for seconds)."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(socket_path))
        except OSError:
            return False
        probe.sendall(b"PING\r\n")
        return probe.recv(16) == b"+PONG\r\n"


class Browser:
    """Headless Chromium driven through its DevTools pipe (its fds 3 and 4): a page to read
    and act on while it runs in real time, which `--dump-dom`'s virtual time cannot give."""

    def __init__(self, profile: Path) -> None:
        to_browser, self.commands = os.pipe()
        self.replies, from_browser = os.pipe()

        def pipes() -> None:  # in the child: fresh copies, so that 3 and 4 stay open on exec
            read, write = os.dup(to_browser), os.dup(from_browser)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            preexec_fn=pipes, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self.unread, self.sent = b"", 0

    def send(
        self, method: str, params: dict[str, object], session: str | None = None
    ) -> dict[str, Any]:
        self.sent += 1
        message = {"id": self.sent, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.unread:
                read = os.read(self.replies, 1 << 16)
                assert read, "chromium closed its DevTools pipe"
                self.unread += read
            raw, _, self.unread = self.unread.partition(b"\0")
            reply = json.loads(raw)
            if reply.get("id") == self.sent:
                assert "error" not in reply, reply
                answer: dict[str, Any] = reply["result"]
                return answer

    def open(self, url: str) -> str:
        """A new tab at `url`; its session."""
        target = self.send("Target.createTarget", {"url": url})["targetId"]
        return str(
            self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        )

    def run(self, session: str, script: str) -> object:
        """`script`'s value in the page."""
        answer = self.send(
            "Runtime.evaluate", {"expression": script, "returnByValue": True}, session
        )
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    def until(self, session: str, script: str, seconds: float, what: str) -> None:
        """Until `script` is true; a page being replaced meanwhile cannot answer."""

        def holds() -> object:
            try:
                return self.run(session, script)
            except AssertionError:
                return False

        wait_for(holds, seconds, what)

    def close(self) -> None:
        self.send("Browser.close", {})
        self.process.wait(10)
        os.close(self.commands)
        os.close(self.replies)


COUNTED_POLLS = """(() => {
  const unCounted = window.fetch;
  window.polls = 0;
  window.fetch = (...args) => { window.polls += 1; return unCounted(...args); };
})()"""
"""The live panel's polls counted from now on: it calls `fetch` for each."""


def test_a_page_reloads_itself_for_new_results_unless_a_row_is_open(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    campaign, results = "reload-20261123-000000-abcd", tmp_path / "results"
    add_campaign(client, campaign, total=100, out_dir=str(results))  # running: 0 of 100
    jsonl = write_campaign(results, CAMPAIGN, name=campaign)
    port = start_serve(processes, results).port

    def arrive(*cases: str) -> None:
        with jsonl.open("a") as out:
            for case in cases:
                out.write(
                    result(case, "gpt", Status.TIMEOUT, error="slow").model_dump_json() + "\n"
                )

    shown = 'document.getElementById("evalrelay-live").dataset.shown'
    browser = Browser(tmp_path / "chromium")
    try:
        address = f"http://127.0.0.1:{port}/campaigns/{campaign}/#view=list&outcome=failed"
        page = browser.open(address)
        browser.until(
            page,
            'document.getElementById("evalrelay-live-state").textContent === "running"',
            15,
            "the panel",
        )
        assert browser.run(page, shown) == "6"
        browser.run(page, "window.mark = 1")
        arrive("late-1", "late-2", "late-3")
        browser.until(
            page, f"window.mark === undefined && {shown} === '9'", 30, "the page to reload"
        )
        assert browser.run(page, "location.href") == address  # the report's filters

        browser.run(page, 'window.mark = 2; document.querySelector("details").open = true')
        arrive("later-1", "later-2")
        notice = "evalrelay-live-notice"
        browser.until(page, f'!document.getElementById("{notice}").hidden', 30, "the notice")
        assert (
            browser.run(page, f'document.getElementById("{notice}").textContent')
            == "2 new results — refresh"
        )
        # Two more polls, each answered with a newer report: a row is open, the page stays.
        # A poll is sent only once the one before it was answered and acted on.
        browser.run(page, COUNTED_POLLS)
        browser.until(page, "window.mark !== 2 || window.polls >= 3", 30, "two more polls")
        assert browser.run(page, f"window.mark === 2 && {shown} === '9'")
        browser.run(page, 'document.querySelector("details").open = false')
        browser.until(
            page, f"window.mark === undefined && {shown} === '11'", 15, "the reload once closed"
        )
    finally:
        browser.close()


def test_a_campaign_redis_lost_is_named_with_how_to_rebuild_it(
    processes: Processes, tmp_path: Path
) -> None:
    """Its record and part of its results are in the folder, Redis has never heard of it."""
    results = tmp_path / "results"
    info = CampaignInfo(
        campaign_id="gone-1", created_at="2026-01-01T00:00:00Z", sources=["e.yaml"],
        targets=["t"], total=5, out_dir=str(results),
    )  # type: ignore[arg-type]  # fmt: skip
    write_record(info)
    (results / "gone-1.jsonl").write_text("")
    port = start_serve(processes, results).port
    status, _, body = get(port, "/api/campaigns")
    assert status == 200
    assert json.loads(body)["lost"] == [
        f"campaign gone-1 (0 of 5 results in {results}) is not in this Redis: it lost its "
        "data (restarted empty, or evicted keys). `evalrelay resume gone-1` rebuilds it and "
        "sends the rest."
    ]
