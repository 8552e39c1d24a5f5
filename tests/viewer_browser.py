"""Load viewer pages in a real browser (Debian's chromium + chromedriver, via
selenium) and check every stage: it renders, the canvas is not blank, node
labels are drawn, no JavaScript error, nothing fetched.

Also makes the README's screenshot:

    python tests/viewer_browser.py sdfg_examples/laplacian.tir docs/viewer.png
"""

from __future__ import annotations

import base64
import pathlib
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1600,1000"]

# Records every text the page draws on a canvas (the renderer draws node labels so).
RECORD_TEXT = """
window.__drawn = new Set();
const fill = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.__drawn.add(String(text));
  return fill.call(this, text, ...rest);
};
"""

# Fraction of the graph canvas's pixels that are not background.
INK = """
const canvas = document.querySelector('#contents canvas');
if (!canvas) return -1;
const ctx = canvas.getContext('2d');
const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
let ink = 0;
for (let i = 0; i < d.length; i += 4) {
  if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) ink++;
}
return ink / (canvas.width * canvas.height);
"""


# Zoom onto the top-left corner of the graph: zoomed out to fit, the renderer
# hides text; close up, it draws the node labels.
ZOOM_IN = """
const r = WebSDFV.getInstance().get_renderer();
const boxes = r.graph.nodes().map(n => r.graph.node(n)).filter(n => n);
const left = Math.min(...boxes.map(b => b.x - b.width / 2));
const top = Math.min(...boxes.map(b => b.y - b.height / 2));
r.canvas_manager.set_view(new DOMRect(left, top, 500, 300), true);
r.draw_async();
"""


def unavailable() -> str | None:
    """Why the browser check cannot run here (None: it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    if not CHROMIUM or not CHROMEDRIVER:
        return "chromium and chromedriver are not installed (apt-get install chromium " \
               "chromium-driver)"
    return None


@dataclass
class StageReport:
    stage: str
    ink: float
    labels: set[str]
    info: str


@dataclass
class PageReport:
    stages: list[StageReport] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def _driver(profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _poll(driver, script: str, ok, timeout: float = 15.0):
    """The script's value once ``ok`` accepts it, or its last value after
    ``timeout``: the renderer lays out and draws asynchronously, so poll for
    what the check needs instead of sleeping a fixed time."""
    end = time.time() + timeout
    value = driver.execute_script(script)
    while not ok(value) and time.time() < end:
        time.sleep(0.1)
        value = driver.execute_script(script)
    return value


def _wait(driver, script: str, timeout: float = 60.0):
    end = time.time() + timeout
    while time.time() < end:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for: {script}")


def check_page(page: pathlib.Path, screenshot: pathlib.Path | None = None,
               screenshot_stage: str = "optimized") -> PageReport:
    """Open ``page``, show each stage in turn and report what was drawn;
    with ``screenshot``, save a PNG of the page showing ``screenshot_stage``."""
    import json
    report = PageReport()
    with tempfile.TemporaryDirectory() as profile:
        driver = _driver(profile)
        try:
            driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_TEXT})
            driver.get(page.resolve().as_uri())
            stages = _wait(driver, "const s = document.getElementById('stage');"
                                   "return s && Array.from(s.options).map(o => o.value);")
            for name in stages:
                driver.execute_script("window.__drawn.clear(); tirShowStage(arguments[0]);", name)
                _wait(driver, "return document.body.dataset.stage === arguments[0];"
                      .replace("arguments[0]", json.dumps(name)))
                ink = _poll(driver, INK, lambda v: v > 0.01)
                driver.execute_script(ZOOM_IN)
                labels = set(_poll(driver, "return Array.from(window.__drawn);", bool))
                info = driver.execute_script("return document.getElementById('tir-info')"
                                             ".textContent;")
                report.stages.append(StageReport(name, ink, labels, info))
            if screenshot is not None:
                driver.execute_script("document.getElementById('stage').value = arguments[0];"
                                      "tirShowStage(arguments[0]);", screenshot_stage)
                time.sleep(1.5)
                screenshot.write_bytes(base64.b64decode(driver.get_screenshot_as_base64()))
            for entry in driver.get_log("browser"):
                if entry["level"] == "SEVERE":
                    report.errors.append(entry["message"])
            for entry in driver.get_log("performance"):
                message = json.loads(entry["message"])["message"]
                if message["method"] == "Network.requestWillBeSent":
                    url = message["params"]["request"]["url"]
                    if url.startswith(("file:", "http:", "https:", "ws:", "wss:")) \
                            and url != page.resolve().as_uri():
                        report.requests.append(url)
        finally:
            driver.quit()
    return report


def main(argv: list[str]) -> int:
    tir, png = pathlib.Path(argv[0]), pathlib.Path(argv[1])
    import tensorir_dace as t
    with tempfile.TemporaryDirectory() as tmp:
        page = t.view(t.parse(tir.read_text(), filename=tir.name),
                      pathlib.Path(tmp) / f"{tir.stem}.html")
        report = check_page(page, screenshot=png)
    for s in report.stages:
        print(f"{s.stage:24} ink {s.ink:.3f}  {len(s.labels)} labels  {s.info}")
    print("errors:", report.errors, "requests:", report.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
