"""Hostile names and values flow through the whole evaluation as plain data.

A tiny scikit-learn model whose categorical input is literally named
``<script>alert(1)</script>``, whose numeric input and categories carry SQL, and whose
sensitive feature takes SQL and HTML as group values, is packaged, registered and
evaluated for real. The tables must be intact, the strings stored verbatim, the HTML
report must show them escaped, and no log line or error may carry a credential.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import traceback
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pandas as pd
import psycopg2
import pytest

from modelgate import reports
from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import S3Settings, Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.context import Context
from modelgate.store.db import connect, transaction
from modelgate.store.objects import ObjectStoreError, S3ObjectStore

SQL = "'; DROP TABLE model_version; --"
SCRIPT = "<script>alert(1)</script>"
NUMERIC = "x'; DELETE FROM evaluation_run; --"
CATEGORICAL = SCRIPT  # the column itself is named like a script tag
CATEGORIES = (SQL, SCRIPT, "plain", 'quote"s & <b>amps</b>')
SEGMENT = "segment\"; DROP TABLE fairness_group; --"
SEGMENTS = (SQL, "<img src=x onerror=alert(2)>", "Robert'); DROP TABLE evaluation_run;--")
MODEL_NAME = "inj'; DROP TABLE model_version; --"
S3_SECRET = "S3cr3t-never-log-4b1d9c"
DB_PASSWORD = "Pg-pa55-never-log-77e1"


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.normal(size=n)
    cat = rng.choice(np.array(CATEGORIES, dtype=object), size=n)
    logit = 1.5 * x + np.where(cat == "plain", 1.0, 0.0) - np.where(cat == SQL, 0.5, 0.0)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return pd.DataFrame({NUMERIC: x, CATEGORICAL: cat, SEGMENT: rng.choice(SEGMENTS, size=n),
                         "y": y})


def _rename_inputs(onx: Any, raw: list[str]) -> None:
    """skl2onnx sanitises input names; give the graph inputs the raw column names back."""
    names = {graph_input.name: name for graph_input, name in zip(onx.graph.input, raw, strict=True)}
    for graph_input in onx.graph.input:
        graph_input.name = names.get(graph_input.name, graph_input.name)
    for node in onx.graph.node:
        for i, name in enumerate(node.input):
            node.input[i] = names.get(name, name)


def _build(out: Path) -> tuple[Path, Path]:
    import onnx
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(20261129)
    train, heldout = _frame(rng, 600), _frame(rng, 600)
    clf = LogisticRegression()
    pre = ColumnTransformer([("num", StandardScaler(), [NUMERIC]),
                             ("cat", OneHotEncoder(handle_unknown="ignore"), [CATEGORICAL])])
    pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(train[[NUMERIC, CATEGORICAL]], train["y"])
    onx = convert_sklearn(pipe, initial_types=[(NUMERIC, FloatTensorType([None, 1])),
                                               (CATEGORICAL, StringTensorType([None, 1]))],
                          options={id(clf): {"zipmap": False}},
                          target_opset={"": 17, "ai.onnx.ml": 3})
    assert [i.name for i in onx.graph.input] != [NUMERIC, CATEGORICAL]  # really sanitised
    _rename_inputs(onx, [NUMERIC, CATEGORICAL])
    onnx.checker.check_model(onx)
    (out / "model.onnx").write_bytes(onx.SerializeToString())
    opset = next(o.version for o in onx.opset_import if o.domain in ("", "ai.onnx"))
    (out / "manifest.json").write_text(json.dumps({
        "format_version": 1, "name": MODEL_NAME, "version": "1", "opset": opset,
        "features": [{"name": NUMERIC, "kind": "numeric"},
                     {"name": CATEGORICAL, "kind": "categorical"}],
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1}, "threshold": 0.5,
        "sensitive_features": [CATEGORICAL, SEGMENT], "description": f"{SCRIPT} {SQL}",
    }))
    heldout.to_parquet(out / "heldout.parquet", index=False)
    return package(out / "model.onnx", out / "manifest.json", out / "model"), out / "heldout.parquet"


def _with_password(url: str) -> tuple[str, str]:
    """The URL with a password (the test server trusts local connections and ignores it),
    and the password to look for; a password already in the URL is kept."""
    parts = urlsplit(url)
    if parts.password:
        return url, parts.password
    user = parts.username or "postgres"
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:{DB_PASSWORD}@{host}")), DB_PASSWORD


def _fetch(url: str, sql: str) -> list[tuple[Any, ...]]:
    with transaction(url) as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _secrets_absent(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


def test_hostile_names_are_stored_verbatim_and_escaped_in_the_report(
    settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    archive, data = _build(tmp_path)
    url, password = _with_password(str(settings_env.database_url))
    monkeypatch.setenv("MODELGATE_DATABASE_URL", url)
    monkeypatch.setenv("MODELGATE_S3_SECRET_KEY", S3_SECRET)  # moto accepts any secret
    caplog.set_level(logging.DEBUG)
    outcome = run_evaluation_locally(archive, data, None)

    plain = str(settings_env.database_url)
    # the default policy blocks an equalized-odds gap above 0.03; the model uses the
    # categorical input, whose gap is 0.39 on these rows (fairlearn on the scikit-learn
    # pipeline's predictions at 0.5; the segment's, random, is 0.12)
    assert outcome.payload["status"] == "blocked"
    assert outcome.payload["rows_scored"] == 600
    # the tables are intact and hold exactly one model and one run
    tables = {t for (t,) in _fetch(plain, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"model_version", "evaluation_run", "fairness_group", "shap_importance"} <= tables
    assert _fetch(plain, "SELECT model_name, version FROM model_version") == [(MODEL_NAME, "1")]
    assert _fetch(plain, "SELECT count(*) FROM evaluation_run") == [(1,)]
    # the strings are stored verbatim
    groups = _fetch(plain, "SELECT sensitive_feature, group_label, n FROM fairness_group")
    assert {g for f, g, _ in groups if f == CATEGORICAL} == set(CATEGORIES)
    assert {g for f, g, _ in groups if f == SEGMENT} == set(SEGMENTS)
    frame = pd.read_parquet(data)
    for feature in (CATEGORICAL, SEGMENT):
        assert {g: n for f, g, n in groups if f == feature} == frame[feature].value_counts().to_dict()
    features = {f for (f,) in _fetch(plain, "SELECT feature FROM shap_importance")}
    assert features == {NUMERIC, CATEGORICAL}
    assert _fetch(plain, "SELECT DISTINCT sensitive_feature FROM fairness_metric "
                         "ORDER BY 1") == sorted([(CATEGORICAL,), (SEGMENT,)])
    # the report shows them escaped and never raw
    ctx = Context.open(settings_env)
    (report_key,) = _fetch(plain, "SELECT report_key FROM evaluation_run")[0]
    html = ctx.store.get_bytes(report_key).decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # the one script is the report's own table sorter, allowed by its hash; no name adds one
    sorter = (Path(reports.__file__).parent / "templates" / "sortable.js").read_text()
    assert html.lower().count("<script") == 1 and f"<script>{sorter}</script>" in html
    digest = base64.b64encode(hashlib.sha256(sorter.encode()).digest()).decode()
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert f"script-src 'sha256-{digest}'" in unescape(policy)
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "DROP TABLE model_version; --" in html  # quotes escaped, text kept
    # no credential in any log line of the run, nor in what the command prints
    assert any(r.name.startswith("modelgate.") for r in caplog.records)
    for record in caplog.records:
        _secrets_absent(record.getMessage(), S3_SECRET, password)
    _secrets_absent(outcome.text + json.dumps(outcome.payload, default=str), S3_SECRET, password)


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def refusing_port() -> Iterator[int]:
    """A loopback TCP port that refuses every connection at once for the whole test: bound
    but never listening, so nothing else can take it and no timeout is involved."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def test_unreachable_object_store_errors_do_not_carry_the_secret(
    refusing_port: int, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    endpoint = f"127.0.0.1:{refusing_port}"
    store = S3ObjectStore(S3Settings(endpoint=endpoint, access_key="ak", secret_key=S3_SECRET,
                                     bucket="mg-secret-test"))
    with pytest.raises(ObjectStoreError) as caught:
        store.put_bytes("a/b.txt", b"x", content_type="text/plain")
    assert f"object store at {endpoint}" in str(caught.value)
    _secrets_absent("".join(traceback.format_exception(caught.value)), S3_SECRET)
    _secrets_absent(repr(store.settings) + caplog.text, S3_SECRET)


@pytest.fixture()
def strict_s3() -> Any:
    """A private moto S3 server that checks credentials (the shared one accepts any)."""
    import os
    import socket
    import subprocess
    import time

    binary = Path(os.environ.get("MODELGATE_TEST_MOTO_SERVER")
                  or Path(__file__).resolve().parents[2] / ".venv-moto" / "bin" / "moto_server")
    port = _closed_port()
    proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(port)],
                            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_rejected_credentials_do_not_carry_the_secret(
    strict_s3: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    store = S3ObjectStore(S3Settings(endpoint=strict_s3, access_key="AKIDNOTAUSER0000",
                                     secret_key=S3_SECRET, bucket="mg-secret-test"))
    with pytest.raises(ObjectStoreError) as caught:
        store.put_bytes("a/b.txt", b"x", content_type="text/plain")
    message = str(caught.value)
    assert f"object store at {strict_s3} could not reach bucket 'mg-secret-test'" in message
    assert "S3Error" in message and "AccessDenied" in message  # refused, not unreachable
    _secrets_absent("".join(traceback.format_exception(caught.value)) + caplog.text, S3_SECRET)


def test_evaluation_with_an_unreachable_store_keeps_the_secret_out(
    settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture, refusing_port: int,
) -> None:
    archive, data = _build(tmp_path)
    monkeypatch.setenv("MODELGATE_S3_ENDPOINT", f"127.0.0.1:{refusing_port}")
    monkeypatch.setenv("MODELGATE_S3_SECRET_KEY", S3_SECRET)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ObjectStoreError) as caught:
        run_evaluation_locally(archive, data, None)
    _secrets_absent("".join(traceback.format_exception(caught.value)) + caplog.text, S3_SECRET)
    # nothing was registered: the archive never reached the store
    assert _fetch(str(settings_env.database_url), "SELECT count(*) FROM model_version") == [(0,)]


def test_database_errors_do_not_carry_the_password(
    refusing_port: int, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"postgresql://writer:{DB_PASSWORD}@127.0.0.1:{refusing_port}/modelgate"
    with pytest.raises(psycopg2.OperationalError) as caught:
        connect(url)
    _secrets_absent("".join(traceback.format_exception(caught.value)) + caplog.text, DB_PASSWORD)
