"""The evaluation report's sortable segment table, driven in headless Chromium.

A page rendered from a hand-built view is opened in the browser; the test clicks a header's
button with the mouse (DevTools input events at the button's position) and presses Enter on
another, reads the rows' order back from the page and checks ``aria-sort``. The expected orders
are worked out here from the view's numbers. The browser must log nothing at level error: a
Content-Security-Policy violation (the script refused) is one, and a page whose script does
not match its hash shows that the check sees it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from modelgate.reports.html import render_evaluation_report
from modelgate.reports.segment_views import SegmentRow, SegmentSection
from modelgate.reports.views import EvaluationReportView, GateView
from test_reports_browser import DevTools, _errors, browser  # noqa: F401 (fixture)

#: (segment, difference): natural order of the names differs from their text order (9 < 10 <
#: 100), the differences' numeric order from their text order (-0.13 < -0.05 < 0.002 < 0.2);
#: one segment is too small to judge (no difference: last in both directions).
SEGMENTS = (("age=10", -0.13), ("age=9", -0.05), ("age=100", 0.2), ("age=7", 0.002),
            ("age=__missing__", None))


def _page() -> str:
    rows = tuple(SegmentRow(name, 500, 0.8, 0.75, 0.85, None if d is None else 0.8 - d, d,
                            None if d is None else d - 0.04, None if d is None else d + 0.04,
                            None if d is None else 0.5, None if d is None else 0.5)
                 for name, d in SEGMENTS)
    view = EvaluationReportView(
        title="Evaluation", model_name="churn", model_version="7", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="run-1",
        created_at="2026-12-05T08:00:00Z", provider="CPUExecutionProvider", rows_scored=2500,
        metrics=(), calibration=(), fairness=(), shap_importance=(), waterfalls=(),
        gate=GateView(True, "passed", ()),
        segments=(SegmentSection("accuracy", True, rows, "4 tests, Benjamini-Hochberg at 0.05"),))
    return render_evaluation_report(view)


_STATE = """JSON.stringify({
  rows: Array.from(document.querySelectorAll("#segments-0 tbody tr"), r => r.cells[0].textContent),
  sort: Array.from(document.querySelectorAll("#segments-0 thead th"),
                   th => [th.textContent.trim(), th.getAttribute("aria-sort")]).filter(p => p[1]),
  buttons: document.querySelectorAll("#segments-0 thead th > button").length
})"""


def _state(tools: DevTools, session: str) -> dict[str, Any]:
    reply = tools.call("Runtime.evaluate", session, expression=_STATE, returnByValue=True)
    return dict(json.loads(reply["result"]["value"]))


def _load(tools: DevTools, session: str, path: Path) -> None:
    tools.events.clear()
    tools.call("Page.navigate", session, url=path.as_uri())
    tools.wait_for("Page.loadEventFired")


def _button(header: str) -> str:
    return ("Array.from(document.querySelectorAll('#segments-0 thead th > button'))"
            f".find(b => b.textContent.trim() === {json.dumps(header)})")


def _click(tools: DevTools, session: str, header: str) -> None:
    """A real mouse click in the middle of the header's button."""
    expression = (f"(() => {{ const b = {_button(header)}; b.scrollIntoView({{block: 'center'}});"
                  " const r = b.getBoundingClientRect();"
                  " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    reply = tools.call("Runtime.evaluate", session, expression=expression, returnByValue=True)
    x, y = reply["result"]["value"]
    for kind in ("mousePressed", "mouseReleased"):
        tools.call("Input.dispatchMouseEvent", session, type=kind, x=x, y=y, button="left", clickCount=1)


def _press_enter(tools: DevTools, session: str, header: str) -> None:
    """Focus the header's button as Tab would, and press Enter on it."""
    tools.call("Runtime.evaluate", session, expression=f"{_button(header)}.focus()")
    tools.call("Input.dispatchKeyEvent", session, type="keyDown", key="Enter", code="Enter",
               windowsVirtualKeyCode=13, text="\r")
    tools.call("Input.dispatchKeyEvent", session, type="keyUp", key="Enter", code="Enter",
               windowsVirtualKeyCode=13)


@pytest.mark.e2e
def test_a_header_click_sorts_the_segment_table(browser: tuple[DevTools, str],  # noqa: F811
                                                tmp_path: Path) -> None:
    tools, session = browser
    path = tmp_path / "evaluation.html"
    path.write_text(_page(), encoding="utf-8")
    _load(tools, session, path)
    judged = [(d, name) for name, d in SEGMENTS if d is not None]
    rendered = _state(tools, session)
    assert rendered == {"rows": [name for name, _ in SEGMENTS], "sort": [], "buttons": 11}

    _click(tools, session, "Difference")
    ascending = _state(tools, session)
    assert ascending["rows"] == [name for _, name in sorted(judged)] + ["age=__missing__"]
    assert ascending["sort"] == [["Difference", "ascending"]]

    _press_enter(tools, session, "Difference")
    descending = _state(tools, session)
    assert descending["rows"] == [name for _, name in sorted(judged, reverse=True)] + ["age=__missing__"]
    assert descending["sort"] == [["Difference", "descending"]]

    _press_enter(tools, session, "Segment")
    by_name = _state(tools, session)
    # natural order: digits as numbers; "_" is punctuation, which Unicode collation puts first
    assert by_name["rows"] == ["age=__missing__", "age=7", "age=9", "age=10", "age=100"]
    assert by_name["sort"] == [["Segment", "ascending"]]
    tools.drain()
    assert _errors(tools.events) == []


@pytest.mark.e2e
def test_a_script_that_does_not_match_its_hash_is_refused_and_seen(
        browser: tuple[DevTools, str], tmp_path: Path) -> None:  # noqa: F811
    tools, session = browser
    page = _page()
    assert page.count('"use strict";') == 1
    path = tmp_path / "tampered.html"
    path.write_text(page.replace('"use strict";', '"use strict"; ', 1), encoding="utf-8")
    _load(tools, session, path)
    tools.drain()
    assert _state(tools, session)["buttons"] == 0  # refused: the table stays as rendered
    errors = _errors(tools.events)
    assert errors and all("Content Security Policy" in e for e in errors), errors
