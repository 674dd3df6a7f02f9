"""Which device runs a model, with what CUDA options, in slices of what size.

Session creation details kept apart from feeding and output reading (:mod:`modelgate.onnx.scoring`):

- :func:`graph_work` reads an ONNX graph once: how much of its work is in operators the CUDA
  execution provider has no kernel for, and how many activation bytes one row needs.
- :func:`choose_device` turns the requested provider, what ONNX Runtime offers and that work
  into the provider list to open plus a one-line reason that is logged and stored.
- :func:`cuda_provider_options` holds TF32 off unless allowed: with TF32 a GPU's matrix
  products round inputs to 10-bit mantissas, and a gate at a threshold must not move
  because a GPU ran the model.
- :func:`gpu_slice_rows` and :func:`run_in_slices` bound the rows of one CUDA ``run``
  call by the memory limit and halve the slice on an arena out-of-memory error.

Hand-written because ONNX Runtime decides placement only when a session is opened (and then
silently copies between devices) and offers no cost model to ask beforehand.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import onnx

__all__ = [
    "CPU",
    "CUDA",
    "DeviceChoice",
    "GraphWork",
    "SliceBudget",
    "choose_device",
    "cuda_provider_options",
    "gpu_slice_rows",
    "graph_work",
    "is_gpu_out_of_memory",
    "node_placement",
    "run_in_slices",
]

logger = logging.getLogger("modelgate.onnx.scoring")

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
#: Operator domains the CUDA execution provider registers no kernel for: every
#: ``ai.onnx.ml`` operator (TreeEnsemble*, LinearClassifier, SVM*, Scaler, OneHotEncoder,
#: ZipMap...) runs on the CPU, with Memcpy nodes around it, when CUDA is listed.
CUDA_LACKING_DOMAINS = frozenset({"ai.onnx.ml"})
#: Above this share of the graph's work in CUDA-lacking operators, ``auto`` picks the CPU.
CPU_WORK_SHARE = 0.5
#: Rows of one CUDA ``run`` when no memory limit is set: 2 GiB of activations at most.
DEFAULT_GPU_BUDGET_BYTES = 2 << 30
#: Most rows of one CUDA ``run`` whatever the budget (beyond this, no throughput gain).
MAX_GPU_SLICE_ROWS = 1 << 20
#: Headroom over the activation estimate: elementwise ops keep a copy beside their input
#: and the arena rounds allocations up.
_ACTIVATION_HEADROOM = 4
_MIN_FLOATS_PER_ROW = 64
# Messages of ONNX Runtime's BFC arena and of the CUDA allocator when memory runs out.
_OOM = re.compile(r"out of memory|Failed to allocate memory|smaller than requested bytes|"
                  r"cudaErrorMemoryAllocation", re.IGNORECASE)

Requested = Literal["auto", "cpu", "cuda"]


@dataclass(frozen=True, slots=True)
class GraphWork:
    """How a graph's work splits between operators CUDA runs and those it lacks.

    Work is counted as parameter elements a node reads per row (initializer inputs and
    list/tensor attributes: a MatMul's weights, a tree ensemble's node arrays), at least one
    per node: a proxy, not a cost model, good enough to tell a tree ensemble from an MLP.

    Attributes
    ----------
    nodes : int
        Nodes in the main graph.
    cuda_lacking_nodes : int
        Nodes whose domain is in :data:`CUDA_LACKING_DOMAINS`.
    cuda_lacking_share : float
        Share of the work in those nodes, 0..1.
    activation_bytes_per_row : int
        Estimated float32 bytes one row needs on the device (input widths plus every
        MatMul/Gemm output width, at least 64 floats), before headroom.
    """

    nodes: int
    cuda_lacking_nodes: int
    cuda_lacking_share: float
    activation_bytes_per_row: int


def _attribute_size(attribute: onnx.AttributeProto) -> int:
    if attribute.type == onnx.AttributeProto.TENSOR:
        return int(np.prod(attribute.t.dims)) if attribute.t.dims else 1
    return max(len(attribute.ints), len(attribute.floats), len(attribute.strings), 0)


def graph_work(onnx_bytes: bytes) -> GraphWork:
    """Count the work of a model's graph by where the CUDA provider can run it.

    Parameters
    ----------
    onnx_bytes : bytes
        A serialized ONNX model.

    Returns
    -------
    GraphWork

    Examples
    --------
    >>> from onnx import TensorProto, helper
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])
    >>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])
    >>> w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [0.0] * 6)
    >>> scaler = helper.make_node("Scaler", ["x"], ["s"], domain="ai.onnx.ml",
    ...                           offset=[0.0, 0.0], scale=[1.0, 1.0])
    >>> matmul = helper.make_node("MatMul", ["s", "w"], ["y"])
    >>> graph = helper.make_graph([scaler, matmul], "g", [x], [y], [w])
    >>> work = graph_work(helper.make_model(graph).SerializeToString())
    >>> work.nodes, work.cuda_lacking_nodes, work.cuda_lacking_share  # Scaler 2 + 2 of 4 + MatMul 6
    (2, 1, 0.4)
    """
    model = onnx.load_from_string(onnx_bytes)
    graph = model.graph
    dims = {init.name: tuple(init.dims) for init in graph.initializer}
    sizes = {name: int(np.prod(shape)) if shape else 1 for name, shape in dims.items()}
    lacking = total = 0
    lacking_nodes = 0
    widths = 0
    for node in graph.node:
        work = sum(sizes.get(name, 0) for name in node.input)
        work += sum(_attribute_size(a) for a in node.attribute)
        work = max(work, 1)
        total += work
        if node.domain in CUDA_LACKING_DOMAINS:
            lacking += work
            lacking_nodes += 1
        weight = dims.get(node.input[1], ()) if len(node.input) > 1 else ()
        if node.op_type in ("MatMul", "Gemm") and weight:
            widths += int(weight[0] if node.op_type == "Gemm" and _transposed_b(node) else weight[-1])
    floats = max(_MIN_FLOATS_PER_ROW, sum(_row_width(i) for i in graph.input) + widths)
    return GraphWork(nodes=len(graph.node), cuda_lacking_nodes=lacking_nodes,
                     cuda_lacking_share=lacking / total if total else 0.0,
                     activation_bytes_per_row=4 * floats)


def _row_width(value: onnx.ValueInfoProto) -> int:
    """Elements per row of a graph input: its last dimension when static, else 1."""
    dims = value.type.tensor_type.shape.dim
    return dims[-1].dim_value if len(dims) > 1 and dims[-1].dim_value > 0 else 1


def _transposed_b(node: onnx.NodeProto) -> bool:
    return any(a.name == "transB" and a.i == 1 for a in node.attribute)


@dataclass(frozen=True, slots=True)
class DeviceChoice:
    """The providers to open a session with and why.

    Attributes
    ----------
    providers : tuple
        ONNX Runtime's ``providers`` argument (names or ``(name, options)`` pairs).
    reason : str
        One line, stored beside the provider that ran (``provider_reason``).
    """

    providers: tuple[Any, ...]
    reason: str

    @property
    def wants_cuda(self) -> bool:
        """Whether CUDA is among the providers."""
        return any((p[0] if isinstance(p, tuple) else p) == CUDA for p in self.providers)


def cuda_provider_options(*, allow_tf32: bool, gpu_mem_limit_mb: int | None) -> dict[str, str]:
    """CUDA execution provider options: TF32 off unless allowed, the arena limit if any.

    Examples
    --------
    >>> cuda_provider_options(allow_tf32=False, gpu_mem_limit_mb=None)
    {'use_tf32': '0'}
    >>> cuda_provider_options(allow_tf32=True, gpu_mem_limit_mb=256)  # doctest: +NORMALIZE_WHITESPACE
    {'use_tf32': '1', 'gpu_mem_limit': '268435456', 'arena_extend_strategy': 'kSameAsRequested'}
    """
    options = {"use_tf32": "1" if allow_tf32 else "0"}
    if gpu_mem_limit_mb is not None:
        options["gpu_mem_limit"] = str(gpu_mem_limit_mb * 1024 * 1024)
        # Under a limit, growing the arena in powers of two strands memory it may not take.
        options["arena_extend_strategy"] = "kSameAsRequested"
    return options


def choose_device(requested: Requested, available: Sequence[str], work: GraphWork, *,
                  cuda_options: Mapping[str, str]) -> DeviceChoice:
    """Pick the providers for one model.

    Parameters
    ----------
    requested
        ``"cpu"``, ``"cuda"`` (CUDA whatever the graph, an error when not offered) or
        ``"auto"``: CUDA when offered and at most :data:`CPU_WORK_SHARE` of the work is in
        operators CUDA lacks, else the CPU.
    available
        ``onnxruntime.get_available_providers()``.
    work
        From :func:`graph_work`.
    cuda_options
        From :func:`cuda_provider_options`.

    Raises
    ------
    ValueError
        ``requested="cuda"`` and ONNX Runtime does not offer CUDA.

    Examples
    --------
    >>> trees = GraphWork(nodes=3, cuda_lacking_nodes=1, cuda_lacking_share=0.98,
    ...                   activation_bytes_per_row=256)
    >>> choice = choose_device("auto", [CUDA, CPU], trees, cuda_options={})
    >>> choice.providers, choice.reason
    (('CPUExecutionProvider',), 'auto: CPU, 98% of the graph is in operators CUDA lacks (1 of 3 nodes)')
    """
    share = (f"{work.cuda_lacking_share:.0%} of the graph is in operators CUDA lacks "
             f"({work.cuda_lacking_nodes} of {work.nodes} nodes)")
    cuda = ((CUDA, dict(cuda_options)), CPU)
    if requested == "cpu":
        return DeviceChoice((CPU,), "cpu requested")
    if requested == "cuda":
        if CUDA not in available:
            raise ValueError(
                f"provider 'cuda' requested but ONNX Runtime offers only {list(available)} "
                "(install onnxruntime-gpu with matching CUDA/cuDNN, or use 'auto'/'cpu')")
        return DeviceChoice(cuda, f"cuda requested; {share}")
    if CUDA not in available:
        return DeviceChoice((CPU,), "auto: CPU, ONNX Runtime offers no CUDA provider")
    if work.cuda_lacking_share > CPU_WORK_SHARE:
        return DeviceChoice((CPU,), f"auto: CPU, {share}")
    return DeviceChoice(cuda, f"auto: CUDA, {share}")


def node_placement(session: Any, work: GraphWork, provider: str) -> str:
    """``"12 nodes on CUDAExecutionProvider, 3 on CPUExecutionProvider"``-style summary.

    Read from ONNX Runtime's graph assignment record when it has one (1.2x+ with the session
    entry ``session.record_ep_graph_assignment_info``); otherwise estimated from the graph:
    on CUDA, nodes in :data:`CUDA_LACKING_DOMAINS` run on the CPU.
    """
    info = getattr(session, "get_provider_graph_assignment_info", None)
    counts: Counter[str] = Counter()
    if info is not None:
        try:
            for subgraph in info():
                counts[subgraph.ep_name] += len(subgraph.get_nodes())
        except Exception:  # recording not enabled or not supported: estimate instead
            counts.clear()
    if not counts:
        on_cpu = work.cuda_lacking_nodes if provider == CUDA else work.nodes
        counts = Counter({provider: work.nodes - on_cpu, CPU: on_cpu})
        return "(estimated) " + _placement_text(counts)
    return _placement_text(counts)


def _placement_text(counts: Counter[str]) -> str:
    parts = [f"{n} node(s) on {ep}" for ep, n in counts.most_common() if n]
    return ", ".join(parts) or "no nodes"


def gpu_slice_rows(work: GraphWork, gpu_mem_limit_mb: int | None) -> int:
    """Rows per CUDA ``run`` so that activations fit the memory limit (or 2 GiB).

    Examples
    --------
    >>> wide = GraphWork(nodes=9, cuda_lacking_nodes=2, cuda_lacking_share=0.01,
    ...                  activation_bytes_per_row=4 * 1354)
    >>> gpu_slice_rows(wide, 256)  # 256 MiB / (4 x 5416 bytes)
    12390
    """
    budget = DEFAULT_GPU_BUDGET_BYTES if gpu_mem_limit_mb is None else gpu_mem_limit_mb << 20
    rows = budget // (_ACTIVATION_HEADROOM * work.activation_bytes_per_row)
    return int(min(MAX_GPU_SLICE_ROWS, max(1, rows)))


def is_gpu_out_of_memory(exc: BaseException) -> bool:
    """Whether ONNX Runtime's error says device memory ran out (arena or CUDA allocator).

    >>> is_gpu_out_of_memory(RuntimeError("Available memory of 1048576 is smaller than "
    ...                                   "requested bytes of 204800000"))
    True
    >>> is_gpu_out_of_memory(RuntimeError("Invalid rank for input: x"))
    False
    """
    return bool(_OOM.search(str(exc)))


class SliceBudget:
    """Rows per CUDA ``run`` for one session; lowered for good after an out-of-memory error.

    Mutable on purpose: a halving learnt on one batch holds for the next ones.
    """

    __slots__ = ("rows",)

    def __init__(self, rows: int) -> None:
        if rows < 1:
            raise ValueError(f"rows: expected a positive integer, got {rows!r}")
        self.rows = rows

    def __repr__(self) -> str:
        return f"SliceBudget(rows={self.rows})"


Feeds = dict[str, np.ndarray]


def run_in_slices(run: Callable[[Feeds], np.ndarray], feeds: Feeds, n: int,
                  budget: SliceBudget) -> np.ndarray:
    """``run`` over ``n`` rows of ``feeds`` in slices of ``budget.rows``, halving on OOM.

    Parameters
    ----------
    run
        One ONNX Runtime ``run`` on a dict of row slices, returning the rows' output.
    feeds
        Inputs, each with ``n`` rows on axis 0.
    n
        Rows.
    budget
        Rows per slice; lowered in place when a slice runs out of device memory.

    Raises
    ------
    MemoryError
        A single row does not fit (the model itself is too large for the device).
    Exception
        Any other error from ``run``, unchanged.

    Examples
    --------
    >>> feeds = {"x": np.arange(10.0).reshape(-1, 1)}
    >>> budget = SliceBudget(4)
    >>> run_in_slices(lambda f: f["x"] * 2, feeds, 10, budget).ravel()
    array([ 0.,  2.,  4.,  6.,  8., 10., 12., 14., 16., 18.])
    """
    parts: list[np.ndarray] = []
    start = 0
    while start < n:
        stop = min(n, start + budget.rows)
        part = feeds if (start, stop) == (0, n) else {k: v[start:stop] for k, v in feeds.items()}
        try:
            parts.append(run(part))
        except Exception as exc:
            if not is_gpu_out_of_memory(exc):
                raise
            if stop - start == 1:
                raise MemoryError(
                    f"one row does not fit in device memory ({str(exc)[:200]})") from exc
            budget.rows = max(1, (stop - start) // 2)
            logger.warning("device memory ran out on %d rows; retrying in slices of %d rows",
                           stop - start, budget.rows)
            continue
        start = stop
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
