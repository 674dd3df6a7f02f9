"""What ``modelgate demo`` prints (issue #23), tested without running the demo: the closing
story, the ranking of drift runs, the analyst's psql hint (run for real against the test
PostgreSQL, as the analyst role) and where third-party log output goes."""

from __future__ import annotations

import datetime as dt
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelgate.demo import log_to_file
from modelgate.demo.story import DriftOutcome, EvaluationOutcome, rank_drift, story
from modelgate.store.summaries import analyst_hint


def _drift(day: int, breached: tuple[str, ...], ratio: float | None, changes: int = 0, *,
           status: str = "drift", simulated: bool = False) -> DriftOutcome:
    worst = breached[0] if breached else None
    return DriftOutcome(dt.date(2018, 1, day), day, status, breached, worst, ratio, changes, simulated)


def test_the_story_says_promoted_blocked_failed_and_ranks_drift_worst_first() -> None:
    evaluations = [
        EvaluationOutcome("v1", 1, "passed", "production", ()),
        EvaluationOutcome("v2", 2, "blocked", "candidate",
                          ("fairness:gender:equalized_odds_difference: 0.21 > 0.10",)),
        EvaluationOutcome("v2 on a broken file", 3, "failed", "candidate", ("missing column 'educcat'",)),
    ]
    drifts = [_drift(1, ("age",), 1.4), _drift(2, ("age", "model score"), 1.1),
              _drift(3, (), 0.8, status="ok"), _drift(4, ("age",), 2.5, 1, simulated=True)]
    lines = story("gss", evaluations, drifts, where=["reports: file:///x/index.html"])
    text = "\n".join(lines)
    assert "  PASSED and PROMOTED to production: gss v1 (run 1)" in lines
    assert "  BLOCKED by the gate, not promoted: gss v2 (run 2)" in lines
    assert "      because fairness:gender:equalized_odds_difference: 0.21 > 0.10" in lines
    assert "  FAILED, not promoted: gss v2 on a broken file (run 3)" in lines
    assert "Drift: 3 of 4 interval(s) drifted" in text
    # by hand: 2 features first; then 1 feature at 2.5x, then 1.4x; the ok run last
    order = [line.split("run ")[1].split()[0] for line in lines if line.startswith("      2018-")]
    assert order == ["2", "4", "1", "3"]
    assert "DRIFT in 2 feature(s): age, model score; worst age at 1.1x its threshold" in text
    assert "[labels flipped on purpose]" in text and "__score__" not in text
    assert lines[-2:] == ["Where to look", "  reports: file:///x/index.html"]


def test_ranking_ties_fall_back_to_change_points_then_interval() -> None:
    a, b, c = _drift(3, ("x",), 2.0), _drift(1, ("x",), 2.0), _drift(2, ("x",), 2.0, changes=2)
    assert [o.run_id for o in rank_drift([a, b, c])] == [2, 1, 3]


def test_story_escapes_names_for_the_terminal() -> None:
    lines = story("m\x1b[2J", [EvaluationOutcome("v1", 1, "failed", "candidate", ("bad\nline",))],
                  [], where=[])
    assert all("\x1b" not in line and "\n" not in line for line in lines)


def test_the_analyst_hint_runs_as_the_analyst_role(clean_db: str) -> None:
    from pgserver._commands import POSTGRES_BIN_PATH

    psql = str(Path(POSTGRES_BIN_PATH) / "psql")
    hint = analyst_hint(clean_db, psql)
    assert "SET ROLE modelgate_analyst" in hint
    done = subprocess.run(["bash", "-c", hint], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "blocking_failure_reasons" in done.stdout  # the view's header; no rows yet
    # the same role may not read a table: the hint shows what an analyst really sees
    denied = subprocess.run([psql, clean_db, "-c", "SET ROLE modelgate_analyst",
                             "-c", "SELECT * FROM model_version"], capture_output=True, text=True,
                            timeout=60)
    assert "permission denied for table model_version" in denied.stderr


@pytest.fixture()
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    filters = {h: list(h.filters) for h in handlers}
    pg_level = logging.getLogger("pgserver").level
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    for h, saved in filters.items():
        h.filters = saved
    root.setLevel(level)
    logging.getLogger("pgserver").setLevel(pg_level)
    logging.captureWarnings(False)


def test_third_party_output_goes_to_the_log_file_only(tmp_path: Path, restore_logging: None) -> None:
    import io
    import warnings

    console = io.StringIO()
    logging.getLogger().addHandler(logging.StreamHandler(console))
    path = log_to_file(tmp_path)
    assert path == tmp_path / "demo.log"
    logging.getLogger("pgserver").info("initdb: The files belonging to this database system")
    logging.getLogger("airflow.models").warning("some deprecation")
    warnings.warn("BuildBackendWarning-like noise", UserWarning, stacklevel=1)
    logging.getLogger("modelgate.store").warning("creating a NEW, empty embedded results database")
    logging.getLogger("modelgate.demo").info("an info line of our own")
    for h in logging.getLogger().handlers:
        h.flush()
    written = path.read_text()
    for text in ("initdb: The files", "some deprecation", "BuildBackendWarning-like noise",
                 "creating a NEW", "an info line of our own"):
        assert text in written, text
    assert console.getvalue().strip() == "creating a NEW, empty embedded results database"
