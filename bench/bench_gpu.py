"""CPU vs CUDA scoring for the three model shapes of issue #13; runs on the CPU alone too.

Models, trained here on generated data with scikit-learn and packaged like any model
(skl2onnx, ``modelgate.onnx.artifact.package``):

* ``wide-mlp``: 64 numeric + 4 categorical inputs, MLP (512, 512, 256);
* ``forest``: 32 numeric + 4 categorical inputs, RandomForest of 100 trees;
* ``small-mlp``: 8 numeric + 4 categorical inputs, MLP (16,), like the demo's.

Per model it prints the device ``auto`` picks and why, then for each provider present:
``score_parquet`` rows/s (parquet -> parquet, the default batch of that provider), a bare
``session.run`` over in-memory feeds at the same batch size (ONNX Runtime's own threads), their
ratio, and on CUDA the
max abs difference to the CPU's scores with TF32 off (the default) and allowed. Last, the
memory-limit case: 100k rows of ``wide-mlp`` through ``predict_proba`` with a 256 MiB CUDA
arena. Rows for a provider ONNX Runtime does not offer are printed as absent.

Run: ``.venv/bin/python -m bench.bench_gpu [--rows 1000000] [--repeats 2]`` (under 3 minutes
on a GPU machine with the defaults; ``--rows 20000 --train-rows 2000`` on a small CPU box).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from modelgate.onnx import devices
from modelgate.onnx.artifact import LoadedModel, package, verify
from modelgate.onnx.scoring import (
    DEFAULT_BATCH_ROWS,
    ModelScorer,
    ScoringError,
    ScoringRun,
    SessionSettings,
    open_session,
    score_parquet,
)

CUDA = "CUDAExecutionProvider"
CATEGORIES = np.array([f"level-{i}" for i in range(12)], dtype=object)
SHAPES = {  # name: (numeric inputs, categorical inputs, estimator)
    "wide-mlp": (64, 4, lambda: MLPClassifier((512, 512, 256), max_iter=3, random_state=0)),
    "forest": (32, 4, lambda: RandomForestClassifier(100, random_state=0, n_jobs=1)),
    "small-mlp": (8, 4, lambda: MLPClassifier((16,), max_iter=50, random_state=0)),
}


def _frame(n_num: int, n_cat: int, rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = {f"x{i}": rng.normal(size=rows).astype(np.float32) for i in range(n_num)}
    data |= {f"c{i}": pd.Categorical(CATEGORIES[rng.integers(0, len(CATEGORIES), rows)],
                                     categories=CATEGORIES) for i in range(n_cat)}
    return pd.DataFrame(data)


def _model(name: str, train_rows: int, tmp: Path) -> LoadedModel:
    n_num, n_cat, make = SHAPES[name]
    frame = _frame(n_num, n_cat, train_rows, seed=1)
    num, cat = [f"x{i}" for i in range(n_num)], [f"c{i}" for i in range(n_cat)]
    y = (frame[num[:4]].sum(axis=1) + (frame[cat[0]] == "level-3") > 0.5).astype(int)
    clf = make()
    pipe = Pipeline([("pre", ColumnTransformer([("num", StandardScaler(), num),
                                                ("cat", OneHotEncoder(handle_unknown="ignore"), cat)])),
                     ("clf", clf)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(frame.astype({c: object for c in cat}), y)
    types = ([(c, FloatTensorType([None, 1])) for c in num]
             + [(c, StringTensorType([None, 1])) for c in cat])
    onx = convert_sklearn(pipe, initial_types=types, options={id(clf): {"zipmap": False}},
                          target_opset={"": 17, "ai.onnx.ml": 3})
    src = tmp / name
    src.mkdir()
    (src / "model.onnx").write_bytes(onx.SerializeToString())
    opset = next(o.version for o in onx.opset_import if o.domain == "")
    (src / "manifest.json").write_text(json.dumps({
        "format_version": 1, "name": name, "version": "1", "opset": opset,
        "features": ([{"name": c, "kind": "numeric"} for c in num]
                     + [{"name": c, "kind": "categorical"} for c in cat]),
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1},
        "threshold": 0.5, "sensitive_features": [],
    }))
    return verify(package(src / "model.onnx", src / "manifest.json", src / "out"))


def _best(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (CUDA kernels, arena growth)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _bare(scorer: ModelScorer, frame: pd.DataFrame, batch: int) -> Callable[[], object]:
    feeds = scorer.feeds(frame)  # the very arrays score_parquet feeds, preloaded
    names = [scorer.manifest.output.name]

    def run() -> None:
        for i in range(0, len(frame), batch):
            scorer.session.run(names, {k: v[i:i + batch] for k, v in feeds.items()})

    return run


def _rows_for(name: str, model: LoadedModel, args: argparse.Namespace, tmp: Path) -> list[str]:
    n_num, n_cat, _ = SHAPES[name]
    frame = _frame(n_num, n_cat, args.rows, seed=2)
    data = tmp / f"{name}.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), data)
    auto = open_session(model, SessionSettings(provider="auto"))
    work = devices.graph_work(model.onnx_bytes)  # what `auto` weighs, whatever the machine
    lines = [f"| {name} | auto | {auto.provider} | {auto.provider_reason} (graph: "
             f"{work.cuda_lacking_share:.1%} of the work in operators CUDA lacks) | | | | | |"]
    scores: dict[str, np.ndarray] = {}
    for provider in ("cpu", "cuda"):
        if provider == "cuda" and CUDA not in ort.get_available_providers():
            lines.append(f"| {name} | cuda | absent (no CUDA provider here) | | | | | | |")
            continue
        scorer = open_session(model, SessionSettings(provider=provider))
        batch = DEFAULT_BATCH_ROWS[scorer.provider]

        def score(s: ModelScorer = scorer) -> ScoringRun:
            return score_parquet(s, data, tmp / "out.parquet")

        ours = args.rows / _best(score, args.repeats)
        # bare: one session with ONNX Runtime's own threads (on the CPU modelgate instead splits
        # a batch over single-threaded runs, one per core)
        plain = open_session(model, SessionSettings(provider=provider, parallel_runs=1))
        bare = args.rows / _best(_bare(plain, frame, batch), args.repeats)
        scores[provider] = scorer.predict_proba(frame)
        diff = ""
        if provider == "cuda":
            tf32 = open_session(model, SessionSettings(provider="cuda", allow_tf32=True))
            diff = (f"{np.abs(scores['cuda'] - scores['cpu']).max():.1e} "
                    f"(TF32 allowed: {np.abs(tf32.predict_proba(frame) - scores['cpu']).max():.1e})")
        lines.append(f"| {name} | {provider} | {scorer.provider} | {scorer.provider_reason} | "
                     f"{batch:,} | {ours:,.0f} | {bare:,.0f} | {ours / bare:.2f}x | {diff} |")
    return lines


def _memory_limit_case(model: LoadedModel) -> str:
    if CUDA not in ort.get_available_providers():
        return "memory-limit case (wide-mlp, 100k rows, 256 MiB arena): absent (no CUDA provider here)"
    scorer = open_session(model, SessionSettings(provider="cuda", gpu_mem_limit_mb=256))
    frame = _frame(64, 4, 100_000, seed=3)
    start = time.perf_counter()
    try:
        scorer.predict_proba(frame)
    except ScoringError as exc:
        return f"memory-limit case: FAILED: {exc}"
    slices = scorer.gpu_slices.rows if scorer.gpu_slices else None
    return (f"memory-limit case (wide-mlp, 100k rows, 256 MiB arena): ok in "
            f"{time.perf_counter() - start:.2f} s, {slices} rows per run after any halving")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--train-rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--models", default=",".join(SHAPES))
    args = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, providers {ort.get_available_providers()}, "
          f"rows={args.rows:,}, repeats={args.repeats} (best of)\n")
    print("| model | requested | ran on | why | batch rows | score_parquet rows/s | "
          "bare run rows/s | pipeline / bare | max abs(CUDA - CPU) |")
    print("|---|---|---|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        models = {name: _model(name, args.train_rows, tmp) for name in args.models.split(",")}
        for name, model in models.items():
            for line in _rows_for(name, model, args, tmp):
                print(line, flush=True)
        if "wide-mlp" in models:
            print("\n" + _memory_limit_case(models["wide-mlp"]))


if __name__ == "__main__":
    main()
