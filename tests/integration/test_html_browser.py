"""The HTML report in a real browser: Debian's headless Chromium opens the
file, the table and every figure must be laid out with a nonzero size, the
console must stay free of errors and nothing may be fetched. The full-page
screenshot is kept in artifacts/ as the test's artefact.

Chromium is driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4), so the test
sees console messages, exceptions and network requests directly and needs
no driver package. The run is synthetic, written through the Store API here,
so CI needs no stored results.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import Synthetic, write_run

pytestmark = [pytest.mark.integration, pytest.mark.beside]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
WIDTH = 1400
TIMEOUT_S = 60


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is missing: run scripts/install-host.sh (apt-get install chromium)")
    return path


class DevTools:
    """The smallest CDP client: one browser over a pipe, one page session."""

    def __init__(self, binary: str, profile: Path):
        profile.mkdir(parents=True, exist_ok=True)
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds():  # in the child: the protocol's fixed fds 3 (in) and 4 (out)
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={WIDTH},1000",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            # close_fds=False: subprocess would close 3 and 4 after preexec_fn;
            # Python's own fds are non-inheritable anyway (PEP 446).
            close_fds=False,
            preexec_fn=wire_fds,
            stdout=subprocess.DEVNULL,
            stderr=open(profile.parent / "chromium.log", "wb"),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: bool = True, **params) -> dict:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        while True:
            ev = self._read_message(deadline)
            if ev.get("method") == method:
                return ev
            self.events.append(ev)

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)


MEASURE = """(() => {
  const box = el => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return {w: r.width, h: r.height, visible: s.display !== 'none' && s.visibility !== 'hidden'
            && parseFloat(s.opacity) > 0}; };
  const table = document.querySelector('#table-i');
  return JSON.stringify({
    table: table ? box(table) : null,
    rows: table ? table.tBodies[0].rows.length : 0,
    emulatedBadges: document.querySelectorAll('th.emulated .badge').length,
    figures: [...document.querySelectorAll('figure.figure')].map(f => {
      const svg = f.querySelector('svg');
      return {id: f.id, svg: svg ? box(svg) : null, texts: svg ? svg.querySelectorAll('text').length : 0};
    }),
    scripts: document.scripts.length,
    height: document.documentElement.scrollHeight,
  });
})()"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    store_path = str(tmp / "r.sqlite")
    store = Store(store_path)
    write_run(store, Synthetic("browser-run"))
    n_metrics = len(store.load_run("browser-run").metrics)
    store.close()
    html = tmp / "report.html"
    r = CliRunner().invoke(
        main,
        [
            "report",
            "browser-run",
            "--store",
            store_path,
            "--format",
            "html",
            "-o",
            str(html),
            "--figures",
            str(tmp / "figs"),
        ],
    )
    assert r.exit_code == 0, r.output
    return html, sorted(p.stem for p in (tmp / "figs").glob("*.svg")), n_metrics


def test_report_renders_in_chromium(report, tmp_path):
    html, figure_slugs, n_metrics = report
    assert len(figure_slugs) == 9
    cdp = DevTools(chromium(), tmp_path / "profile")
    try:
        target = next(t for t in cdp.call("Target.getTargets", session=False)["targetInfos"] if t["type"] == "page")
        cdp.session = cdp.call("Target.attachToTarget", session=False, targetId=target["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.call(f"{domain}.enable")
        cdp.call("Page.navigate", url=html.as_uri())
        cdp.wait_event("Page.loadEventFired")
        page = json.loads(cdp.call("Runtime.evaluate", expression=MEASURE, returnByValue=True)["result"]["value"])
        # Full page: the viewport as tall as the document, then one capture.
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=int(page["height"]),
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = base64.b64decode(cdp.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])
    finally:
        cdp.close()

    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "html-report.png").write_bytes(shot)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 50_000

    table = page["table"]
    assert table and table["visible"] and table["w"] > 600 and table["h"] > 300
    assert page["rows"] == n_metrics  # one row per metric
    assert page["emulatedBadges"] == 1
    # every figure of the run, and the answer's overview of the primary cells
    ids = [f["id"] for f in page["figures"]]
    assert ids and sorted(ids) == sorted(figure_slugs + ["overview"])
    for fig in page["figures"]:
        svg = fig["svg"]
        assert svg and svg["visible"] and svg["w"] > 300 and svg["h"] > 150, fig
        assert fig["texts"] > 5, fig  # labels are text, rendered by the browser
    assert page["scripts"] == 0

    console = [e["params"] for e in cdp.events if e.get("method") == "Runtime.consoleAPICalled"]
    exceptions = [e["params"] for e in cdp.events if e.get("method") == "Runtime.exceptionThrown"]
    log_errors = [
        e["params"]["entry"]
        for e in cdp.events
        if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] in ("error", "warning")
    ]
    requests = [e["params"]["request"]["url"] for e in cdp.events if e.get("method") == "Network.requestWillBeSent"]
    assert not exceptions, exceptions
    assert not [c for c in console if c["type"] in ("error", "assert", "warning")], console
    assert not log_errors, log_errors  # CSP violations and failed loads land here
    assert requests == [html.as_uri()], requests  # the page itself, nothing else
