"""ADWIN wrapper against river's own ADWIN run element by element."""

import numpy as np
import pytest
from modelgate.drift.adwin import AdwinDetector
from river.drift import ADWIN


def _river_run(xs: np.ndarray, **params: float) -> list[tuple[int, int, float]]:
    """(index, window width, window mean) at each detection, river used directly."""
    det = ADWIN(**params)
    hits = []
    for i, x in enumerate(xs.tolist()):
        det.update(x)
        if det.drift_detected:
            hits.append((i, det.width, det.estimation))
    return hits


def _stream(kind: str) -> np.ndarray:
    rng = np.random.default_rng(99)
    if kind == "steps":
        return np.concatenate([rng.random(3000) < p for p in (0.05, 0.3, 0.1, 0.6, 0.2)]).astype(
            float
        )
    if kind == "stationary":
        return (rng.random(20_000) < 0.2).astype(float)
    if kind == "real-valued":
        return np.abs(np.r_[rng.normal(0, 1, 4000), rng.normal(0, 3, 4000)])
    if kind == "back-to-back":  # detections close together exercise the reset path
        return np.tile(np.r_[np.zeros(60), np.ones(60)], 40)
    raise AssertionError(kind)


STREAMS = ["steps", "stationary", "real-valued", "back-to-back"]
PARAMS = [{}, {"delta": 0.1, "clock": 8, "grace_period": 20}]


@pytest.mark.parametrize("params", PARAMS, ids=["default", "sensitive"])
@pytest.mark.parametrize("kind", STREAMS, ids=STREAMS)
def test_change_points_equal_river(kind: str, params: dict) -> None:
    xs = _stream(kind)
    expected = _river_run(xs, **params)
    got = AdwinDetector(**params).update_many(xs)
    assert [c.position for c in got] == [e[0] for e in expected]
    assert [c.n_after for c in got] == [e[1] for e in expected]
    for c, e in zip(got, expected, strict=True):
        assert c.error_rate_after == pytest.approx(e[2], rel=1e-12)


@pytest.mark.parametrize("kind", STREAMS, ids=STREAMS)
def test_before_and_after_rates_are_means_of_the_two_sub_windows(kind: str) -> None:
    xs = _stream(kind)
    points = AdwinDetector(delta=0.1, clock=8).update_many(xs)
    window_start = 0  # river empties the window on the update after each detection
    for c in points:
        cut = c.position + 1 - c.n_after
        assert c.n_before == cut - window_start
        assert c.error_rate_before == pytest.approx(xs[window_start:cut].mean(), rel=1e-9)
        assert c.error_rate_after == pytest.approx(xs[cut : c.position + 1].mean(), rel=1e-9)
        window_start = c.position + 1


def test_golden_index() -> None:
    rng = np.random.default_rng(2024)
    xs = np.r_[rng.random(1000) < 0.1, rng.random(1000) < 0.4].astype(float)
    # Index found by river.drift.ADWIN() (river 0.26) run element by element on this stream.
    assert [c.position for c in AdwinDetector().update_many(xs)] == [1087]


def test_scalar_update_matches_update_many() -> None:
    xs = _stream("steps")
    det = AdwinDetector()
    flags = [det.update(x) for x in xs.tolist()]
    assert [i for i, f in enumerate(flags) if f] == [
        c.position for c in AdwinDetector().update_many(xs)
    ]
    assert det.n_seen == xs.size


def test_change_across_three_runs_needs_persisted_state() -> None:
    rng = np.random.default_rng(0)
    # Error rate creeps up 0.10 -> 0.20 -> 0.30 over three runs of 400 errors each.
    chunks = [(rng.random(400) < p).astype(float) for p in (0.10, 0.20, 0.30)]
    state = AdwinDetector().to_bytes()
    persisted = []
    for chunk in chunks:
        det = AdwinDetector.from_bytes(state)
        persisted += det.update_many(chunk)
        state = det.to_bytes()
    fresh = [
        AdwinDetector().update_many(chunk, start_position=400 * i) for i, chunk in enumerate(chunks)
    ]
    xs = np.concatenate(chunks)
    assert [c.position for c in persisted] == [e[0] for e in _river_run(xs)]
    assert len(persisted) == 1 and 800 <= persisted[0].position < 1200
    assert persisted[0].error_rate_after > persisted[0].error_rate_before
    # no reset before the detection: the dropped sub-window starts at the stream's start, so
    # the window carried over from the earlier runs counts in its length and rate
    c = persisted[0]
    cut = c.position + 1 - c.n_after
    assert (c.n_before, c.n_after) == (cut, _river_run(xs)[0][1])
    assert c.error_rate_before == pytest.approx(xs[:cut].mean(), rel=1e-12)
    assert fresh == [(), (), ()]


def test_detection_at_end_of_run_is_persisted() -> None:
    xs = _stream("steps")
    first = AdwinDetector().update_many(xs)[0].position
    det = AdwinDetector()
    det.update_many(xs[: first + 1])
    assert det.drift_detected
    det = AdwinDetector.from_bytes(det.to_bytes())
    assert det.drift_detected and det.n_seen == first + 1
    rest = det.update_many(xs[first + 1 :])
    river = _river_run(xs)[1:]
    assert [c.position for c in rest] == [e[0] for e in river]
    assert [c.n_after for c in rest] == [e[1] for e in river]
    # river empties the window on the update after a detection, also across runs: the next
    # dropped sub-window starts just after the persisted detection
    window_start = first + 1
    for c in rest:
        cut = c.position + 1 - c.n_after
        assert c.n_before == cut - window_start
        assert c.error_rate_before == pytest.approx(xs[window_start:cut].mean(), rel=1e-9)
        window_start = c.position + 1


def test_detection_on_the_first_element_of_a_run_keeps_scanning_the_run() -> None:
    xs = _stream("steps")
    whole = [e[0] for e in _river_run(xs)]
    det = AdwinDetector()
    assert det.update_many(xs[: whole[0]]) == ()
    rest = det.update_many(xs[whole[0] :])  # its element 0 is the one that reports the first drift
    assert [c.position for c in rest] == whole and len(whole) > 1


def test_default_parameters_are_rivers() -> None:
    # a stream where river's detection index moves with the grace period (9, 10, 11 -> 9, 10, 11)
    xs = np.r_[np.zeros(4), np.ones(30)]
    params = {"delta": 0.99, "clock": 1, "min_window_length": 1}
    expected = [e[0] for e in _river_run(xs, **params)]
    assert expected == [10]
    assert [c.position for c in AdwinDetector(**params).update_many(xs)] == expected
    with pytest.raises(TypeError):
        AdwinDetector(0.1)  # type: ignore[misc]  # parameters are keyword-only


def test_contract_reset_and_read_only_flag() -> None:
    det = AdwinDetector()
    det.update_many(_stream("steps"))
    det.reset()
    assert (det.n_seen, det.width, det.drift_detected) == (0, 0, False)
    with pytest.raises(AttributeError):
        det.drift_detected = True  # type: ignore[misc]


@pytest.mark.parametrize("name", ["clock", "max_buckets", "min_window_length", "grace_period"])
def test_integer_parameters_validated(name: str) -> None:
    for bad in (0, -1, 2.0):
        with pytest.raises(ValueError, match=f"{name} must be an integer >= 1, got {bad!r}"):
            AdwinDetector(**{name: bad})
    det = AdwinDetector(**{name: 1})  # the smallest allowed
    assert det.update_many(np.zeros(50)) == ()


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2], ids=["zero", "one", "negative", "two"])
def test_delta_validated(delta: float) -> None:
    with pytest.raises(ValueError, match="delta"):
        AdwinDetector(delta=delta)


def test_inputs_validated() -> None:
    det = AdwinDetector()
    with pytest.raises(ValueError, match="errors"):
        det.update_many(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="start_position"):
        det.update_many(np.zeros(3), start_position=-1)
    with pytest.raises(ValueError, match="x"):
        det.update(float("inf"))
    with pytest.raises(ValueError, match="AdwinDetector state"):
        AdwinDetector.from_bytes(b"\x80\x05N.")  # pickle of None


def test_state_payload_is_a_protocol_5_pickle_of_three_fields() -> None:
    import pickle

    from modelgate.drift.adwin import _FORMAT

    payload = AdwinDetector().to_bytes()
    assert payload[:2] == b"\x80\x05"  # the PROTO opcode and protocol 5 (pickle's spec)
    fmt, river, n_seen = pickle.loads(payload)
    assert (fmt, type(river), n_seen) == (_FORMAT, ADWIN, 0)
    # names that sort before and after the format's: it is compared for equality
    older, newer = "modelgate.drift.adwin/0", "modelgate.drift.adwin/2"
    for bad in ((_FORMAT, ADWIN()), (_FORMAT,), (_FORMAT, ADWIN(), 0, "extra"),
                (older, ADWIN(), 0), (newer, ADWIN(), 0), (_FORMAT, "ADWIN", 0)):
        with pytest.raises(ValueError, match="AdwinDetector state"):
            AdwinDetector.from_bytes(pickle.dumps(bad))


def test_window_properties_and_frozen_change_points() -> None:
    import dataclasses

    det = AdwinDetector()
    assert det.update_many([1.0, 0.0, 1.0, 1.0]) == ()
    assert (det.width, det.estimation, det.n_seen) == (4, 0.75, 4)
    point = AdwinDetector().update_many(_stream("steps"))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.position = 0  # type: ignore[misc]
    assert not hasattr(point, "__dict__")  # slotted


def test_update_many_takes_errors_by_keyword_and_start_position_only_by_keyword() -> None:
    assert AdwinDetector().update_many(errors=np.zeros(3), start_position=5) == ()
    with pytest.raises(TypeError):
        AdwinDetector().update_many(np.zeros(3), 5)  # type: ignore[misc]


@pytest.mark.parametrize("errors", [0.5, [[0.0, 1.0]], np.zeros((3, 1))], ids=["scalar", "2-d", "column"])
def test_update_many_needs_a_1d_array(errors: object) -> None:
    with pytest.raises(ValueError, match="errors must be a 1-D array of finite values, got shape"):
        AdwinDetector().update_many(errors)  # type: ignore[arg-type]
