"""The web console in a real headless browser (issue 13, item 1): Debian's chromium driven by selenium
through Debian's chromedriver opens ``/`` on a server running a Spark-free topology (file source →
stream → sink, and a stream nothing reads), sees the graph, counters and rates that move, the errors
of the failing rows, the EXPLAIN of a stream, pauses and resumes the source with the page's buttons,
and saves a screenshot (``docs/console.png`` with ``SBPY_UPDATE_SCREENSHOT=1``, else under the test's
temporary folder, so a test run leaves the checkout clean).

The page redraws the graph at every step of its live feed, so the test reads it with one script call
(``GRAPH``) and retries a click whose element was just replaced. Skipped only when chromium or
chromedriver is not installed (``.ci/run`` installs both)."""
from __future__ import annotations

import os

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from console_util import create_demo, start_local_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "console.png"
TIMEOUT = 30

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                                reason="Debian's chromium and chromium-driver are not installed "
                                       "(apt-get install -y chromium chromium-driver)")

# every node of the graph: {name: {"kind", "state", "fields": {data-field: text}}}, read at one instant
GRAPH = """
const out = {};
for (const g of document.querySelectorAll('#graph [data-node]')) {
  const fields = {};
  for (const e of g.querySelectorAll('[data-field]')) fields[e.dataset.field] = e.textContent;
  out[g.dataset.node] = {kind: g.dataset.kind, state: g.dataset.state, fields};
}
out["->"] = Array.from(document.querySelectorAll('#graph [data-edge]')).map(e => e.dataset.edge);
return out;
"""


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1500,900", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)  # no Selenium Manager download
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, condition: Any, message: str) -> Any:
    """``condition(driver)`` once truthy; an element replaced meanwhile by a redraw counts as false."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    def check(d: Any) -> Any:
        try:
            return condition(d)
        except StaleElementReferenceException:
            return False

    return WebDriverWait(driver, TIMEOUT, poll_frequency=0.05).until(check, message)


def graph(driver: Any) -> dict[str, Any]:
    return driver.execute_script(GRAPH)


def click(driver: Any, css: str) -> None:
    """Click the element ``css`` (found again if a redraw replaced it before the click)."""
    def clicked(d: Any) -> bool:
        element = d.find_element("css selector", css)
        if not element.is_enabled():
            return False
        element.click()
        return True

    wait_for(driver, clicked, f"cannot click {css}")


def total(text: str) -> int:
    """The count in a node line such as ``12.0/s (1,234)``."""
    return int(re.search(r"\(([\d,]+)\)", text).group(1).replace(",", ""))


def text_of(driver: Any, css: str) -> str:
    return wait_for(driver, lambda d: d.find_element("css selector", css).text, f"no {css}")


def test_console_shows_a_live_topology(server_factory, tmp_path, browser):
    srv = start_local_server(server_factory, tmp_path)
    with srv.client() as c:
        create_demo(c, tmp_path, interval="20ms", repeat=-1)
    browser.get(srv.url + "?interval=0.3")

    # the topology list and the graph: every node, and the edges between them
    wait_for(browser, lambda d: d.find_elements("css selector", '[data-topology="t"]'), "no topology listed")
    def whole_graph(d: Any) -> dict[str, Any] | None:
        g = graph(d)
        return g if len(g) == 5 else None  # four nodes and the edges

    g = wait_for(browser, whole_graph, "no graph")
    assert {name: node["kind"] for name, node in g.items() if name != "->"} == {
        "s": "source", "x": "stream", "idle": "stream", "k": "sink"}
    assert sorted(g["->"]) == ["s->idle", "s->x", "x->k"]
    assert browser.find_element("id", "connection").text == "live"

    # counters that move, and rates once two steps were seen
    first = total(g["x"]["fields"]["in-rate"])
    def moved(d: Any) -> bool:
        g = graph(d)
        return (total(g["x"]["fields"]["in-rate"]) > first and total(g["k"]["fields"]["in-rate"]) > 0
                and re.match(r"[1-9][\d.]*/s", g["s"]["fields"]["out-rate"]) is not None)

    wait_for(browser, moved, "the counters and rates did not move")

    # the failing rows (12 / 0) as errors, with their error text
    assert "division by zero" in text_of(browser, '#drops [data-drop="x"]')
    assert "errors" in graph(browser)["x"]["fields"]["trouble"]

    # a stream's EXPLAIN
    click(browser, '[data-node="x"]')
    plan = text_of(browser, '#details [data-field="explain"]')
    assert plan.startswith("execution: ") and "stage x [" in plan
    assert text_of(browser, '#details [data-field="statement"]').startswith("CREATE STREAM x AS SELECT RSTREAM")
    shot = DOCS_SCREENSHOT if os.environ.get("SBPY_UPDATE_SCREENSHOT") == "1" else tmp_path / "console.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 0

    # pause and resume the source with its buttons
    click(browser, '[data-node="s"]')
    click(browser, '#details [data-action="pause"]')
    wait_for(browser, lambda d: graph(d)["s"]["state"] == "paused", "the source did not pause")
    wait_for(browser, lambda d: graph(d)["s"]["fields"]["out-rate"].startswith("0.00/s"),
             "the rate did not fall to 0")
    paused_at = total(graph(browser)["s"]["fields"]["out-rate"])
    click(browser, '#details [data-action="resume"]')
    wait_for(browser, lambda d: graph(d)["s"]["state"] == "running", "the source did not resume")
    wait_for(browser, lambda d: total(graph(d)["s"]["fields"]["out-rate"]) > paused_at, "the source did not go on")
    assert "error" not in browser.find_element("id", "message").get_attribute("class")

    # nothing on the page came from another host, and the page logged no error
    sources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert sources and all(s.startswith(srv.url) for s in sources), sources
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
