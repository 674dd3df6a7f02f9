"""modelgate's estimated performance side by side with NannyML's CBPE and DLE, timed per interval.

    bash bench/setup_peers.sh nannyml                  # once: NannyML in .venv-nannyml (pandas < 3)
    .venv/bin/python -m bench.bench_estimation_nannyml [--chunks 40] [--chunk-rows 5000] [--repeats 3]

Binary (CBPE), data seeded: the simulation of ``tests/drift/test_performance_estimation_sim.py``:
truth ``P(y | x) = sigmoid(2x)``, model score ``sigmoid(1.2x + 0.4)`` (miscalibrated), a 50,000-row
labelled reference, then ``--chunks`` analysis chunks of ``--chunk-rows`` rows, each with its own
covariate shift (``x ~ N(mu, sd)``, ``mu ~ U(-1, 1)``, ``sd ~ U(0.5, 1.5)``).

Regression (DLE), data seeded and generated (scikit-learn bundles no regression data set large
enough to chunk; its diabetes set has 442 rows): features ``x1, x2``, truth
``y = x1 + 0.5 x2 + (0.3 + 0.5 |x1|) eps`` with ``eps ~ N(0, 1)``, model prediction ``x1`` (it
ignores ``x2``, so its error is ``0.5 x2 + (0.3 + 0.5 |x1|) eps``). Reference: 50,000 rows with
``x1, x2 ~ N(0, 1)``. Two analysis runs of ``--chunks`` chunks, the concept unchanged:

* ``shift x1``: ``x1 ~ N(mu, sd)`` per chunk, ``x2 ~ N(0, 1)``: the shift moves the predictions
  and the error with them;
* ``shift x1 and x2``: ``x2`` shifted too (``N(mu2, sd2)`` likewise): part of the error change
  is invisible in the prediction; both nanny models (ours: additive cubic splines with linear
  tails, :mod:`modelgate.drift.additive_splines`; DLE: LightGBM) see ``x1``, ``x2`` and the
  prediction. Ours is also run with its former nanny (scikit-learn's histogram gradient boosting,
  ``fit_nanny_model(kind="trees")``) for comparison.

Both tools estimate every chunk without its labels; NannyML runs in its own virtualenv (it pins
pandas < 3) with ``chunk_size`` equal to the chunk size and is fitted on the same reference.
Printed: agreement (mean absolute difference of the estimates), tracking of the realised metric
(from the hidden labels: mean absolute error of each estimate and its correlation over chunks),
the share of chunks whose realised metric lies in each interval and the mean interval width
(NannyML's interval: estimate +/- 3 sampling errors; ours 95 %), and timings.

Timing, like for like: each tool gets one chunk's rows as a pandas DataFrame and returns the whole
estimate of every metric with its interval. Ours is called as the drift pipeline's ``_estimate``
(``modelgate/pipelines/drift/estimation.py``) calls it: ``estimate_binary`` or
``estimate_regression`` on the chunk's score column (regression: the nanny error model, given the
chunk's feature columns), then ``to_record``; NannyML's is ``CBPE.estimate`` / ``DLE.estimate`` on
the chunk's frame (one chunk). Per chunk the best of ``--repeats`` passes is kept (wall and CPU
time, ``time.perf_counter`` / ``time.process_time``, the process's CPU over all its threads);
NannyML's single ``estimate`` call over all chunks (divided by the chunk count) and each tool's
fit on the reference (once per reference) are shown separately. Timings are measured inside each
process, after imports and reading the parquet.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
NANNYML = ROOT / ".venv-nannyml" / "bin" / "python"
METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1")
REG_METRICS = ("mae", "rmse")
REG_FEATURES = ("x1", "x2")
CONFIDENCE = 0.95  # modelgate.pipelines.drift.estimation.CONFIDENCE
SCENARIOS = ("shift x1", "shift x1 and x2")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def generate(chunks: int, chunk_rows: int) -> tuple[Path, Path]:
    import pandas as pd

    rng = np.random.default_rng(7)

    def draw(n: int, mu: float, sd: float) -> pd.DataFrame:
        x = rng.normal(mu, sd, n)
        s = _sigmoid(1.2 * x + 0.4)
        return pd.DataFrame({"y_pred_proba": s, "y_pred": (s >= 0.5).astype(int),
                             "y_true": (rng.uniform(size=n) < _sigmoid(2 * x)).astype(int)})

    OUT.mkdir(parents=True, exist_ok=True)
    ref, cur = OUT / "estimation_ref.parquet", OUT / "estimation_cur.parquet"
    draw(50_000, 0.0, 1.0).to_parquet(ref)
    parts = [draw(chunk_rows, mu, sd) for mu, sd in zip(rng.uniform(-1, 1, chunks),
                                                       rng.uniform(0.5, 1.5, chunks), strict=True)]
    pd.concat(parts, ignore_index=True).to_parquet(cur)
    return ref, cur


def generate_regression(chunks: int, chunk_rows: int) -> tuple[Path, list[Path]]:
    """The regression reference and one analysis file per scenario (see the module docstring)."""
    import pandas as pd

    rng = np.random.default_rng(11)

    def draw(n: int, mu1: float, sd1: float, mu2: float, sd2: float) -> pd.DataFrame:
        x1, x2 = rng.normal(mu1, sd1, n), rng.normal(mu2, sd2, n)
        y = x1 + 0.5 * x2 + (0.3 + 0.5 * np.abs(x1)) * rng.normal(size=n)
        return pd.DataFrame({"x1": x1, "x2": x2, "y_pred": x1, "y_true": y})

    OUT.mkdir(parents=True, exist_ok=True)
    ref = OUT / "estimation_reg_ref.parquet"
    draw(50_000, 0.0, 1.0, 0.0, 1.0).to_parquet(ref)
    paths = []
    for k, shift_x2 in enumerate((False, True)):
        mu1, sd1 = rng.uniform(-1, 1, chunks), rng.uniform(0.5, 1.5, chunks)
        mu2, sd2 = rng.uniform(-1, 1, chunks), rng.uniform(0.5, 1.5, chunks)
        parts = [draw(chunk_rows, mu1[i], sd1[i], mu2[i] if shift_x2 else 0.0,
                      sd2[i] if shift_x2 else 1.0) for i in range(chunks)]
        path = OUT / f"estimation_reg_cur_{k}.parquet"
        pd.concat(parts, ignore_index=True).to_parquet(path)
        paths.append(path)
    return ref, paths


def realised(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

    yhat = (s >= 0.5).astype(int)
    return {"roc_auc": roc_auc_score(y, s), "accuracy": accuracy_score(y, yhat),
            "precision": precision_score(y, yhat), "recall": recall_score(y, yhat),
            "f1": f1_score(y, yhat)}


def realised_regression(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    err = y - pred
    return {"mae": float(np.mean(np.abs(err))), "rmse": float(np.sqrt(np.mean(err * err)))}


def _chunks(frame: Any, chunk_rows: int) -> list[Any]:
    """The frame's chunks as separate DataFrames (copies, made before any timing)."""
    return [frame.iloc[i:i + chunk_rows].reset_index(drop=True)
            for i in range(0, len(frame), chunk_rows)]


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """``fn(*args)``, its wall seconds and its CPU seconds (this process, all threads)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def per_chunk(estimate: Callable[[Any], Any], chunks: list[Any],
              repeats: int) -> tuple[list[Any], list[list[float]]]:
    """Each chunk's result and its best wall and best CPU time over ``repeats`` passes."""
    estimate(chunks[0])  # warm-up: lazy imports and first-call caches
    results: list[Any] = [None] * len(chunks)
    best = [[np.inf, np.inf] for _ in chunks]
    for _ in range(repeats):
        for i, chunk in enumerate(chunks):
            results[i], wall, cpu = timed(estimate, chunk)
            best[i] = [min(best[i][0], wall), min(best[i][1], cpu)]
    return results, best


def ours(ref_path: Path, cur_path: Path, chunk_rows: int, repeats: int) -> dict[str, Any]:
    """Our binary estimate per chunk, as the drift pipeline's ``_estimate`` makes it."""
    import pandas as pd
    from modelgate.drift.performance_estimation import estimate_binary, fit_isotonic

    ref, cur = pd.read_parquet(ref_path), pd.read_parquet(cur_path)
    cal, fit_wall, fit_cpu = timed(lambda: fit_isotonic(ref["y_pred_proba"].to_numpy(np.float64),
                                                        ref["y_true"].to_numpy()))

    def estimate(chunk: pd.DataFrame) -> dict[str, dict[str, Any]]:
        est = estimate_binary(cal, chunk["y_pred_proba"].to_numpy(np.float64), threshold=0.5,
                              confidence=CONFIDENCE)
        return {m.metric: m.to_record() for m in est.metrics}

    results, times = per_chunk(estimate, _chunks(cur.drop(columns=["y_true"]), chunk_rows), repeats)
    return {"fit": [fit_wall, fit_cpu], "times": times,
            "chunks": [{m: [r[m]["estimate"], r[m]["lower"], r[m]["upper"]] for m in METRICS}
                       for r in results]}


def ours_regression(ref_path: Path, cur_path: Path, chunk_rows: int, repeats: int,
                    kind: str = "spline") -> dict[str, Any]:
    """Our regression estimate per chunk: the nanny error model on ``x1``, ``x2`` and the
    prediction (``kind``: the additive spline model, or the former gradient-boosted trees)."""
    import pandas as pd
    from modelgate.drift.regression_estimation import estimate_regression, fit_nanny_model

    ref, cur = pd.read_parquet(ref_path), pd.read_parquet(cur_path)
    model, fit_wall, fit_cpu = timed(lambda: fit_nanny_model(
        ref[list(REG_FEATURES)], ref["y_pred"].to_numpy(np.float64),
        ref["y_true"].to_numpy(np.float64), kind=kind))

    def estimate(chunk: pd.DataFrame) -> dict[str, dict[str, Any]]:
        r = estimate_regression(model, chunk["y_pred"].to_numpy(np.float64),
                                features=chunk[list(REG_FEATURES)],
                                confidence=CONFIDENCE).to_record()
        return {m: {"estimate": r[m], "standard_error": r[f"{m}_standard_error"],
                    "lower": r[f"{m}_lower"], "upper": r[f"{m}_upper"]} for m in REG_METRICS}

    results, times = per_chunk(estimate, _chunks(cur.drop(columns=["y_true"]), chunk_rows), repeats)
    return {"fit": [fit_wall, fit_cpu], "times": times,
            "chunks": [{m: [r[m]["estimate"], r[m]["lower"], r[m]["upper"]] for m in REG_METRICS}
                       for r in results]}


def _nannyml_run(estimator: Any, ref: Any, cur: Any, metrics: tuple[str, ...], chunk_rows: int,
                 repeats: int) -> dict[str, Any]:
    """Fit NannyML's estimator on ``ref``; time its ``estimate`` per chunk and in one call."""
    _, fit_wall, fit_cpu = timed(estimator.fit, ref)
    analysis = cur.drop(columns=["y_true"])

    def rows(result: Any) -> list[dict[str, list[float]]]:
        df = result.filter(period="analysis").to_df()
        return [{m: [float(df[(m, "value")].iloc[i]),
                     float(df[(m, "lower_confidence_boundary")].iloc[i]),
                     float(df[(m, "upper_confidence_boundary")].iloc[i])] for m in metrics}
                for i in range(len(df))]

    whole, one_wall, one_cpu = timed(estimator.estimate, analysis)
    results, times = per_chunk(estimator.estimate, _chunks(analysis, chunk_rows), repeats)
    separate = [rows(r) for r in results]
    if any(len(s) != 1 for s in separate):
        raise RuntimeError("NannyML made other than one chunk of a chunk-sized frame")
    return {"fit": [fit_wall, fit_cpu], "one_call": [one_wall, one_cpu], "times": times,
            "chunks": rows(whole), "separate": [s[0] for s in separate]}


def worker_nannyml(ref_path: Path, cur_path: Path, reg_ref: Path, reg_curs: list[Path],
                   chunk_rows: int, repeats: int, result: Path) -> None:
    """NannyML's side, written to ``result`` as JSON (LightGBM prints to stdout).

    NannyML's usage analytics (an upload attempt per fit/estimate) is switched off by its own
    environment variable: it is no part of the estimate and, without network here, it retries.
    """
    import os
    import warnings

    os.environ["NML_DISABLE_USAGE_LOGGING"] = "1"
    warnings.filterwarnings("ignore", message="The resulting number of chunks is too low")
    import nannyml as nml
    import pandas as pd

    cbpe = nml.CBPE(y_pred_proba="y_pred_proba", y_pred="y_pred", y_true="y_true",
                    metrics=list(METRICS), chunk_size=chunk_rows, problem_type="classification_binary")
    out: dict[str, Any] = {"nannyml": nml.__version__, "cbpe": _nannyml_run(
        cbpe, pd.read_parquet(ref_path), pd.read_parquet(cur_path), METRICS, chunk_rows, repeats)}
    ref = pd.read_parquet(reg_ref)
    out["dle"] = []
    for path in reg_curs:
        dle = nml.DLE(feature_column_names=["x1", "x2"], y_pred="y_pred", y_true="y_true",
                      metrics=list(REG_METRICS), chunk_size=chunk_rows)
        out["dle"].append(_nannyml_run(dle, ref, pd.read_parquet(path), REG_METRICS, chunk_rows,
                                       repeats))
    result.write_text(json.dumps(out))


def _ms(values: list[list[float]], k: int) -> float:
    return 1e3 * float(np.median([v[k] for v in values]))


def timing_rows(label: str, mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Markdown rows: per-chunk medians (best of repeats), the ratio, and fit times."""
    n = len(mine["times"])
    ratio_wall = _ms(theirs["times"], 0) / _ms(mine["times"], 0)
    ratio_cpu = _ms(theirs["times"], 1) / _ms(mine["times"], 1)
    one = theirs["one_call"]
    return [
        f"| {label} | modelgate | {_ms(mine['times'], 0):.3f} | {_ms(mine['times'], 1):.3f} | "
        f"| {mine['fit'][0]:.3f} / {mine['fit'][1]:.3f} |",
        f"| {label} | NannyML | {_ms(theirs['times'], 0):.1f} | {_ms(theirs['times'], 1):.1f} | "
        f"{1e3 * one[0] / n:.1f} / {1e3 * one[1] / n:.1f} | {theirs['fit'][0]:.3f} / "
        f"{theirs['fit'][1]:.3f} |",
        f"| {label} | NannyML / modelgate | {ratio_wall:.1f}x | {ratio_cpu:.1f}x | | |"]


def quality_rows(label: str, metrics: tuple[str, ...], mine: dict[str, Any],
                 theirs: dict[str, Any], truth: list[dict[str, float]]) -> list[str]:
    """Markdown rows: agreement, tracking of the realised metric, coverage and width."""
    out = []
    for m in metrics:
        a = np.array([c[m] for c in mine["chunks"]])
        b = np.array([c[m] for c in theirs["chunks"]])
        r = np.array([t[m] for t in truth])
        cells = []
        for x in (a, b):
            cov = float(np.mean((x[:, 1] <= r) & (r <= x[:, 2])))
            cells.append(f"{np.mean(np.abs(x[:, 0] - r)):.4f} | {np.corrcoef(x[:, 0], r)[0, 1]:.3f} | "
                         f"{cov:.3f} | {np.mean(x[:, 2] - x[:, 1]):.4f}")
        out.append(f"| {label} | {m} | {np.mean(np.abs(a[:, 0] - b[:, 0])):.1e} | {cells[0]} | "
                   f"{cells[1]} |")
    return out


def end_bin_note(label: str, ref_pred: np.ndarray, frame: Any, mine: dict[str, Any],
                 truth: list[dict[str, float]], rows: int) -> str:
    """Our MAE interval's coverage split by the chunk's share of rows in the prediction's tails.

    The tails are predictions below the reference's 5 % or above its 95 % quantile, where the
    reference is thin and beyond which trees cannot extrapolate (and where the former binned
    model's open-ended end bins biased it); a chunk with many rows there is where to look.
    """
    lo, hi = np.quantile(ref_pred, [0.05, 0.95])
    pred = frame["y_pred"].to_numpy()
    share = np.array([np.mean((pred[i:i + rows] < lo) | (pred[i:i + rows] > hi))
                      for i in range(0, len(pred), rows)])
    est = np.array([c["mae"] for c in mine["chunks"]])
    r = np.array([t["mae"] for t in truth])
    covered, bias = (est[:, 1] <= r) & (r <= est[:, 2]), est[:, 0] - r
    few = share <= np.median(share)
    return (f"{label}: ours, MAE, chunks with at most the median share ({np.median(share):.3f}) of "
            f"rows in the tails: covered {covered[few].mean():.3f}, mean(estimate - realised) "
            f"{bias[few].mean():+.4f}; the other chunks: covered {covered[~few].mean():.3f}, "
            f"{bias[~few].mean():+.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--chunk-rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3, help="passes per chunk; the best is kept")
    parser.add_argument("--worker", choices=("nannyml",))
    parser.add_argument("--ref", type=Path)
    parser.add_argument("--cur", type=Path)
    parser.add_argument("--reg-ref", type=Path)
    parser.add_argument("--reg-cur", type=Path, action="append")
    parser.add_argument("--result", type=Path)
    args = parser.parse_args()
    if args.worker:
        worker_nannyml(args.ref, args.cur, args.reg_ref, args.reg_cur, args.chunk_rows, args.repeats,
                       args.result)
        return
    if not NANNYML.exists():
        sys.exit(f"{NANNYML} missing: run bash bench/setup_peers.sh nannyml")
    ref_path, cur_path = generate(args.chunks, args.chunk_rows)
    reg_ref, reg_curs = generate_regression(args.chunks, args.chunk_rows)
    mine = ours(ref_path, cur_path, args.chunk_rows, args.repeats)
    mine_reg = [ours_regression(reg_ref, p, args.chunk_rows, args.repeats) for p in reg_curs]
    trees = [ours_regression(reg_ref, p, args.chunk_rows, args.repeats, "trees") for p in reg_curs]
    result = OUT / "estimation_nannyml.json"
    subprocess.run([str(NANNYML), str(Path(__file__).resolve()), "--worker", "nannyml",
                    "--ref", str(ref_path), "--cur", str(cur_path), "--reg-ref", str(reg_ref),
                    *[a for p in reg_curs for a in ("--reg-cur", str(p))],
                    "--chunk-rows", str(args.chunk_rows), "--repeats", str(args.repeats),
                    "--result", str(result)], stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
    theirs = json.loads(result.read_text())
    import pandas as pd

    cur = pd.read_parquet(cur_path)
    rows = args.chunk_rows
    truth = [realised(cur["y_true"].to_numpy()[i:i + rows], cur["y_pred_proba"].to_numpy()[i:i + rows])
             for i in range(0, len(cur), rows)]
    cbpe = theirs["cbpe"]
    print(f"NannyML {theirs['nannyml']}; {len(truth)} chunks of {rows:,} rows; "
          f"best of {args.repeats} passes per chunk\n")
    print("Binary (CBPE). Columns per tool: mean abs(estimate - realised) | corr(estimate, "
          "realised) | covered | mean width\n")
    print("| data | metric | mean abs(ours - NannyML) | ours: abs err | ours: corr | ours: covered "
          "| ours: width | NannyML: abs err | NannyML: corr | NannyML: covered | NannyML: width |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(quality_rows("binary", METRICS, mine, cbpe, truth)))
    sep = max(abs(x - y) for c, s in zip(cbpe["chunks"], cbpe["separate"], strict=True)
              for m in METRICS for x, y in zip(c[m], s[m], strict=True))
    print(f"\nNannyML per-chunk calls vs its one call: max abs difference {sep:.1e}\n")
    print("Regression (DLE)\n")
    print("| data | metric | mean abs(ours - DLE) | ours: abs err | ours: corr | ours: covered "
          "| ours: width | DLE: abs err | DLE: corr | DLE: covered | DLE: width |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")
    reg_ref_pred, notes = pd.read_parquet(reg_ref)["y_pred"].to_numpy(), []
    for label, path, m_reg, tr_reg, t_reg in zip(SCENARIOS, reg_curs, mine_reg, trees, theirs["dle"],
                                                 strict=True):
        frame = pd.read_parquet(path)
        truth_reg = [realised_regression(frame["y_true"].to_numpy()[i:i + rows],
                                         frame["y_pred"].to_numpy()[i:i + rows])
                     for i in range(0, len(frame), rows)]
        print("\n".join(quality_rows(label, REG_METRICS, m_reg, t_reg, truth_reg)))
        print("\n".join(quality_rows(f"{label}, ours: former trees", REG_METRICS, tr_reg, t_reg,
                                     truth_reg)))
        notes.append(end_bin_note(label, reg_ref_pred, frame, m_reg, truth_reg, rows))
    print("\n" + "\n".join(notes))
    print("\nTimes per chunk: median over chunks of the best of the passes, ms (wall | CPU); "
          "NannyML's one call over all chunks divided by the chunks, ms (wall / CPU); fit, s "
          "(wall / CPU)\n")
    print("| estimator | tool | per chunk wall ms | per chunk CPU ms | one call per chunk ms "
          "| fit s |\n|---|---|---|---|---|---|")
    print("\n".join(timing_rows("CBPE, binary", mine, cbpe)))
    for label, m_reg, tr_reg, t_reg in zip(SCENARIOS, mine_reg, trees, theirs["dle"], strict=True):
        print("\n".join(timing_rows(f"DLE, {label}", m_reg, t_reg)))
        print("\n".join(timing_rows(f"DLE, {label}, ours: former trees", tr_reg, t_reg)))


if __name__ == "__main__":
    main()
