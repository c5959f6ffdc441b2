"""``rac ui`` in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
``.ci/run`` installs) driven by Selenium against a real server on loopback over a real SQLite
log. The operator signs in, opens the queue, opens the run, sees its timeline (a screenshot is
saved as a test artifact), resolves the live effect, and watches the run leave the queue, which
refreshes itself without a reload."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
TOKEN = "browser-token-0123456789"
#: generous for a loaded machine: a page load, a poll of the live queue
WAIT = 60.0

if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    reason = ("no headless browser here: apt-get install chromium chromium-driver "
              "(.ci/run installs them; CI always runs these tests)")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from rac.ui.app import create_app  # noqa: E402
from rac.ui.security import Guard  # noqa: E402
from tests.ui.support import Log, make_log  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Log]]:
    import uvicorn

    log = make_log(tmp_path)
    app = create_app(log.engine.store, engine=log.engine,
                     guard=Guard.for_server("127.0.0.1", token=TOKEN))
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=srv.run, name="rac-ui-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not srv.started:
        assert time.monotonic() < deadline, f"rac ui did not start within {WAIT:.0f} s"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", log
    srv.should_exit = True
    thread.join(WAIT)
    log.world.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1280,900", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


def artifacts() -> Path:
    """Where screenshots go: ``$RAC_TEST_ARTIFACTS`` (CI keeps it), else a temp folder."""
    out = Path(os.environ.get("RAC_TEST_ARTIFACTS") or Path(os.environ.get("TMPDIR", "/tmp"))
               / "rac-test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_an_operator_resolves_a_live_effect_in_the_browser(server: tuple[str, Log],
                                                           browser: Any) -> None:
    base, log = server
    wait = WebDriverWait(browser, WAIT)
    browser.get(f"{base}/queue")
    assert browser.find_element(By.ID, f"q-{log.attention}")  # before signing in: read only
    browser.get(f"{base}/login")
    browser.find_element(By.NAME, "token").send_keys(TOKEN)
    browser.find_element(By.NAME, "by").send_keys("ops-ann")
    browser.find_element(By.ID, "signin").click()
    wait.until(lambda d: d.current_url.endswith("/queue"))
    browser.find_element(By.CSS_SELECTOR, f"#q-{log.attention} a").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "svg.timeline"))
    shot = artifacts() / "rac-ui-run-timeline.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    note = browser.find_element(By.CSS_SELECTOR, "#resolve-2").find_element(By.XPATH, "..")
    note.find_element(By.NAME, "note").send_keys("cancelled the Oslo hotel by phone")
    browser.find_element(By.ID, "resolve-2").click()
    wait.until(lambda d: "resolved by ops-ann" in d.page_source)
    rec = next(r for r in log.engine.store.get_records(log.attention) if r.seq == 2)
    assert str(rec.status) == "resolved" and "cancelled the Oslo hotel" in (rec.note or "")
    browser.get(f"{base}/queue")
    assert browser.find_elements(By.ID, "empty")


def test_the_queue_refreshes_itself_when_a_run_needs_a_person(server: tuple[str, Log],
                                                              browser: Any) -> None:
    base, log = server
    log.engine.resolve(log.attention, 2, note="settled before the page opened", by="ops")
    browser.get(f"{base}/queue")
    assert browser.find_elements(By.ID, "empty")
    # another run now needs a person: the open page shows it without a reload
    log.world.fail("book_car", "permanent", times=1)
    log.world.fail("cancel_flight", "permanent", times=1, message="airline down")
    import rac

    with pytest.raises(rac.ToolCallFailed), log.engine.run() as run:
        run.call(log.world.book_flight, passenger="zoe", origin="OSL", dest="BER")
        run.call(log.world.book_car, driver="zoe", city="Berlin")
    marker = browser.execute_script("window.__same_page = 1; return window.__same_page")
    WebDriverWait(browser, WAIT).until(
        lambda d: d.find_elements(By.ID, f"q-{run.run_id}"))
    assert browser.execute_script("return window.__same_page") == marker  # no reload
    assert "airline down" in browser.page_source
