"""Run one mutant's tests fast: only the tests that execute the mutated statement, in a forked,
pre-imported process.  Used by ``tests/support/mutation.py``; see tests/MUTATION.md.

A plain ``pytest`` per mutant spends most of its seconds importing numpy, scipy, pandas,
scikit-learn and pytest, then runs every test of the module, though most mutants touch a line
that only a few tests execute.  Three pieces cut that without changing any verdict:

* ``--record``: one pytest run of the module's tests under coverage.py, with a dynamic context
  per test, writes which tests execute each line of the module (``<stem>.lines.json``).  Lines
  run while importing or collecting (context ``""``) are marked as needing every test.
* ``--serve``: a server that imports the heavy libraries and pytest's plugins once, then forks
  a child per request that runs ``pytest.main`` in the staged tree.  The module under test is
  never imported in the server and its bytecode is deleted before each run, so each child
  compiles the mutated file from disk.
* ``--mutant``: the test command cosmic-ray runs per mutant.  It diffs the staged file against
  its pristine copy, maps each changed line to its statement and that statement to the tests
  that execute it, and asks the server to run those, collecting only their files.  If they
  all pass, it runs the module's whole test set before reporting a survivor, so a survivor is
  one the whole set lets pass, exactly as without this file; a kill is a real test failing on
  the mutant.  If the server cannot be reached, it runs the whole set itself (slow, same
  verdict).

coverage.py and not a hand-made tracer: it is the maintained tool for exactly this (dynamic
contexts, per-line context queries); ``sys.monitoring`` would need Python 3.12.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import json
import os
import select
import signal
import socket
import sys
from pathlib import Path
from typing import Any

# Imported once in the server so that each forked child starts with them loaded.
WARM_MODULES = (
    "numpy", "scipy.stats", "scipy.special", "scipy.optimize", "scipy.interpolate", "pandas",
    "sklearn.metrics", "sklearn.isotonic", "sklearn.ensemble", "sklearn.linear_model",
    "sklearn.preprocessing", "sklearn.model_selection", "fairlearn.metrics", "river.drift", "ot",
    "onnx", "onnxruntime", "shap", "hypothesis", "psycopg2", "pyarrow", "pyarrow.parquet", "yaml",
    "jinja2", "pytest", "_pytest.doctest", "_pytest.python", "pytest_timeout",
)


def _read_request(conn: socket.socket) -> Any:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("client closed before sending its request")
        data += chunk
    return json.loads(data)


class _Select:
    """A pytest plugin keeping only the given node ids (all when ``None``), run in the given
    order when ``ordered`` (the quickest first: with ``-x`` a mutant dies at its first failing
    test, so a slow test that would kill it too is never reached)."""

    def __init__(self, keep: list[str] | None, ordered: bool = False) -> None:
        self.keep = None if keep is None else {node: k for k, node in enumerate(keep)}
        self.ordered = ordered

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if self.keep is None:
            return
        chosen = [i for i in items if i.nodeid in self.keep]
        if self.ordered:
            chosen.sort(key=lambda i: self.keep[i.nodeid])  # type: ignore[index]
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in self.keep])
        items[:] = chosen


# modelgate modules tests/conftest.py imports; loaded in the server unless they pull in the
# module under test
WARM_OWN_MODULES = ("modelgate.config", "modelgate.store.db")


def _warm(target_module: str) -> None:
    """Import the libraries, pytest's plugins and the safe modelgate modules once."""
    import importlib
    from importlib.metadata import entry_points

    names = [*WARM_MODULES, *(e.value.split(":")[0] for e in entry_points(group="pytest11"))]
    for name in names:
        with contextlib.suppress(Exception):  # a library missing only costs time
            importlib.import_module(name)
    before = set(sys.modules)
    for name in WARM_OWN_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    if target_module in sys.modules:  # it must be imported, mutated, by each child: undo
        for name in set(sys.modules) - before:
            del sys.modules[name]
    assert target_module not in sys.modules, "children must import the mutated module"


def serve(sock_path: str, log_path: str, target: str, target_module: str) -> None:
    """Answer ``{"args": [...], "keep": [...] | null}`` requests with pytest's exit code.

    Bytecode is written as usual (pytest's rewritten test modules are then compiled once),
    except for the module under test: each child deletes its cached bytecode first, since
    a mutant of the same size written in the same second would match a stale ``.pyc``.
    """
    import importlib.util

    stale = importlib.util.cache_from_source(target)
    _warm(target_module)
    Path(sock_path).unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    server.listen(4)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            try:
                request = _read_request(conn)
            except (ConnectionError, ValueError):
                continue
            pid = os.fork()
            if pid == 0:  # the child: run pytest, exit with its code
                server.close()
                conn.close()
                os.setpgid(0, 0)
                fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stale)
                import pytest

                try:
                    select = _Select(request["keep"], bool(request.get("ordered")))
                    code = int(pytest.main(request["args"], plugins=[select]))
                except BaseException:  # noqa: BLE001 - any crash is a failed run
                    code = 3
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            code = _wait(pid, conn)
            if code is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(f"{code}\n".encode())


def _wait(pid: int, conn: socket.socket) -> int | None:
    """The child's exit code; kills it (and its group) if the client goes away first."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 4
        readable, _, _ = select.select([conn], [], [], 0.05)
        if readable and not conn.recv(1, socket.MSG_PEEK):  # the client timed out and died
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None


def statement_lines(source: str) -> dict[int, range]:
    """For each line, the lines of its innermost statement's own part (a compound statement's
    header, not its body), which is where coverage.py records its execution.

    Examples
    --------
    >>> src = "x = (1 +\\n     2)\\nif (x >\\n    1):\\n    y = 3\\n"
    >>> {k: list(v) for k, v in statement_lines(src).items()}
    {1: [1, 2], 2: [1, 2], 3: [3, 4], 4: [3, 4], 5: [5]}
    """
    found: dict[int, tuple[int, range]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt) or node.end_lineno is None:
            continue
        bodies = [getattr(node, f) for f in ("body", "orelse", "finalbody", "handlers")
                  if getattr(node, f, None)]
        first_child = min((b[0].lineno for b in bodies), default=node.end_lineno + 1)
        own = range(node.lineno, max(node.lineno, first_child - 1) + 1) if bodies else \
            range(node.lineno, node.end_lineno + 1)
        for line in own:
            depth = node.lineno  # inner statements start later; keep the innermost
            if line not in found or found[line][0] <= depth:
                found[line] = (depth, own)
    return {line: r for line, (_, r) in found.items()}


def changed_lines(original: str, mutated: str) -> set[int]:
    """Lines of ``original`` (1-based) that the mutant changed or deleted, or next to an insert.

    Examples
    --------
    >>> sorted(changed_lines("a\\nb\\nc\\n", "a\\nB\\nc\\n"))
    [2]
    """
    matcher = difflib.SequenceMatcher(a=original.splitlines(), b=mutated.splitlines(),
                                      autojunk=False)
    out: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            out.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return out


def selected_tests(original: str, mutated: str, lines_map: dict[str, list[str]]) -> list[str] | None:
    """The node ids that execute the mutated statements; ``None`` means every test."""
    statements = statement_lines(original)
    keep: set[str] = set()
    for line in changed_lines(original, mutated):
        if line not in statements:
            return None  # not inside a statement we can place (a decorator, a blank line)
        contexts: set[str] = set()
        for own_line in statements[line]:
            contexts.update(lines_map.get(str(own_line), ()))
        if not contexts or "" in contexts:
            return None  # run at import, or by no test: the whole set decides
        keep.update(contexts)
    return sorted(keep)


def narrowed_args(args: list[str], keep: list[str] | None) -> list[str]:
    """``args`` with only the test files that hold a node id of ``keep`` (all when ``None``).

    pytest collects every file it is given before the selection deselects the rest; collecting
    only the files of the selected tests runs the same tests, and the whole set still decides a
    survivor.

    Examples
    --------
    >>> narrowed_args(["-q", "-m", "not e2e", "tests/a.py", "tests/b.py", "site/m.py"],
    ...               ["tests/b.py::test_x[1]", "site/m.py::m.f"])
    ['-q', '-m', 'not e2e', 'tests/b.py', 'site/m.py']
    """
    if keep is None:
        return args
    files = {node.split("::", 1)[0] for node in keep}
    if not files:  # no paths at all would make pytest collect its whole testpaths
        return args
    return [a for a in args if not a.endswith(".py") or a in files]


def by_duration(keep: list[str], durations: dict[str, float]) -> list[str]:
    """``keep`` quickest first, by the recorded seconds (a test not recorded last).

    Examples
    --------
    >>> by_duration(["t::slow", "t::new", "t::fast"], {"t::slow": 2.0, "t::fast": 0.1})
    ['t::fast', 't::slow', 't::new']
    """
    return sorted(keep, key=lambda node: (durations.get(node, float("inf")), node))


def _ask(sock_path: str, args: list[str], keep: list[str] | None,
         ordered: bool = False) -> int | None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(sock_path)
            request = {"args": args, "keep": keep, "ordered": ordered}
            s.sendall((json.dumps(request) + "\n").encode())
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(64)
                if not chunk:
                    return None
                reply += chunk
            return int(reply)
    except OSError:
        return None


def run_mutant(spec_path: str) -> int:
    """The per-mutant test command: exit 0 when the mutant survives the whole test set."""
    spec = json.loads(Path(spec_path).read_text())
    original = Path(spec["original"]).read_text()
    mutated = Path(spec["target"]).read_text()
    lines_map = json.loads(Path(spec["lines"]).read_text())
    args: list[str] = spec["args"]
    keep = selected_tests(original, mutated, lines_map) if original != mutated else None
    durations_path = spec.get("durations")
    ordered = keep is not None and durations_path is not None and Path(durations_path).exists()
    if ordered and keep is not None:
        keep = by_duration(keep, json.loads(Path(durations_path).read_text()))
    for selection in ([keep, None] if keep is not None else [None]):
        code = _ask(spec["socket"], narrowed_args(args, selection), selection,
                    ordered and selection is not None)
        if code is None:  # no server: run the whole set here
            import pytest

            print("mutation_fast: no server, running the whole set", file=sys.stderr)
            return int(pytest.main(args))
        if code != 0:
            return code
    return 0


def record(target: str, out_path: str, args: list[str]) -> int:
    """Run the tests once under coverage.py; write {line: [node ids executing it]} for
    ``target``, and beside it (``.durations.json`` for ``.lines.json``) each test's seconds."""
    import time

    import coverage
    import pytest

    cov = coverage.Coverage(data_file=None, include=[os.path.abspath(target)], branch=False)
    seconds: dict[str, float] = {}

    class Contexts:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
            cov.switch_context(item.nodeid)
            start = time.perf_counter()
            yield
            seconds[item.nodeid] = time.perf_counter() - start
            cov.switch_context("")

    cov.start()
    code = int(pytest.main(args, plugins=[Contexts()]))
    cov.stop()
    data = cov.get_data()
    files = [f for f in data.measured_files() if os.path.samefile(f, target)]
    by_line: dict[str, list[str]] = {}
    if files:
        for line, contexts in data.contexts_by_lineno(files[0]).items():
            by_line[str(line)] = sorted(contexts)
    Path(out_path).write_text(json.dumps(by_line))
    Path(durations_file(out_path)).write_text(json.dumps(seconds))
    return code


def durations_file(lines_path: str) -> str:
    """Where :func:`record` writes the tests' seconds, beside the lines map.

    Examples
    --------
    >>> durations_file("/x/drift__adwin.lines.json")
    '/x/drift__adwin.durations.json'
    """
    return lines_path.removesuffix(".lines.json") + ".durations.json"


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--serve"]:
        serve(argv[1], argv[2], argv[3], argv[4])
    elif argv[:1] == ["--mutant"]:
        sys.exit(run_mutant(argv[1]))
    elif argv[:1] == ["--record"]:
        sys.exit(record(argv[1], argv[2], argv[3:]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
