"""Drives Strata's web console in Debian's Chromium (headless) through Selenium and
chromedriver, as a user would, and checks what the page shows.

Usage: console_browser.py BASE_URL ARTIFACT_DIR BENCH_JSON [TOKEN]

The server (started by `crates/strata/tests/console.rs`) holds database `console` with
table `cpu` (tags `host` = a, b, c; float field `usage`; one row every 10 s over the last
30 minutes: 540 rows) and table `big` (100,000 rows), and database `other` (100 rows), all
flushed to parts. With TOKEN the server requires it:
the page must ask for it before anything loads.

Every check raises on failure (exit status 1, the reason on stderr); screenshots go to
ARTIFACT_DIR. The last stdout line is a JSON summary the Rust test asserts on too.
"""

import json
import os
import re
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE, ARTIFACTS, BENCH = sys.argv[1], sys.argv[2], sys.argv[3]
TOKEN = sys.argv[4] if len(sys.argv) > 4 else None
TIMEOUT = 20


def browser(width, height):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, what, condition):
    try:
        return WebDriverWait(driver, TIMEOUT, poll_frequency=0.05).until(lambda d: condition())
    except Exception as e:
        shot(driver, "failed")
        raise AssertionError(f"timed out waiting for {what}: {e!r}") from None


def shot(driver, name):
    driver.save_screenshot(os.path.join(ARTIFACTS, f"{name}.png"))


def el(driver, css):
    return driver.find_element(By.CSS_SELECTOR, css)


def els(driver, css):
    return driver.find_elements(By.CSS_SELECTOR, css)


def texts(driver, css):
    """The text of every element matching `css`, read in one script: the virtualised
    table replaces its row elements as it scrolls, so element handles go stale."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", css)


def visible(driver, css):
    found = els(driver, css)
    return bool(found) and found[0].is_displayed()


def rows_in_status(driver):
    m = re.match(r"\D*([\d,]+) rows?\b", el(driver, "#status").text)
    return int(m.group(1).replace(",", "")) if m else None


def run(driver, language, database, query):
    """Types `query` in the editor and runs it with Ctrl+Enter; returns the row count."""
    Select(el(driver, "#language")).select_by_value(language)
    if database:
        Select(el(driver, "#database")).select_by_value(database)
    editor = el(driver, "#editor")
    editor.click()
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(Keys.DELETE)
    editor.send_keys(query)
    # Cleared first, so that an answer with the same text as the last one is seen too.
    driver.execute_script("document.querySelector('#status').textContent = ''")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    wait(driver, f"the answer to {query!r}",
         lambda: el(driver, "#status").text.strip() != ""
         and "running" not in el(driver, "#status").text)
    return rows_in_status(driver)


def severe_logs(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def canvas_colours(driver, css):
    """Distinct colours on the first canvas under `css` (a blank one has one or two)."""
    return driver.execute_script(
        """
        const c = document.querySelector(arguments[0] + ' canvas');
        if (!c || !c.width || !c.height) return 0;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4 * 7) seen.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2] | d[i + 3] << 24);
        return seen.size;
        """, css)


def with_token(driver):
    """The token dialog opens by itself; typing the token loads the databases."""
    driver.get(BASE + "/")
    wait(driver, "the token dialog", lambda: el(driver, "#token-dialog").get_attribute("open") is not None)
    el(driver, "#token-input").send_keys(TOKEN)
    el(driver, "#token-save").click()
    wait(driver, "databases after the token",
         lambda: "console" in [o.get_attribute("value") for o in els(driver, "#database option")])
    assert run(driver, "sql", "console", "SELECT count(*) AS n FROM cpu") == 1
    assert not visible(driver, "#error"), el(driver, "#error").text
    shot(driver, "token")
    logs = [e for e in severe_logs(driver) if "401" not in e["message"]]
    assert not logs, f"console errors: {logs}"
    return {"token": "ok"}


def main_flow(driver):
    summary = {}
    started = time.monotonic()
    driver.get(BASE + "/")
    interactive_ms = driver.execute_script(
        "const t = performance.getEntriesByType('navigation')[0];"
        "return t.domInteractive - t.startTime;")
    summary["interactive_ms"] = interactive_ms
    assert interactive_ms < 1000, f"interactive after {interactive_ms} ms"
    wait(driver, "the database picker",
         lambda: "console" in [o.get_attribute("value") for o in els(driver, "#database option")])

    # A query with a time column: the table counts every row, the chart shows one line per host.
    n = run(driver, "sql", "console", "SELECT time, host, usage FROM cpu ORDER BY time")
    assert n == 540, f"status says {el(driver, '#status').text!r}"
    assert not visible(driver, "#error")
    wait(driver, "the chart view", lambda: visible(driver, "#chart") and els(driver, "#chart canvas"))
    series = driver.execute_script(
        "return document.querySelectorAll('#chart .u-legend .u-series').length")
    assert series == 4, f"legend rows {series} (time + 3 hosts)"
    colours = canvas_colours(driver, "#chart")
    assert colours > 4, f"chart canvas looks blank ({colours} colours)"
    summary["chart_series"] = series - 1
    shot(driver, "chart")

    # Legend toggle hides a line.
    legend = els(driver, "#chart .u-legend .u-series")[1]
    legend.click()
    wait(driver, "a legend entry switched off", lambda: "u-off" in legend.get_attribute("class"))
    legend.click()

    # Drag-zoom rewrites the query's time range and runs it again: fewer rows.
    over = el(driver, "#chart .u-over")
    w = over.size["width"]
    before_query = el(driver, "#editor").get_attribute("value")
    ActionChains(driver).move_to_element_with_offset(over, int(-w * 0.3), 0).click_and_hold() \
        .move_by_offset(int(w * 0.4), 0).release().perform()
    wait(driver, "the zoomed query",
         lambda: el(driver, "#editor").get_attribute("value") != before_query
         and (rows_in_status(driver) or 540) < 540)
    summary["zoomed_rows"] = rows_in_status(driver)
    assert "time" in el(driver, "#editor").get_attribute("value")

    # The table view: 100,000 rows, only the visible ones in the page, the last reachable.
    n = run(driver, "sql", "console", "SELECT * FROM big ORDER BY time")
    assert n == 100000, f"status says {el(driver, '#status').text!r}"
    el(driver, "#view-table").click()
    wait(driver, "table rows", lambda: len(els(driver, "#results-table .result-row")) > 0)
    rendered = len(els(driver, "#results-table .result-row"))
    assert rendered < 1000, f"{rendered} rows in the page: not virtualised"
    driver.execute_script(
        "const t = document.querySelector('#results-table');"
        "const s = t.querySelector('[data-scroll]') || t; s.scrollTop = s.scrollHeight;")
    wait(driver, "the last row after scrolling",
         lambda: any("99999" in t for t in texts(driver, "#results-table .result-row")))
    summary["rendered_rows"] = rendered
    shot(driver, "table")

    # Errors come back with their position.
    run(driver, "sql", "console", "SELEC 1")
    wait(driver, "the error", lambda: visible(driver, "#error"))
    assert "line 1" in el(driver, "#error").text, el(driver, "#error").text

    # InfluxQL and PromQL answers chart too.
    n = run(driver, "influxql", "console",
            "SELECT mean(usage) FROM cpu WHERE time > now() - 1h GROUP BY time(5m), host")
    assert n and n > 0 and not visible(driver, "#error"), el(driver, "#status").text
    wait(driver, "the InfluxQL chart", lambda: els(driver, "#chart canvas"))
    n = run(driver, "promql", None, "cpu_usage")
    assert n is not None and not visible(driver, "#error"), el(driver, "#error").text
    summary["promql_rows"] = n

    # History keeps what ran.
    history = el(driver, "#history").text
    assert "SELECT * FROM big" in history, history

    # Explore: tables, then a table's tags (with counts) and fields (with types).
    Select(el(driver, "#database")).select_by_value("console")
    wait(driver, "the explore tables", lambda: els(driver, '#explore .explore-table[data-table="cpu"]'))
    el(driver, '#explore .explore-table[data-table="cpu"]').click()
    wait(driver, "tags and fields", lambda: els(driver, "#explore .explore-tag") and els(driver, "#explore .explore-field"))
    tags = " ".join(texts(driver, "#explore .explore-tag"))
    fields = " ".join(texts(driver, "#explore .explore-field"))
    assert "host" in tags and "3" in tags, tags
    assert "usage" in fields, fields
    quick = els(driver, "#explore .explore-quick")
    assert quick, "no last-hour control"
    quick[0].click()
    wait(driver, "the last-hour chart", lambda: (rows_in_status(driver) or 0) > 0 and els(driver, "#chart canvas"))

    # The server panel draws sparklines from /metrics.
    wait(driver, "sparklines", lambda: len(els(driver, "#server canvas.sparkline")) >= 3)
    summary["sparklines"] = len(els(driver, "#server canvas.sparkline"))
    # Disk bytes by database, largest first, each with its own sparkline.
    wait(driver, "disk bytes by database",
         lambda: len(els(driver, "#disk-dbs li.disk-db canvas.sparkline")) == 2)
    dbs = driver.execute_script(
        "return [...document.querySelectorAll('#disk-dbs li.disk-db')]"
        ".map(li => [li.dataset.database, Number(li.dataset.bytes), li.textContent])")
    assert [d[0] for d in dbs] == ["console", "other"], dbs
    assert dbs[0][1] > dbs[1][1] > 0, dbs
    assert visible(driver, "#disk-dbs"), "the disk list is hidden"
    summary["disk_databases"] = [d[0] for d in dbs]
    driver.execute_script("document.querySelector('#server').scrollIntoView()")
    shot(driver, "server")
    # ... and the settings the server runs with, tokens never shown.
    wait(driver, "the server's settings", lambda: "--wal-sync" in texts(driver, "#server-info dt"))
    info = " ".join(texts(driver, "#server-info dd"))
    assert "none" in info, info

    # A bench report renders as a table and a chart.
    el(driver, "#bench-file").send_keys(BENCH)
    wait(driver, "the bench table", lambda: els(driver, "#bench .bench-table"))
    wait(driver, "the bench chart", lambda: els(driver, "#bench canvas"))
    shot(driver, "bench")

    # Dark theme, then a phone-width screenshot without horizontal scrolling.
    theme = driver.execute_script("return document.documentElement.dataset.theme || ''")
    el(driver, "#theme").click()
    wait(driver, "the other theme",
         lambda: driver.execute_script("return document.documentElement.dataset.theme || ''") != theme)
    shot(driver, "dark")
    driver.set_window_size(390, 844)
    time.sleep(0.3)
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{overflow}px of horizontal scrolling at phone width"
    shot(driver, "phone")

    logs = severe_logs(driver)
    # The deliberate syntax error answers 400; the browser logs that request.
    logs = [e for e in logs if "400 (Bad Request)" not in e["message"]]
    assert not logs, f"console errors: {logs}"
    summary["seconds"] = round(time.monotonic() - started, 1)
    return summary


def main():
    os.makedirs(ARTIFACTS, exist_ok=True)
    driver = browser(1280, 800)
    try:
        summary = with_token(driver) if TOKEN else main_flow(driver)
    finally:
        driver.quit()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
