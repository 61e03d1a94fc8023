"""A real browser on the gateway: headless Chromium from Debian (``chromium``, ``chromium-driver``, installed
by ``./dev test`` when run as root) driven by Selenium types a query on the search page, submits the form,
reads the results and the per-engine status, follows the pagination, and saves screenshots.

Skips (saying why) only when the browser is not installed or does not start. Screenshots go to the test's
temporary folder; with ``OASIS_SCREENSHOT_DIR=docs/img`` they also replace the README's images.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_testcluster import DB_SUBJECTS, GatewayCluster

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.skip(
            f"browser not installed ({', '.join(missing)} missing): run ./dev test as root, or "
            "apt-get install chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,900", "--no-first-run", "--disable-extensions"):  # fmt: skip
        options.add_argument(arg)
    try:
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    except WebDriverException as exc:
        pytest.skip(f"headless Chromium did not start: {exc.msg}")
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def save(driver: object, tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    assert driver.save_screenshot(str(out))  # type: ignore[attr-defined]
    assert out.read_bytes()[:8] == PNG and out.stat().st_size > 5000
    target = os.environ.get("OASIS_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, Path(target) / name)
    return out


def not_found(cluster: GatewayCluster) -> float:
    """The gateway's 404 answers so far, from its own metrics."""
    import requests

    text = requests.get(cluster.gateway + "/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("oasis_gateway_requests_total{") and 'code="404"' in line
    )


def navigate(driver: Any, action: Callable[[], object]) -> None:
    """Run ``action`` (a click or an ENTER that loads another page) and wait until the page it left is gone:
    an element found right after it may still belong to the old page and go stale under the test."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    action()
    WebDriverWait(driver, 10).until(expected_conditions.staleness_of(old))


def test_search_in_a_browser(browser: object, gateway_cluster: GatewayCluster, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.remote.webdriver import WebDriver

    assert isinstance(browser, WebDriver)
    driver = browser
    missing = not_found(gateway_cluster)
    driver.get(gateway_cluster.gateway + "/")
    assert driver.title == "Oasis"
    box = driver.find_element(By.NAME, "q")
    box.send_keys("table index")
    navigate(driver, lambda: box.send_keys(Keys.ENTER))  # submits the form: no JavaScript on the page

    assert driver.current_url.startswith(gateway_cluster.gateway + "/search?q=table+index")
    results = driver.find_elements(By.CSS_SELECTOR, "#results li.result")
    assert len(results) == 10
    first_page = [r.find_element(By.CSS_SELECTOR, "p.url").text for r in results]
    highlights = driver.find_elements(By.CSS_SELECTOR, "#results .snippet b")
    assert highlights and all(h.text.lower() in {"table", "index"} for h in highlights)
    # per-engine status: the databases engine answered with hits
    row = driver.find_element(By.CSS_SELECTOR, '#engines tr[data-engine="databases"]')
    assert row.find_element(By.CSS_SELECTOR, "td.state").text == "ok"
    assert int(row.find_elements(By.TAG_NAME, "td")[2].text) > 10
    # the hostile page's markup is shown as text, and never ran
    assert driver.execute_script("return typeof window.alert_ran") == "undefined"
    save(driver, tmp_path, "gateway-search.png")

    navigate(driver, driver.find_element(By.ID, "next").click)
    assert "pageno=2" in driver.current_url
    second = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#results li.result p.url")]
    assert len(second) == 10 and not set(second) & set(first_page)
    navigate(driver, driver.find_element(By.ID, "next").click)
    third = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#results li.result p.url")]
    assert len(first_page) + len(second) + len(third) == len(DB_SUBJECTS) + 1
    assert not driver.find_elements(By.ID, "next")  # the last page
    navigate(driver, driver.find_element(By.ID, "previous").click)
    assert "pageno=2" in driver.current_url

    # a query with markup in it comes back as typed, in the box and in the summary
    box = driver.find_element(By.NAME, "q")
    box.clear()
    typed = "<script>window.alert_ran=1</script> tricks"
    box.send_keys(typed)
    navigate(driver, lambda: box.send_keys(Keys.ENTER))
    assert driver.find_element(By.NAME, "q").get_attribute("value") == typed
    assert "<script>window.alert_ran=1</script>" in driver.find_element(By.ID, "summary").text
    assert driver.execute_script("return typeof window.alert_ran") == "undefined"
    # the browser asked for nothing the gateway lacks (each page view asked for /favicon.ico, a 404 counted
    # in the gateway's metrics, until the pages named an empty icon)
    assert not_found(gateway_cluster) == missing


def test_status_page_in_a_browser(browser: object, gateway_cluster: GatewayCluster, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver

    assert isinstance(browser, WebDriver)
    browser.get(gateway_cluster.gateway + "/")
    navigate(browser, browser.find_element(By.LINK_TEXT, "status").click)
    rows = browser.find_elements(By.CSS_SELECTOR, "#services tbody tr")
    health = {r.get_attribute("data-service"): r.find_element(By.CSS_SELECTOR, "td.health").text
              for r in rows}  # fmt: skip
    assert health["broker"] == health["databases"] == health["gateway"] == "SERVING", health
    assert browser.find_element(By.ID, "noquality").text.startswith("no quality data yet")
    # R/F/M series on disk (as the live evaluator writes them) become one SVG plot per topic
    # (STATE_DIR/quality.jsonl: one row per evaluation with every topic, as oasis.cluster.evaluator writes it)
    quality = gateway_cluster.state / "quality.jsonl"
    rows = []
    for i in range(40):
        topics = {}
        for topic, rate in (("databases", 0.04), ("python", 0.02)):
            r, f = min(1.0, rate * i), max(0.0, 1.0 - 0.5 * rate * i)
            topics[topic] = {"recall": r, "freshness": f, "M": min(r, f)}
        rows.append(json.dumps({"time": 10.0 * i, "elapsed": 10.0 * i, "topics": topics}))
    quality.write_text("\n".join(rows) + "\n")
    try:
        browser.refresh()
        plots = browser.find_elements(By.CSS_SELECTOR, "#plots figure.plot")
        assert [p.get_attribute("data-topic") for p in plots] == ["databases", "python"]
        for p in plots:
            assert len(p.find_elements(By.CSS_SELECTOR, "svg polyline")) == 3
            assert p.find_element(By.TAG_NAME, "svg").size["width"] > 300  # rendered, not collapsed
        save(browser, tmp_path, "gateway-status.png")
    finally:
        quality.unlink()
