"""The dashboard in a real browser (Debian's chromium, driven by selenium), served by `fairway
dashboard` as a separate process over a real Redis, with real workers running the jobs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

import support.jobs  # registers flaky and record, the handlers the in-process workers run
from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.access.producer import Producer
from fairway.queue.connection import connect
from fairway.queue.protocol.job import new_job
from support.redis_procs import free_port
from support.workers import run_in_process, wait_until, worker_env

TOKEN = "s3cret-dashboard-token"
DOCS = Path(__file__).resolve().parents[3] / "docs"
QUARANTINE = {"max_consecutive_jobs": 5, "quarantine": {"failures": 3, "window_seconds": 300, "sample_rate": 0.5}}


def start_dashboard(redis_url: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairway.cli", "dashboard", "--redis", redis_url, "--port", str(port), *extra],
        env=worker_env(redis_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return urllib.request.urlopen(f"{url}/healthz", timeout=1).status == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    assert wait_until(up, 15), proc.stdout.read() if proc.poll() is not None and proc.stdout else "not up"
    return proc, url


@pytest.fixture
def dashboard(redis_url: str) -> Iterator[str]:
    proc, url = start_dashboard(redis_url, "--token", TOKEN)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.fail("Debian's chromium and chromium-driver are needed (./dev test installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,900"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver), options=options)
    browser.implicitly_wait(0)
    yield browser
    browser.quit()


def screenshot(browser: WebDriver, name: str, tmp_path: Path) -> None:
    """Kept with the test's files; FAIRWAY_SCREENSHOTS=1 also writes it into docs/ for the README."""
    browser.save_screenshot(str(tmp_path / f"{name}.png"))
    if os.environ.get("FAIRWAY_SCREENSHOTS"):
        browser.save_screenshot(str(DOCS / f"{name}.png"))


def cells(browser: WebDriver, selector: str) -> list[list[str]]:
    """The table's cell texts, read again if the page's own refresh swapped it out mid-read."""
    for _ in range(5):
        try:
            return [
                [td.text for td in row.find_elements(By.TAG_NAME, "td")]
                for row in browser.find_elements(By.CSS_SELECTOR, selector)
            ]
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{selector} kept changing")


def wait(browser: WebDriver, seconds: float = 10) -> WebDriverWait[WebDriver]:
    return WebDriverWait(browser, seconds, ignored_exceptions=[StaleElementReferenceException])


def set_token(browser: WebDriver, token: str) -> None:
    field = browser.find_element(By.ID, "token")
    field.clear()
    field.send_keys(token)
    browser.execute_script("arguments[0].blur()", field)


def test_the_overview_shows_the_queues_of_a_real_redis_and_refreshes_itself(
    redis_url: str, dashboard: str, browser: WebDriver, tmp_path: Path
) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 40, queue="emails")
    client.enqueue_many("noop", [[]] * 15, queue="reports")
    client.enqueue_many("noop", [[]] * 5, tenant="acme")
    run_in_process(redis_url, queues=["reports"], burst=True)
    client.enqueue_many("noop", [[]] * 3, queue="reports")
    connect(redis_url).set("fairway:{reports}:paused", b"1")
    browser.get(dashboard + "/")
    rows = {r[0].split("\n")[0]: r for r in cells(browser, "table.queues tbody tr")}
    assert set(rows) == {"emails", "reports", "@tenant-"}
    assert rows["emails"][1] == "40" and rows["reports"][1] == "3" and rows["@tenant-"][1] == "5"
    assert rows["reports"][5] == "3.0", "15 jobs in the 5-minute window: 3 per minute"
    assert rows["reports"][11] == "paused"
    assert "1 tenant active" in rows["@tenant-"][0]
    screenshot(browser, "dashboard-overview", tmp_path)
    browser.execute_script("window.notReloaded = true")
    client.enqueue_many("noop", [[]] * 2, queue="emails")
    refreshed = wait(browser, 10).until(
        lambda b: b.find_element(By.CSS_SELECTOR, 'tr[data-queue="emails"] td.ready').text == "42"
    )
    assert refreshed and browser.execute_script("return window.notReloaded") is True, "refreshed without a reload"


def waited_job(handler: str, tenant: str, waited_s: float) -> bytes:
    now = int(time.time() * 1000)
    return new_job(handler, f"tenant-{tenant}", [], {}, tenant=tenant, now_ms=now - int(waited_s * 1000)).encode()


def test_the_tenants_page_sorts_by_p99_and_marks_a_quarantined_tenant(
    redis_url: str, dashboard: str, browser: WebDriver, tmp_path: Path
) -> None:
    producer = Producer(connect(redis_url))
    for tenant, waited in (("slow", 90.0), ("medium", 12.0), ("quick", 0.0)):
        producer.enqueue_tenant("tenant-", tenant, [waited_job("noop", tenant, waited)] * 4)
    producer.enqueue_tenant("tenant-", "broken", [waited_job("fail", "broken", 1.0)] * 6)
    producer.enqueue_tenant("tenant-", "deep", [waited_job("noop", "deep", 0.0)] * 2)
    run_in_process(redis_url, tenants=QUARANTINE, burst=True)
    Producer(connect(redis_url)).enqueue_tenant("tenant-", "deep", [waited_job("noop", "deep", 0.0)] * 30)
    browser.get(dashboard + "/tenants?sort=p99")
    order = [r[0] for r in cells(browser, "table.tenants tbody tr")]
    assert order[:3] == ["slow", "medium", "broken"], order
    quarantined = browser.find_element(By.CSS_SELECTOR, 'tr[data-tenant="broken"]')
    assert "quarantined" in quarantined.get_attribute("class") and "quarantined" in quarantined.text
    assert browser.find_element(By.CSS_SELECTOR, 'tr[data-tenant="slow"] svg.spark polyline')
    screenshot(browser, "dashboard-tenants", tmp_path)
    browser.find_element(By.CSS_SELECTOR, 'a.sort[href*="sort=waiting"]').click()
    wait(browser, 5).until(lambda b: "sort=waiting" in b.current_url)
    assert cells(browser, "table.tenants tbody tr")[0][0] == "deep"
    search = browser.find_element(By.NAME, "q")
    search.send_keys("med")
    search.submit()
    wait(browser, 5).until(lambda b: "q=med" in b.current_url)
    assert [r[0] for r in cells(browser, "table.tenants tbody tr")] == ["medium"]


def test_a_tenants_weight_and_cap_are_set_from_the_page_with_the_token(
    redis_url: str, dashboard: str, browser: WebDriver, tmp_path: Path
) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 3, tenant="acme")
    client.enqueue_many("noop", [[]] * 2, tenant="free")
    client.set_tenant("free", rate=2)
    browser.get(dashboard + "/tenants")

    def submit(token: str, **fields: str) -> None:
        set_token(browser, token)
        form = browser.find_element(By.CSS_SELECTOR, "form.settings")
        for name, value in fields.items():
            box = form.find_element(By.NAME, name)
            box.clear()
            box.send_keys(value)
        form.find_element(By.CSS_SELECTOR, "button:not([formaction])").click()

    submit("wrong-token-0000", tenant="acme", weight="4")
    assert (
        "needs the dashboard's token"
        in wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash.bad")).text
    )
    assert client.tenant("acme").weight == 1, "refused: nothing written"
    browser.get(dashboard + "/tenants")
    submit(TOKEN, tenant="acme", weight="4", max_in_flight="5")
    assert (
        wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash")).text
        == "tenant acme of @tenant-: set"
    )
    acme = client.tenant("acme")
    assert (acme.weight, acme.max_in_flight, acme.sources["weight"]) == (4, 5, "run-time")
    row = {r[0]: r for r in cells(browser, "table.tenants tbody tr")}
    assert row["acme"][1] == "4" and row["acme"][3] == "0/5", row["acme"]
    assert "rate 2/s" in browser.find_element(By.CSS_SELECTOR, 'tr[data-tenant="free"]').text
    screenshot(browser, "dashboard-tenant-controls", tmp_path)
    submit(TOKEN, tenant="acme", weight="0")
    assert (
        "weight: must be at least 1, not 0"
        in wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash.bad")).text
    )
    assert client.tenant("acme").weight == 4


def test_retrying_a_failed_job_from_the_page_runs_it_on_a_real_worker(
    redis_url: str, dashboard: str, browser: WebDriver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIRWAY_TEST_REDIS", redis_url)  # where support.jobs' handlers keep their marks
    monkeypatch.setattr(support.jobs, "_client", None)
    client = Client(redis_url)
    job_id = client.enqueue("flaky", "from-the-page", 1, queue="emails")
    client.enqueue("flaky", "stays-failed", 1, queue="emails")
    run_in_process(redis_url, queues=["emails"], burst=True)
    assert len(Inspector(connect(redis_url)).failures(["emails"])) == 2
    browser.get(dashboard + "/failed")
    screenshot(browser, "dashboard-failed", tmp_path)
    set_token(browser, TOKEN)
    browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{job_id}"] button.retry').click()
    flash = wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash"))
    assert flash.text == "retried 1 failed job"
    assert [f.id for f in Inspector(connect(redis_url)).failures(["emails"])] != [job_id]
    lines = run_in_process(redis_url, queues=["emails"], burst=True)
    assert [(line["id"], line["outcome"]) for line in lines] == [(job_id, "ok")]
    assert redis.Redis.from_url(redis_url).lrange("test:done", 0, -1) == [b"from-the-page"]


def test_a_running_and_a_waiting_job_are_cancelled_from_the_jobs_page(
    redis_url: str, dashboard: str, browser: WebDriver, tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import Select

    from fairway import JobCancelled
    from support.workers import job_lines, start_worker

    client = Client(redis_url)
    running = client.enqueue("until_cancelled", "seen-page", tenant="acme", max_tries=3, result_ttl=60)
    waiting = client.enqueue("noop", queue="later", result_ttl=60)
    worker = start_worker(redis_url, "--tenants", "tenant-")
    try:
        wait_until(lambda: connect(redis_url).lrange("seen-page", 0, -1), 20)
        browser.get(dashboard + "/jobs")
        set_token(browser, TOKEN)
        row = wait(browser).until(lambda b: [r for r in cells(b, "main table tr") if str(running) in r])
        assert row[0][:4] == ["@tenant-", "acme", str(running), "until_cancelled"], row
        screenshot(browser, "dashboard-jobs", tmp_path)
        browser.find_element(By.XPATH, f'//tr[td/code[text()="{running!s}"]]//button').click()
        assert browser.switch_to.alert.text == f"Cancel job {running!s}?"
        browser.switch_to.alert.accept()
        flash = wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash"))
        said = "running: its worker tells it to stop within seconds; it ends as cancelled"
        assert flash.text == f"job {running!s}: {said}"
        with pytest.raises(JobCancelled):
            running.result(timeout=20)
    finally:
        client.cancel(running, tenant="acme")  # (when the page failed: the worker stops at once)
        worker.terminate()
        out, _ = worker.communicate(timeout=30)
    assert [(line["outcome"], line["attempt"]) for line in job_lines(out)] == [("cancelled", 1)]

    # A waiting job, found by its id (no worker serves "later"), then cancelled: it never runs.
    browser.get(dashboard + "/jobs")
    browser.find_element(By.NAME, "id").send_keys(str(waiting))
    Select(browser.find_element(By.NAME, "queue")).select_by_visible_text("later")
    browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
    status = wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, "td.status"))
    assert status.text.startswith("not running and no result kept")
    browser.find_element(By.CSS_SELECTOR, ".bulk button.forget").click()
    browser.switch_to.alert.accept()
    flash = wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash"))
    assert flash.text == f"job {waiting!s}: cancelled (it was waiting or delayed: it will not run)"
    assert waiting.status() == "cancelled" and connect(redis_url).llen("fairway:{later}:ready") == 0
    assert "cancelled" in browser.find_element(By.CSS_SELECTOR, "td.status").text, "the page shows it at once"
    screenshot(browser, "dashboard-job-cancelled", tmp_path)


def test_the_jobs_page_shows_a_batchs_progress(redis_url: str, dashboard: str, browser: WebDriver) -> None:
    client = Client(redis_url)
    with client.batch(tenant="acme") as batch:
        batch.enqueue_many("noop", [[]] * 3)
        batch.enqueue("fail")
    run_in_process(redis_url, tenants={"queue_prefix": "tenant-"}, burst=True)
    browser.get(dashboard + "/jobs")
    row = wait(browser).until(lambda b: cells(b, f'tr[data-batch="{batch.id}"]'))
    assert row[0][1:] == ["@tenant- / acme", "4", "0", "3", "1", "0", "done"], row


def test_a_write_without_the_token_is_refused_and_changes_nothing(
    redis_url: str, dashboard: str, browser: WebDriver
) -> None:
    client = Client(redis_url)
    client.enqueue("fail", queue="emails")
    run_in_process(redis_url, queues=["emails"], burst=True)
    browser.get(dashboard + "/failed")
    set_token(browser, "wrong-token-0000")
    browser.find_element(By.CSS_SELECTOR, "table.failed tbody button.forget").click()
    alert = wait(browser, 5).until(lambda b: b.find_element(By.CSS_SELECTOR, ".flash.bad"))
    assert "needs the dashboard's token" in alert.text
    assert len(Inspector(connect(redis_url)).failures(["emails"])) == 1
    form = urllib.parse.urlencode({"queue": "emails"}).encode()
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(dashboard + "/actions/pause", data=form), timeout=5)
    assert refused.value.code == 403
    assert not Inspector(connect(redis_url)).stats(["emails"])[0].paused


def test_a_payload_with_a_script_tag_is_shown_as_text(redis_url: str, dashboard: str, browser: WebDriver) -> None:
    evil = "<script>document.title='pwned';alert(1)</script><img src=x onerror=alert(2)>"
    client = Client(redis_url)
    job_id = client.enqueue("fail", evil, queue="emails")
    run_in_process(redis_url, queues=["emails"], burst=True)
    browser.get(dashboard + "/failed/job?" + urllib.parse.urlencode({"queue": "emails", "id": job_id}))
    payload = browser.find_element(By.CSS_SELECTOR, "pre.payload").text
    assert "<script>document.title='pwned';alert(1)</script>" in payload
    assert evil in browser.find_element(By.CSS_SELECTOR, "pre.traceback").text
    assert browser.title == "Fairway · Failed job"
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018


def test_read_only_mode_offers_no_actions_and_refuses_them(redis_url: str, browser: WebDriver) -> None:
    Client(redis_url).enqueue("fail", queue="emails")
    run_in_process(redis_url, queues=["emails"], burst=True)
    proc, url = start_dashboard(redis_url, "--token", TOKEN, "--read-only")
    try:
        browser.get(url + "/failed")
        assert browser.find_elements(By.CSS_SELECTOR, "table.failed tbody tr")
        assert not browser.find_elements(By.CSS_SELECTOR, "form.action")
        assert "read-only" in browser.find_element(By.CSS_SELECTOR, "header .mode").text
        form = urllib.parse.urlencode({"queue": "emails", "all": "1", "token": TOKEN}).encode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url + "/actions/forget", data=form), timeout=5)
        assert refused.value.code == 403
        assert len(Inspector(connect(redis_url)).failures(["emails"])) == 1
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_redis_that_goes_away_is_a_503_page_and_the_dashboard_recovers() -> None:
    from support.redis_procs import RedisProcess

    def status(url: str) -> int:
        try:
            return int(urllib.request.urlopen(url, timeout=10).status)
        except urllib.error.HTTPError as exc:
            return exc.code

    server = RedisProcess().start()
    again: RedisProcess | None = None
    try:
        Client(server.url).enqueue("noop", queue="emails")
        proc, url = start_dashboard(server.url)
        try:
            server.stop()
            with pytest.raises(urllib.error.HTTPError) as down:
                urllib.request.urlopen(url + "/", timeout=10)
            page = down.value.read().decode()
            assert down.value.code == 503 and "Redis is unreachable" in page and "Traceback" not in page
            again = RedisProcess(port=server.port).start()
            assert wait_until(lambda: status(url + "/") == 200, 15), "back once Redis is"
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=10)
        assert "Traceback" not in (out or "")
    finally:
        server.cleanup()
        if again is not None:
            again.cleanup()


def test_at_420_px_nothing_overflows_and_the_token_box_is_whole(
    redis_url: str, dashboard: str, browser: WebDriver, tmp_path: Path
) -> None:
    Client(redis_url).enqueue_many("noop", [[]] * 3, tenant="acme")
    browser.set_window_size(420, 900)
    try:
        for page in ("/", "/tenants", "/failed"):
            browser.get(dashboard + page)
            width = browser.execute_script("return window.innerWidth")
            scroll = browser.execute_script("return document.documentElement.scrollWidth")
            box = browser.execute_script("return document.getElementById('token').getBoundingClientRect().right")
            assert scroll <= width, f"{page}: the page is {scroll} px wide in a {width} px window"
            assert box <= width, f"{page}: the token box is cut at {width} px (it ends at {box})"
        browser.get(dashboard + "/")
        screenshot(browser, "dashboard-420px", tmp_path)
    finally:
        browser.set_window_size(1440, 900)
