"""An installed wheel finds its policies, DAG files, migrations and report templates the same
way a checkout does (``modelgate.resources.shipped_dir``, Jinja2's ``PackageLoader``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json
from modelgate.resources import shipped_dir
from modelgate.reports.html import _environment
print(json.dumps({
    "dirs": {n: str(shipped_dir(n)) for n in ("sql/migrations", "policies", "dags")},
    "template": _environment().get_template("evaluation.html.j2").filename,
}))
"""


@pytest.mark.e2e
def test_a_wheel_ships_and_finds_its_data(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--verbose", "--no-deps",
                            "-w", str(tmp_path / "dist"), str(REPO)], check=True, capture_output=True,
                           text=True, timeout=600)
    # every shipped folder is named in `packages`: setuptools' warning about a data folder it
    # sees as an unlisted package used to bury the top of `make demo` (#23)
    backend_output = built.stdout + built.stderr
    assert "absent from the `packages` configuration" not in backend_output, backend_output[-3000:]
    assert "BuildBackendWarning" not in backend_output, backend_output[-3000:]
    (wheel,) = (tmp_path / "dist").glob("modelgate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in ("modelgate/policies/gss-high-income.yaml", "modelgate/dags/model_evaluation.py",
                    "modelgate/dags/drift_monitoring.py", "modelgate/reports/templates/base.html.j2",
                    "modelgate/reports/templates/report.css", "modelgate/reports/templates/sortable.js",
                    "modelgate/sql/migrations/0001_model_and_evaluation.sql"):
        assert shipped in names, shipped
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, timeout=600)
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for name, folder in found["dirs"].items():
        assert Path(folder).is_relative_to(site), (name, folder)
    assert Path(found["template"]).is_relative_to(site)
