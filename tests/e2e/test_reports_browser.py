"""The demo's HTML reports, opened in a real browser (headless Chromium).

``modelgate demo`` runs once, in a subprocess, into a temporary ``MODELGATE_HOME`` (embedded
PostgreSQL, local object store, private Airflow home). Every ``.html`` object it leaves under
``reports/`` (evaluation, drift and the per-model index pages) is then loaded in headless
Chromium through the DevTools protocol, and must:

* load with no JavaScript exception, no ``console.error`` and no browser log entry of level
  ``error`` (a Content-Security-Policy violation or a resource that fails to load is one);
* show every ``<img>`` decoded (``complete`` with a non-zero natural size) and every inline
  ``<svg>`` chart laid out at a non-zero size, with at least one chart per run report;
* be under 2 MB.

A 1280x2000 screenshot of each page goes to ``tests/out/browser/`` with ``report_sizes.md``
(copy it into the report-size section of ``bench/RESULTS.md`` to update the recorded sizes).

At 1400 px wide, a release manager's screen, nothing may be cut off: no table wider than its
scrolling container, no chart label outside its SVG, no image outside its figure (bounding
boxes as the browser laid them out). Screenshots of the sections a reader checks first (the
banner, the gate checks, a fairness-gap chart, a SHAP waterfall, a drift histogram, the ADWIN
change points) go to ``tests/out/browser/sections/``.

Chromium is required: without ``/usr/bin/chromium`` (or ``MODELGATE_TEST_CHROMIUM``) the test
fails and says to run ``.ci/ensure-chromium``.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import os
import posixpath
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "out" / "browser"
# conftest.py removes MODELGATE_* variables other than MODELGATE_TEST_*, hence the name.
CHROMIUM = Path(os.environ.get("MODELGATE_TEST_CHROMIUM", "/usr/bin/chromium"))
MAX_REPORT_BYTES = 2 * 1024 * 1024
DEMO_TIMEOUT_S = 900
UTC = dt.UTC

# --- the demo, in a browser -----------------------------------------------------------------


def _child_env(home: Path) -> dict[str, str]:
    """The test's environment without anything that points the demo at other services."""
    drop = ("AIRFLOW_HOME", "AIRFLOW__CORE__DAGS_FOLDER", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN")
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("MODELGATE_", "AIRFLOW_CONN_"))}
    env["MODELGATE_HOME"] = str(home)
    return env


@pytest.fixture(scope="module")
def demo_home() -> Iterator[Path]:
    # Not under pytest's basetemp: another pytest session starting meanwhile resets that
    # folder to mode 0700, which locks out the embedded PostgreSQL's own system user.
    home = Path(tempfile.mkdtemp(prefix="modelgate-browser-demo-"))
    try:
        done = subprocess.run([sys.executable, "-m", "modelgate.cli", "demo"],
                              env=_child_env(home), cwd=REPO, capture_output=True, text=True,
                              timeout=DEMO_TIMEOUT_S)
        if done.returncode != 0:
            pytest.fail(f"modelgate demo exited with {done.returncode}\n--- stdout\n"
                        f"{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
        yield home
    finally:
        _stop_embedded_postgres(home / "pgdata")
        shutil.rmtree(home, ignore_errors=True)


def _stop_embedded_postgres(pgdata: Path, timeout_s: float = 30) -> None:
    """Stop the server the demo left running for ``psql`` (by the pid in its postmaster.pid)."""
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


@dataclass
class PageCheck:
    """What the browser saw on one page."""

    errors: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    svgs: list[list[float]] = field(default_factory=list)  # laid-out [width, height] of each
    title: str = ""
    headings: int = 0


class DevTools:
    """A minimal Chrome DevTools Protocol client over the browser's websocket (flat sessions)."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self.ws = connect(url, proxy=None, max_size=None, compression=None, open_timeout=30)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, timeout_s: float = 60,
             **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout_s
        while True:
            reply = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"DevTools {method} failed: {reply['error']}")
                return dict(reply.get("result", {}))
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(e["method"] == method for e in self.events):
            self.events.append(json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic()))))

    def drain(self, quiet_s: float = 0.3) -> None:
        """Collect events until none has arrived for ``quiet_s``."""
        while True:
            try:
                self.events.append(json.loads(self.ws.recv(timeout=quiet_s)))
            except TimeoutError:
                return

    def close(self) -> None:
        self.ws.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevTools, str]]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"headless Chromium is required at {CHROMIUM} for the report browser test; "
                    "run .ci/ensure-chromium (or set MODELGATE_TEST_CHROMIUM to a Chromium binary)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    args = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"]
    log = profile / "chromium-stderr.log"  # a file, not a pipe: a full pipe would block Chromium
    with log.open("wb") as sink:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=sink)
    try:
        tools = DevTools(_devtools_url(profile, proc, log))
        target = tools.call("Target.createTarget", url="about:blank")["targetId"]
        session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            tools.call(domain, session)
        tools.call("Emulation.setDeviceMetricsOverride", session, width=1280, height=2000,
                   deviceScaleFactor=1, mobile=False)
        yield tools, session
        tools.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _devtools_url(profile: Path, proc: subprocess.Popen[bytes], log: Path,
                  timeout_s: float = 30) -> str:
    """The browser's websocket URL, from the DevToolsActivePort file Chromium writes."""
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stderr = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"Chromium exited with {proc.returncode}: {stderr}")
        lines = port_file.read_text().split() if port_file.exists() else []
        if len(lines) == 2:
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        time.sleep(0.1)
    raise TimeoutError(f"Chromium wrote no {port_file} within {timeout_s} s")


_PAGE_PROBE = """JSON.stringify({
  title: document.title,
  headings: document.querySelectorAll("h1").length,
  images: Array.from(document.images, i => ({alt: i.alt, complete: i.complete,
                                             width: i.naturalWidth, height: i.naturalHeight})),
  svgs: Array.from(document.querySelectorAll("svg"), s => {
    const box = s.getBoundingClientRect(); return [box.width, box.height]; })
})"""


def _open(tools: DevTools, session: str, path: Path, screenshot: Path) -> PageCheck:
    tools.events.clear()
    nav = tools.call("Page.navigate", session, url=path.as_uri())
    if nav.get("errorText"):
        return PageCheck(errors=[f"navigation failed: {nav['errorText']}"])
    tools.wait_for("Page.loadEventFired")
    probe = tools.call("Runtime.evaluate", session, expression=_PAGE_PROBE, returnByValue=True)
    shot = tools.call("Page.captureScreenshot", session, format="png")
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    tools.drain()
    seen = json.loads(probe["result"]["value"])
    return PageCheck(errors=_errors(tools.events), images=seen["images"], svgs=seen["svgs"],
                     title=seen["title"], headings=seen["headings"])


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        params = event.get("params", {})
        if event["method"] == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"exception: {text}")
        elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(f"console.{params['type']}: {params.get('args')}")
        elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log {params['entry'].get('source')}: {params['entry'].get('text')}")
    return found


def _report_files(home: Path) -> list[Path]:
    root = home / "objects" / "reports"
    return sorted(p for p in root.rglob("*.html") if not p.name.startswith(".tmp-"))


def _shot_name(rel: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", rel.removesuffix(".html").replace("/", "__")) + ".png"


@pytest.mark.e2e
def test_every_demo_report_renders_in_chromium(browser: tuple[DevTools, str],
                                               demo_home: Path) -> None:
    tools, session = browser
    reports = _report_files(demo_home)
    kinds = {p.name.split("-")[0].removesuffix(".html") for p in reports}
    assert kinds == {"evaluation", "drift", "index"}, f"reports found: {reports}"
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    root = demo_home / "objects"
    problems, sizes = [], []
    for path in reports:
        rel = path.relative_to(root).as_posix()
        check = _open(tools, session, path, OUT / _shot_name(rel))
        sizes.append((rel, path.stat().st_size))
        problems += [f"{rel}: {e}" for e in check.errors]
        problems += [f"{rel}: image {i['alt']!r} did not load" for i in check.images
                     if not (i["complete"] and i["width"] > 0 and i["height"] > 0)]
        problems += [f"{rel}: an inline SVG chart laid out at {w}x{h}" for w, h in check.svgs
                     if not (w > 0 and h > 0)]
        if path.name != "index.html" and not (check.images or check.svgs):
            problems.append(f"{rel}: a {path.name.split('-')[0]} report with no chart")
        if not check.title or check.headings != 1:
            problems.append(f"{rel}: title {check.title!r}, {check.headings} <h1>")
        if path.stat().st_size >= MAX_REPORT_BYTES:
            problems.append(f"{rel}: {path.stat().st_size:,} bytes, limit {MAX_REPORT_BYTES:,}")
    _write_sizes(sizes)
    assert not problems, "\n".join(problems)


def _write_sizes(sizes: list[tuple[str, int]]) -> None:
    version = subprocess.run([str(CHROMIUM), "--version"], capture_output=True, text=True).stdout
    lines = ["# Demo report sizes", "",
             f"Date: {dt.datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: `.venv/bin/pytest -q -p "
             "no:cacheprovider tests/e2e/test_reports_browser.py` (runs `modelgate demo` into a temp "
             f"MODELGATE_HOME). Browser: {version.strip()}. Limit: {MAX_REPORT_BYTES:,} bytes.",
             "", "| report | bytes |", "|---|---:|"]
    lines += [f"| `{rel}` | {size:,} |" for rel, size in sizes]
    (OUT / "report_sizes.md").write_text("\n".join(lines) + "\n")


# --- layout at a release manager's screen width: nothing cut off, sections screenshotted ----

LAYOUT_WIDTH = 1400
#: Per report kind, the sections the issue names: (screenshot name, CSS selector). A table's
#: screenshot is of its scrolling container.
SECTIONS: dict[str, list[tuple[str, str]]] = {
    "evaluation": [("banner", "#banner"), ("gate-checks", "#gate-checks"),
                   ("fairness-gaps", "svg[aria-label^='Fairness gaps']"),
                   ("waterfall", "figure"), ("shap-summary", "svg[aria-label^='SHAP summary']"),
                   ("shap-groups", "svg[aria-label^='Mean SHAP per feature by']")],
    "drift": [("banner", "#banner"), ("drift-summary", "#drift-summary"),
              ("histogram", "svg[aria-label$='reference vs current']"),
              ("change-points", "#change-points"), ("labelled-performance", "#labelled-performance")],
    "index": [("runs", "#runs")],
}

_LAYOUT_PROBE = """JSON.stringify((() => {
  const problems = [];
  const inside = (inner, outer) => inner.left >= outer.left - 0.5 && inner.right <= outer.right + 0.5
    && inner.top >= outer.top - 0.5 && inner.bottom <= outer.bottom + 0.5;
  const main = document.querySelector("main").getBoundingClientRect();
  for (const table of document.querySelectorAll("table")) {
    const box = table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1)
      problems.push(`table #${table.id} overflows its container by ${box.scrollWidth - box.clientWidth}px`);
    if (!inside(table.getBoundingClientRect(), main))
      problems.push(`table #${table.id} sticks out of the page`);
  }
  document.querySelectorAll("svg").forEach((svg, i) => {
    const box = svg.getBoundingClientRect();
    const name = svg.getAttribute("aria-label");
    if (!name || svg.getAttribute("role") !== "img")
      problems.push(`chart ${i} has no role=img and aria-label`);
    if (!inside(box, main)) problems.push(`chart ${i} (${name}) sticks out of the page`);
    for (const text of svg.querySelectorAll("text")) {
      if (!inside(text.getBoundingClientRect(), box))
        problems.push(`chart ${i} (${name}): label ${JSON.stringify(text.textContent)} is clipped`);
    }
  });
  for (const img of document.images) if (!img.alt) problems.push(`an image without alt text`);
  for (const fig of document.querySelectorAll("figure")) {
    const img = fig.querySelector("img");
    if (img && !inside(img.getBoundingClientRect(), fig.getBoundingClientRect()))
      problems.push(`image ${JSON.stringify(img.alt)} overflows its figure`);
  }
  return problems;
})())"""

_SECTION_BOX = """JSON.stringify((() => {
  const found = document.querySelector(%s);
  if (!found) return null;
  const el = found.tagName === "TABLE" ? found.parentElement : found;
  const r = el.getBoundingClientRect();
  return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
})())"""


def layout_problems(tools: DevTools, session: str, path: Path, kind: str,
                    shots: Path, sections: list[tuple[str, str]] | None = None) -> list[str]:
    """Load ``path`` at ``LAYOUT_WIDTH`` px, screenshot the named sections into ``shots``,
    and return what is cut off: tables wider than their container, chart labels outside
    their SVG, images outside their figure."""
    tools.events.clear()
    tools.call("Page.navigate", session, url=path.as_uri())
    tools.wait_for("Page.loadEventFired")
    probe = tools.call("Runtime.evaluate", session, expression=_LAYOUT_PROBE, returnByValue=True)
    problems = list(json.loads(probe["result"]["value"]))
    for name, selector in SECTIONS.get(kind, []) if sections is None else sections:
        found = tools.call("Runtime.evaluate", session, returnByValue=True,
                           expression=_SECTION_BOX % json.dumps(selector))
        box = json.loads(found["result"]["value"])
        if box is None:
            if name != "change-points":  # a drift interval without change points has none
                problems.append(f"no {name} section ({selector})")
            continue
        x, y, width, height = box
        shot = tools.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True,
                          clip={"x": x, "y": y, "width": width, "height": height, "scale": 1})
        (shots / f"{path.stem}--{name}.png").write_bytes(base64.b64decode(shot["data"]))
    tools.drain()
    return problems


@pytest.mark.e2e
def test_report_sections_fit_at_1400px(browser: tuple[DevTools, str], demo_home: Path) -> None:
    tools, session = browser
    shots = OUT / "sections"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    tools.call("Emulation.setDeviceMetricsOverride", session, width=LAYOUT_WIDTH, height=1000,
               deviceScaleFactor=1, mobile=False)
    problems = []
    try:
        for path in _report_files(demo_home):
            kind = path.name.split("-")[0].removesuffix(".html")
            rel = path.relative_to(demo_home / "objects").as_posix()
            problems += [f"{rel}: {p}" for p in layout_problems(tools, session, path, kind, shots)]
    finally:
        tools.call("Emulation.setDeviceMetricsOverride", session, width=1280, height=2000,
                   deviceScaleFactor=1, mobile=False)
    assert not problems, "\n".join(problems)
    names = {p.name.split("--")[1] for p in shots.glob("*.png")}
    assert {"banner", "gate-checks", "fairness-gaps", "waterfall", "histogram", "change-points",
            "shap-summary", "shap-groups", "drift-summary", "labelled-performance",
            "runs"} <= {n.removesuffix(".png") for n in names}, names


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v for k, v in attrs if tag == "a" and k == "href" and v]


@pytest.mark.e2e
def test_index_pages_link_every_report(demo_home: Path) -> None:
    root = demo_home / "objects"
    indexes = sorted((root / "reports").glob("*/index.html"))
    assert indexes, "the demo wrote no reports/<model>/index.html"
    for index in indexes:
        parser = _Links()
        parser.feed(index.read_text(encoding="utf-8"))
        folder = index.parent
        linked = {posixpath.normpath(posixpath.join(folder.as_posix(), h)) for h in parser.hrefs}
        on_disk = {p.as_posix() for p in folder.rglob("*.html") if p != index}
        assert len(parser.hrefs) == len(linked), f"{index}: a report is listed twice"
        assert linked == on_disk, f"{index}: links {sorted(linked)} but reports {sorted(on_disk)}"


@pytest.mark.e2e
def test_report_tasks_pushed_their_airflow_link(demo_home: Path) -> None:
    db = sqlite3.connect(demo_home / "airflow" / "airflow.db")
    try:
        rows = db.execute("""SELECT x.dag_id, x.task_id, t.state, x.value FROM xcom x
                             JOIN task_instance t ON t.dag_id = x.dag_id AND t.run_id = x.run_id
                              AND t.task_id = x.task_id AND t.map_index = x.map_index
                             WHERE x.key = '_link_ReportLink'""").fetchall()
    finally:
        db.close()
    links = [(dag_id, task, state, json.loads(value) if isinstance(value, str | bytes) else value)
             for dag_id, task, state, value in rows]
    # every task that succeeded wrote a report and links it; a report task the run skipped (the
    # evaluation's `report` when evaluate_in_one_task wrote the report) or a task that failed
    # before writing one links nothing
    assert {dag_id for dag_id, _, _, link in links if link} == {"model_evaluation",
                                                                 "drift_monitoring"}, rows
    for _, _, state, link in links:
        if link or state == "success":
            assert str(link).startswith("file://") and str(link).endswith(".html"), rows
        else:
            assert state in ("skipped", "failed", "upstream_failed"), rows


# --- the analysts' example queries on the demo's data ---------------------------------------

def _readme_queries() -> list[tuple[str, str]]:
    text = (REPO / "sql" / "README.md").read_text()
    return re.findall(r"<!-- query: (\w+) -->\s*```sql\n(.*?)```", text, flags=re.S)




@pytest.mark.e2e
def test_sql_readme_queries_return_rows_on_demo_data(demo_home: Path) -> None:
    import psycopg2

    from modelgate.store.db import embedded_database_url

    queries = _readme_queries()
    assert len(queries) >= 12
    conn = psycopg2.connect(embedded_database_url(demo_home))
    try:
        empty = []
        for name, sql in queries:
            with conn.cursor() as cur:
                cur.execute(sql)
                if not cur.fetchall():
                    empty.append(name)
    finally:
        conn.close()
    # the demo quarantines no partition, rolls nothing back and sets no segments;
    # tests/store/test_analyst.py runs these on seeded degraded runs, a seeded rollback and
    # seeded segment rows
    seeded_only = {"degraded_drift_runs", "rollback_history", "segment_worse_than_previous_version",
                   "segment_breaches", "drifted_segments",
                   "weakest_estimated_segments"}
    empty = [name for name in empty if name not in seeded_only]
    assert empty == [], f"queries without rows on the demo data: {empty}"
