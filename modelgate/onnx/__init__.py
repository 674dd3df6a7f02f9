"""The ONNX adapters: model archives and ONNX Runtime sessions, at the edge of the cores.

:mod:`~modelgate.onnx.artifact` packages and verifies archives (:mod:`~modelgate.onnx.archive_checks`
their limits, :mod:`~modelgate.onnx.manifest` the manifest inside, :mod:`~modelgate.onnx.graph_checks`
whether it describes the graph); :mod:`~modelgate.onnx.scoring` scores parquet files and is the
public surface of the scoring modules: :mod:`~modelgate.onnx.settings` (session settings),
:mod:`~modelgate.onnx.feeds` (frame validation), :mod:`~modelgate.onnx.scorer` (sessions and
runs), :mod:`~modelgate.onnx.devices` (CPU or GPU), :mod:`~modelgate.onnx.layouts` (output layouts) and
:mod:`~modelgate.onnx.codes` (string inputs as codes). They import neither the pipelines nor the
CLI (tests/layers/test_import_layers.py).
"""
