"""`serve`'s pause, unpause and cancel endpoints: pressed from its own page only, and beyond
loopback only with the serve token."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import redis

from evalrelay.bridge.queue.budget import charge, set_budget
from evalrelay.bridge.queue.steering import audit, pause, paused, unpause
from tests.bridge.cli.test_serve import Browser, start_serve
from tests.bridge.queue.test_campaigns import add_campaign
from tests.bridge.reports.reporting import CAMPAIGN as REPORTED
from tests.bridge.reports.reporting import write_campaign
from tests.conftest import Processes

CAMPAIGN = "steer-20260301-120000-abcd"
TOKEN = "serve-token-5f1c2a"


def post(port: int, path: str, **headers: str) -> tuple[int, dict[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", path, headers={"Host": f"127.0.0.1:{port}", **headers})
        response = connection.getresponse()
        body = response.read()
        if response.headers.get_content_type() != "application/json":
            return response.status, {"detail": body.decode()}  # serve's token gate: text
        return response.status, json.loads(body)
    finally:
        connection.close()


STEER = {"X-Evalrelay-Steer": "1"}


def test_on_loopback_its_own_page_pauses_and_unpauses_and_no_other_site_can(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    add_campaign(client, CAMPAIGN)
    port = start_serve(processes, tmp_path / "results").port
    path = f"/api/campaigns/{CAMPAIGN}/pause"
    status, said = post(port, path)
    assert status == 403 and "X-Evalrelay-Steer" in said["detail"]
    status, said = post(port, path, Origin="http://evil.example", **STEER)
    assert status == 403 and "another site" in said["detail"]
    assert paused(client, CAMPAIGN) is None
    status, said = post(port, path, Origin=f"http://127.0.0.1:{port}", **STEER)
    assert (status, said["detail"]) == (200, "paused")
    state = paused(client, CAMPAIGN)
    assert state is not None and state.by == "evalrelay serve"
    status, said = post(port, f"/api/campaigns/{CAMPAIGN}/unpause", **STEER)
    assert (status, said["detail"]) == (200, "0 jobs sent again")
    assert paused(client, CAMPAIGN) is None
    assert [c.action for c in audit(client, CAMPAIGN)] == ["pause", "unpause"]
    assert post(port, "/api/campaigns/nope/pause", **STEER)[0] == 409


def test_beyond_loopback_steering_needs_the_token(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    add_campaign(client, CAMPAIGN)
    processes.env["EVALRELAY_SERVE_TOKEN"] = TOKEN
    served = start_serve(processes, tmp_path / "results", "--host", "0.0.0.0", name="tok")
    with_token = served.port
    path = f"/api/campaigns/{CAMPAIGN}/pause"
    assert post(with_token, path, Authorization="Bearer wrong", **STEER)[0] == 401
    assert paused(client, CAMPAIGN) is None
    status, said = post(with_token, path, Authorization=f"Bearer {TOKEN}", **STEER)
    assert (status, said["detail"]) == (200, "paused")
    assert TOKEN not in processes.log("tok")


PANEL_STATE = 'document.getElementById("evalrelay-live-state").textContent'
STEERED = 'document.getElementById("evalrelay-live-steered").textContent'


def click(action: str) -> str:
    button = f'#evalrelay-live-steer button[data-action="{action}"]'
    return f"document.querySelector('{button}').click()"


def test_the_campaign_page_buttons_pause_and_unpause_it_and_say_a_spent_budget(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    add_campaign(client, CAMPAIGN, total=100, out_dir=str(results))  # running: 0 of 100
    write_campaign(results, REPORTED, name=CAMPAIGN)
    port = start_serve(processes, results).port
    browser = Browser(tmp_path / "chromium")
    try:
        page = browser.open(f"http://127.0.0.1:{port}/campaigns/{CAMPAIGN}/")
        browser.until(page, f'{PANEL_STATE} === "running"', 15, "the panel")
        browser.run(page, click("pause"))
        browser.until(page, f'{PANEL_STATE} === "paused"', 15, "the page to show the pause")
        assert browser.run(page, STEERED) == "pause: paused"
        held = paused(client, CAMPAIGN)
        assert held is not None and held.by == "evalrelay serve"
        browser.run(page, click("unpause"))
        browser.until(page, f'{PANEL_STATE} === "running"', 15, "the page to show it unpaused")
        assert browser.run(page, STEERED) == "unpause: 0 jobs sent again"
        assert paused(client, CAMPAIGN) is None

        set_budget(client, CAMPAIGN, 0.5, "test")
        assert charge(client, CAMPAIGN, 0.6, "a worker")  # the budget is spent: paused
        browser.until(page, f'{PANEL_STATE} === "paused"', 15, "the budget's pause")
        said = 'document.getElementById("evalrelay-live-paused").textContent'
        assert browser.run(page, said) == "budget reached"
        browser.run(page, click("unpause"))
        browser.until(page, f'{STEERED}.startsWith("refused")', 15, "the refusal")
        assert "--budget-usd" in str(browser.run(page, STEERED))
        assert paused(client, CAMPAIGN) is not None
        browser.run(page, click("cancel"))
        browser.until(page, f'{STEERED} === "cancel: cancelled"', 15, "the cancel")
        assert [c.action for c in audit(client, CAMPAIGN)][-1] == "cancel"
        browser.until(page, f'{PANEL_STATE} === "cancelled"', 15, "the page to say cancelled")
        browser.until(page, f"{STEER_SHOWN} === 'none'", 15, "the buttons to go")
    finally:
        browser.close()


STEER_SHOWN = 'getComputedStyle(document.getElementById("evalrelay-live-steer")).display'


def test_a_finished_campaign_is_not_steered_and_shows_no_buttons(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    add_campaign(client, CAMPAIGN, total=2, done=2, out_dir=str(results))
    write_campaign(results, REPORTED, name=CAMPAIGN)
    port = start_serve(processes, results).port
    for action in ("pause", "unpause", "cancel"):
        status, said = post(port, f"/api/campaigns/{CAMPAIGN}/{action}", **STEER)
        assert status == 409, said
        assert (
            f"is finished: all 2 jobs have their result, so there is nothing to {action}"
            in (said["detail"])
        )
    assert paused(client, CAMPAIGN) is None and audit(client, CAMPAIGN) == []
    browser = Browser(tmp_path / "chromium")
    try:
        page = browser.open(f"http://127.0.0.1:{port}/campaigns/{CAMPAIGN}/")
        browser.until(page, f'{PANEL_STATE} === "finished"', 15, "the panel")
        assert browser.run(page, STEER_SHOWN) == "none"
    finally:
        browser.close()


def test_the_index_page_shows_a_paused_campaign_and_a_spent_budget(
    processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    add_campaign(client, CAMPAIGN, total=100, out_dir=str(results))  # running: 0 of 100
    port = start_serve(processes, results).port
    state = f"document.querySelector('tr[data-campaign=\"{CAMPAIGN}\"] td:nth-child(3)')"
    browser = Browser(tmp_path / "chromium")
    try:
        page = browser.open(f"http://127.0.0.1:{port}/")
        browser.until(page, f'{state}.textContent === "running"', 15, "the campaign's row")
        pause(client, CAMPAIGN, "paused by hand", "test")
        browser.until(page, f'{state}.className.includes("state-paused")', 15, "the pause")
        assert browser.run(page, f"{state}.innerText") == "paused\npaused by hand"
        unpause(client, CAMPAIGN, "test")
        browser.until(page, f'{state}.textContent === "running"', 15, "it to go on")

        set_budget(client, CAMPAIGN, 0.5, "test")
        assert charge(client, CAMPAIGN, 0.6, "a worker")  # the budget is spent: paused
        browser.until(page, f'{state}.className.includes("state-paused")', 15, "the budget's pause")
        assert browser.run(page, f"{state}.innerText") == "paused\nbudget reached"
    finally:
        browser.close()
