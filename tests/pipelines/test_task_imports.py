"""What one evaluation DAG task process imports: the serial tasks' start-up cost.

Every task is a fresh interpreter (Airflow's task runner), so what its modules import at
the top is paid once per task: onnx alone takes 2-4 s here under load (``bench/RESULTS.md``,
per-task start-up). The scoring engine, the charts and the SHAP oracle load only in the
tasks that use them. Checked in one fresh interpreter, in order: first the modules the DAG
file imports at parse time and every task's wrapper (cheap: not even pandas or scipy), then
the step modules of the tasks that read only stored results (merge, metrics, fairness,
decide, report, store, gate, promote).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: What the DAG file and every task's wrapper import (dags/model_evaluation.py's own
#: imports, less Airflow; tasks.open_context; run_refs, which every task's _run_step uses).
WRAPPER = ("modelgate.config", "modelgate.input_limits", "modelgate.logsafe", "modelgate.pipelines.payloads",
           "modelgate.pipelines.steps", "modelgate.pipelines.evaluation.runner", "modelgate.pipelines.tasks",
           "modelgate.pipelines.context", "modelgate.pipelines.evaluation.run_refs",
           "modelgate.pipelines.evaluation.promote_step")
#: The step modules of the tasks that run no model (a stored result's class needs its module).
RESULT_STEPS = ("score_step", "metrics_step", "fairness_step", "gate_step", "report_step", "store_step")
#: Never loaded by those: the scoring engine, the charts, the SHAP oracle, scikit-learn.
SCORING_AND_CHARTS = ("onnx", "onnxruntime", "matplotlib", "shap", "sklearn")
#: Not loaded by the wrapper either: the data frames and statistics.
HEAVY = (*SCORING_AND_CHARTS, "pandas", "scipy", "pyarrow", "jinja2")

_SCRIPT = """
import importlib, json, sys
for m in {modules!r}:
    importlib.import_module(m)
print(json.dumps(sorted(n for n in {unwanted!r} if n in sys.modules)))
"""


def loaded_by(modules: tuple[str, ...], unwanted: tuple[str, ...]) -> list[str]:
    """Which of ``unwanted`` a fresh interpreter has loaded after importing ``modules``."""
    script = _SCRIPT.format(modules=modules, unwanted=unwanted)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_the_dag_file_and_the_task_wrapper_import_nothing_heavy() -> None:
    assert loaded_by(WRAPPER, HEAVY) == []


def test_the_reports_package_imports_nothing_heavy() -> None:
    """Its public names load on first use (issue #42 item 3): a task that imports the package for
    one view pays for no data frames, statistics, engine or charts."""
    assert loaded_by(("modelgate.reports",), HEAVY) == []


@pytest.mark.e2e  # pandas and scipy load: about 1-2 s of CPU, kept out of the fast tier
def test_the_tasks_that_run_no_model_import_no_scoring_engine_or_charts() -> None:
    steps = tuple(f"modelgate.pipelines.evaluation.{m}" for m in RESULT_STEPS)
    assert loaded_by(WRAPPER + steps, SCORING_AND_CHARTS) == []


def test_the_check_sees_an_eager_import() -> None:
    """The check can fail: a module importing another at its top is seen (a cheap standard
    library pair stands in for a step module and onnx)."""
    assert loaded_by(("email.mime.text",), ("email.charset", "tomllib")) == ["email.charset"]
