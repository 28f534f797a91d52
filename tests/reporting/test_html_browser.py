"""index.html in a real browser: headless Chromium driven through chromedriver's W3C WebDriver
HTTP API with urllib (no Selenium dependency).

Console errors are read from Chromium's browser log (``goog:loggingPrefs`` and chromedriver's
``/se/log`` endpoint): uncaught exceptions and ``console.error`` calls arrive there as SEVERE
entries, whichever script raised them and however early. A deliberately broken page proves the
detector sees them.

Skipped when no chromium/chromedriver is installed, unless KERNBENCH_REQUIRE_BROWSER=1 (CI),
where a missing browser fails. Debian: ``apt-get install chromium chromium-driver``.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.html import render_html
from kernbench.reporting.html_machines import html_pages
from kernbench.reporting.html_view import HTML_MAX_CASES
from support.reports import large_summary, load_fixture

pytestmark = pytest.mark.browser

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver element reference key
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu",
                 "--disable-dev-shm-usage", "--window-size=1400,1000"]


def _binary(*names: str) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


class WebDriver:
    """The few W3C WebDriver commands these tests need, over plain HTTP."""

    def __init__(self, base: str, session: str) -> None:
        self.base, self.session = base, session

    @staticmethod
    def request(method: str, url: str, body: object = None, timeout: float = 60) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read() or b"{}").get("value")
        except urllib.error.HTTPError as error:
            raise AssertionError(f"WebDriver {method} {url}: {error.read()[:2000]!r}") from None

    def command(self, method: str, path: str, body: object = None) -> Any:
        return self.request(method, f"{self.base}/session/{self.session}{path}", body)

    def open(self, path: Path) -> list[dict[str, Any]]:
        """Load `path`; the browser log entries of loading it."""
        self.browser_log()  # drop entries left by the previous page
        self.command("POST", "/url", {"url": path.resolve().as_uri()})
        return self.browser_log()

    def run(self, script: str, *args: object) -> Any:
        return self.command("POST", "/execute/sync", {"script": script, "args": list(args)})

    def click(self, css: str) -> None:
        found = self.command("POST", "/element", {"using": "css selector", "value": css})
        self.command("POST", f"/element/{found[ELEMENT]}/click", {})

    def browser_log(self) -> list[dict[str, Any]]:
        return list(self.command("POST", "/se/log", {"type": "browser"}) or [])

    def resize(self, width: int, height: int) -> None:
        self.command("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self) -> bytes:
        import base64

        return base64.b64decode(self.command("GET", "/screenshot"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"chromedriver exited with {process.returncode}")
        try:
            if (WebDriver.request("GET", f"{base}/status", timeout=2) or {}).get("ready"):
                return
        except (OSError, AssertionError):
            pass
        time.sleep(0.2)
    raise AssertionError("chromedriver did not become ready in 30 s")


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    chromium = _binary("chromium", "chromium-browser", "google-chrome")
    chromedriver = _binary("chromedriver")
    if chromium is None or chromedriver is None:
        message = ("needs chromium and chromedriver on PATH "
                   "(apt-get install chromium chromium-driver)")
        if os.environ.get("KERNBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"KERNBENCH_REQUIRE_BROWSER=1 but the browser test {message}")
        pytest.skip(message)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        _wait_ready(base, process)
        capabilities = {"browserName": "chrome", "goog:loggingPrefs": {"browser": "ALL"},
                        "goog:chromeOptions": {"binary": chromium, "args": CHROMIUM_ARGS}}
        created = WebDriver.request("POST", f"{base}/session",
                                    {"capabilities": {"alwaysMatch": capabilities}}, timeout=90)
        web = WebDriver(base, created["sessionId"])
        try:
            yield web
        finally:
            WebDriver.request("DELETE", f"{base}/session/{web.session}")
    finally:
        process.terminate()
        process.wait(timeout=10)


def console_errors(entries: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("message")) for e in entries if e.get("level") == "SEVERE"]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_error_detector_catches_a_broken_page(driver: WebDriver, tmp_path: Path) -> None:
    broken = ("<!DOCTYPE html><html><body><p>broken</p>"
              "<script>console.error('reported failure');</script>"
              "<script>undefinedFunctionOfTheTest();</script></body></html>")
    errors = console_errors(driver.open(_write(tmp_path, "broken.html", broken)))
    assert any("undefinedFunctionOfTheTest" in e for e in errors), errors
    assert any("reported failure" in e for e in errors), errors


def test_fixture_page_renders_without_console_errors(driver: WebDriver, tmp_path: Path) -> None:
    entries = driver.open(_write(tmp_path, "index.html", render_html(load_fixture())))
    assert console_errors(entries) == []
    assert driver.run("return document.documentElement.classList.contains('js');") is True
    rows = driver.run("return document.querySelectorAll('#leaderboard-table tbody tr').length;")
    assert rows == 7
    assert driver.run("return document.querySelectorAll('#failures-table tbody tr').length;") == 3
    assert driver.run("return document.querySelectorAll('#failures div.absent').length;") == 1
    assert driver.run("return document.querySelectorAll('#regressions').length;") == 1


def test_charts_are_svg_with_drawn_content(driver: WebDriver, tmp_path: Path) -> None:
    driver.open(_write(tmp_path, "index.html", render_html(load_fixture())))
    charts = driver.run("""
        return Array.from(document.querySelectorAll('svg.chart')).map(function (svg) {
          var box = svg.getBoundingClientRect();
          return {kind: svg.getAttribute('class'), width: box.width, height: box.height,
                  shapes: svg.querySelectorAll('rect, circle, line, polyline').length};
        });""")
    kinds = [c["kind"] for c in charts]
    assert kinds.count("chart boxplot") >= 2 and "chart bars" in kinds
    assert "chart lines" in kinds and "chart trend" in kinds
    assert all(c["width"] > 100 and c["height"] > 50 and c["shapes"] > 3 for c in charts), charts
    boxes = driver.run("return document.querySelectorAll('#distributions rect.iqr').length;")
    assert boxes == 8  # 7 ok cases + the failed drifty case, which has samples
    tooltip = driver.run("return document.querySelector('#distributions g.box title')"
                         ".textContent;")
    assert "median" in tooltip and "ms" in tooltip


def _column(driver: WebDriver, index: int) -> list[str]:
    return list(driver.run(
        "var column = arguments[0];"
        "return Array.from(document.querySelectorAll('#leaderboard-table tbody tr'))"
        ".map(function (row) { var cell = row.cells[column];"
        " return cell.getAttribute('data-sort') || cell.textContent.trim(); });", index))


def test_clicking_a_header_sorts_the_leaderboard(driver: WebDriver, tmp_path: Path) -> None:
    inputs = load_fixture()
    summary = copy.deepcopy(dict(inputs.summary))
    for record in summary["results"]:
        if record["case_id"] == "rmsnorm[cpu,fp32]":
            record["work"] = None  # its GB/s reads n/a, which sorts last both ways
    page = render_html(ReportInputs(summary, inputs.environment, inputs.comparison,
                                    inputs.history))
    assert console_errors(driver.open(_write(tmp_path, "sorted.html", page))) == []
    ranked = _column(driver, 1)
    assert ranked[0] == "softmax[cpu,bf16]"
    driver.click("#leaderboard-table th:nth-child(2) button")  # Case, ascending
    assert _column(driver, 1) == sorted(ranked) != ranked
    driver.click("#leaderboard-table th:nth-child(7) button")  # p50, ascending
    driver.click("#leaderboard-table th:nth-child(7) button")  # p50, descending
    p50 = [float(v) for v in _column(driver, 6)]
    assert p50 == sorted(p50, reverse=True) and _column(driver, 1)[0] == ranked[-1]
    assert driver.run("return document.querySelector('#leaderboard-table th:nth-child(7)')"
                      ".getAttribute('aria-sort');") == "descending"
    driver.click("#all-columns")  # GB/s is one of the columns the switch shows
    for _ in range(2):  # GB/s ascending, then descending: n/a stays last
        driver.click("#leaderboard-table th:nth-child(13) button")
        gbs = _column(driver, 12)
        assert gbs[-1] == "n/a" and "n/a" not in gbs[:-1], gbs
    assert console_errors(driver.browser_log()) == []


# -- layout at a laptop's width ----------------------------------------------------------------

LAPTOP_PX = 1280

OVERFLOW = """
    var root = document.documentElement;
    return {scroll: root.scrollWidth, client: root.clientWidth, inner: window.innerWidth};"""

TEXT_OUTSIDE_OR_OVERLAPPING = """
    function box(t) { var b = t.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height}; }
    function overlap(a, b) {
      return a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 &&
             a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5; }
    var problems = [];
    document.querySelectorAll('svg.chart').forEach(function (svg, index) {
      var view = svg.viewBox.baseVal, seen = {};
      svg.querySelectorAll('text').forEach(function (t) {
        var b = box(t), what = (t.getAttribute('class') || 'text') + ' "' + t.textContent + '"';
        if (b.x < -0.5 || b.y < -0.5 || b.x + b.w > view.width + 0.5 ||
            b.y + b.h > view.height + 0.5) {
          problems.push('chart ' + index + ': ' + what + ' outside ' + view.width + 'x' +
                        view.height + ' at ' + JSON.stringify(b));
        }
        var kind = t.getAttribute('class') || 'text';
        (seen[kind] = seen[kind] || []).forEach(function (other) {
          if (overlap(b, other.b)) {
            problems.push('chart ' + index + ': ' + what + ' overlaps "' + other.text + '"');
          }
        });
        seen[kind].push({b: b, text: t.textContent});
      });
    });
    return problems;"""


def _long_labels(summary: dict[str, Any]) -> None:
    """Case names, sizes and speedup labels longer than any the fixture has: a long kernel
    name (one word: a chart label cannot wrap it), a sweep point of several keys and an
    implementation name on every case."""
    for index, record in enumerate(summary["results"]):
        size = {"rows": 4096, "cols": 1024, "layout": "row_major_blocked", "block": 128}
        record["problem_size"] = size
        record["kernel_name"] += "_fused_bias_gelu_dropout_residual_layernorm"
        record["implementation"] = f"compiled_max_autotune_{index % 5}"  # long legend names
        record["case_id"] = record["case_id"][:-1] + ",impl=compiled_max_autotune," + ",".join(
            f"{k}={v}" for k, v in size.items()) + "]"


def _huge_name(summary: dict[str, Any]) -> None:
    """One kernel named with 220 characters, as a generated file can be: its chart label is
    shortened in the middle, and the page still fits the screen."""
    record = summary["results"][0]
    record["kernel_name"] = "k" * 220
    record["case_id"] = "k" * 220 + "[cpu,fp32]"


def _large(summary: dict[str, Any]) -> None:
    """A run past the bound of the whole page: the bounded page (html_view), with failures."""
    summary.update(large_summary(HTML_MAX_CASES + 50))
    for record in summary["results"][::40]:
        record.update(status="failed", reason="boom")


def _page(tmp_path: Path, name: str, edit: Any = None) -> Path:
    inputs = load_fixture()
    summary = copy.deepcopy(dict(inputs.summary))
    if edit is not None:
        edit(summary)
    return _write(tmp_path, name, html_pages(ReportInputs(
        summary, inputs.environment, inputs.comparison, inputs.history))["index.html"])


@pytest.mark.parametrize("edit", [None, _long_labels, _large, _huge_name],
                         ids=["fixture", "long-labels", "large", "huge-name"])
def test_the_page_fits_a_laptop_screen_without_console_errors(
        driver: WebDriver, tmp_path: Path, edit: Any) -> None:
    driver.resize(LAPTOP_PX, 900)
    try:
        errors = console_errors(driver.open(_page(tmp_path, "laptop.html", edit)))
        assert errors == []
        width = driver.run(OVERFLOW)
        assert width["inner"] == LAPTOP_PX, width
        assert width["scroll"] <= width["client"], f"horizontal scroll at {LAPTOP_PX} px: {width}"
        table = driver.run("var t = document.querySelector('#leaderboard-table');"
                           "return {table: t.scrollWidth, box: t.parentNode.clientWidth};")
        assert table["table"] <= table["box"], f"the leaderboard scrolls sideways: {table}"
        hidden = driver.run("return getComputedStyle(document.querySelector("
                            "'#leaderboard-table td.detail')).display;")
        assert hidden == "none"
        driver.click("#all-columns")  # every column: the table may scroll, the page must not
        assert driver.run("return getComputedStyle(document.querySelector("
                          "'#leaderboard-table td.detail')).display;") == "table-cell"
        width = driver.run(OVERFLOW)
        assert width["scroll"] <= width["client"], f"with all columns: {width}"
        assert console_errors(driver.browser_log()) == []
    finally:
        driver.resize(1400, 1000)


@pytest.mark.parametrize("edit", [None, _long_labels, _large],
                         ids=["fixture", "long-labels", "large"])
def test_no_chart_text_is_cut_or_overlaps(driver: WebDriver, tmp_path: Path, edit: Any) -> None:
    driver.open(_page(tmp_path, "labels.html", edit))
    assert driver.run(TEXT_OUTSIDE_OR_OVERLAPPING) == []
    assert "\u2026" not in (tmp_path / "labels.html").read_text(encoding="utf-8")


def test_the_layout_checks_catch_a_wide_page_and_a_cut_label(driver: WebDriver,
                                                            tmp_path: Path) -> None:
    driver.resize(LAPTOP_PX, 900)
    try:
        wide = ('<!DOCTYPE html><html><body><div style="width:1500px">wide</div>'
                '<svg class="chart" viewBox="0 0 100 40" width="100" height="40">'
                '<text x="60" y="20">a label cut at the edge</text>'
                '<text x="2" y="30" class="label">one</text>'
                '<text x="4" y="30" class="label">two</text></svg></body></html>')
        driver.open(_write(tmp_path, "wide.html", wide))
        width = driver.run(OVERFLOW)
        assert width["scroll"] > width["client"]
        problems = driver.run(TEXT_OUTSIDE_OR_OVERLAPPING)
        assert any("outside" in p and "cut at the edge" in p for p in problems), problems
        assert any('"two" overlaps "one"' in p for p in problems), problems
    finally:
        driver.resize(1400, 1000)
