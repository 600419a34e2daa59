"""The package's shape, checked from its source (an AST walk, nothing imported).

- no import cycle between modules (imports inside functions count; `if TYPE_CHECKING:` ones do not
  run, so they do not);
- imports go down the layers below, never up;
- an import inside a function carries a comment saying why (it is there only to avoid loading
  something heavy at start-up);
- every `docs/...` file a comment or docstring cites exists.

Known violations being fixed on other branches are allowlisted; an allowlist entry that is no
longer needed fails the test too, so that the lists only shrink.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dynalocal"

# Layers, top to bottom: a module may import from its own layer and the layers below it.
# diagnosis reads capacity's figures (capacity.report) and nothing of engine, and only admin/testing
# use it: it sits above capacity, beside journal (which restores storage).
LAYERS: list[set[str]] = [
    {"__main__", "cli", "app", "testing", "pytest_plugin"},  # entry points; app joins http and admin
    {"admin", "http", "seed"},  # the server's faces: admin API and console, the wire, seeding
    {"engine"},  # DynamoDB without HTTP
    {"diagnosis", "journal"},  # over capacity / storage
    {"capacity", "storage", "expressions"},
    {"values", "errors", "config"},  # leaves
]
LAYER_OF = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}

# Known violations, as (importing module, imported module); each is removed by another branch's merge
# (named after the files that branch rewrites). The test fails on an entry no longer needed: delete it.
# Imports that close an import cycle: the cycle check leaves them out (and fails once none closes one).
ALLOWED_CYCLE_IMPORTS: set[tuple[str, str]] = set()
ALLOWED_UPWARD: set[tuple[str, str]] = set()
ALLOWED_UNCOMMENTED: set[tuple[str, str]] = set()
ALLOWED_MISSING_DOCS: set[tuple[str, str]] = set()

_DOC_CITATION = re.compile(r"\bdocs/[\w./-]*\w")


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    line: int
    in_function: bool
    type_checking: bool
    commented: bool


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The package modules an import statement loads (a `from pkg import sub` loads pkg.sub)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        names = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
    return sorted({n for n in names if n in MODULES})


def _commented(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's lines or on the line just above it."""
    own = lines[node.lineno - 1: (node.end_lineno or node.lineno)]
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    return any("#" in line for line in own) or above.startswith("#")


def _imports(module: str, path: Path) -> list[Import]:
    text = path.read_text()
    lines = text.splitlines()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(child, package):
                    out.append(Import(module, target, child.lineno, in_function, type_checking,
                                      _commented(lines, child)))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True, type_checking)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, type_checking)
            else:
                visit(child, in_function, type_checking)

    visit(ast.parse(text), False, False)
    return out


IMPORTS = [imp for module, path in sorted(MODULES.items()) for imp in _imports(module, path)]


def _parents(module: str) -> list[str]:
    """The packages whose __init__ runs before `module` does."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in MODULES]


def _graph(leave_out: set[tuple[str, str]] | frozenset = frozenset()) -> dict[str, set[str]]:
    """module -> the modules its imports run (the packages' __init__ included), minus `leave_out`."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        if imp.type_checking or (imp.source, imp.target) in leave_out:
            continue
        for target in [*_parents(imp.target), imp.target]:
            if target != imp.source and not imp.source.startswith(target + "."):
                graph[imp.source].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else module
    return LAYER_OF[part]


def _check(found: set, allowed: set, what: str) -> None:
    new, stale = found - allowed, allowed - found
    assert not new, f"{what}:\n" + "\n".join(sorted(map(str, new)))
    assert not stale, f"allowlisted {what} no longer found (delete the entries):\n" + "\n".join(
        sorted(map(str, stale)))


def test_every_package_has_a_layer() -> None:
    unknown = {m.split(".")[1] for m in MODULES if "." in m} - set(LAYER_OF)
    assert not unknown, f"place these in LAYERS: {sorted(unknown)}"


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph(ALLOWED_CYCLE_IMPORTS))
    assert not cycles, "import cycles:\n" + "\n".join(str(sorted(c)) for c in cycles)
    full = _graph()
    imported = {(imp.source, imp.target) for imp in IMPORTS if not imp.type_checking}
    stale = {(a, b) for a, b in ALLOWED_CYCLE_IMPORTS  # (the packages an import runs may close the cycle)
             if (a, b) not in imported or not any(_reaches(full, t, a) for t in [*_parents(b), b])}
    assert not stale, f"allowlisted imports no longer close a cycle (delete the entries): {sorted(stale)}"


def test_imports_go_down_the_layers() -> None:
    upward = {(imp.source, imp.target) for imp in IMPORTS if _layer(imp.target) < _layer(imp.source)}
    _check(upward, ALLOWED_UPWARD, "imports against the layer direction (importer, imported)")


def test_imports_inside_functions_say_why() -> None:
    bare = {(imp.source, imp.target) for imp in IMPORTS if imp.in_function and not imp.commented}
    _check(bare, ALLOWED_UNCOMMENTED, "imports inside functions without a comment saying why (module, imported)")


def test_cited_docs_exist() -> None:
    missing = set()
    for module, path in MODULES.items():
        for cited in _DOC_CITATION.findall(path.read_text()):
            if not (ROOT / cited).exists():
                missing.add((module, cited))
    _check(missing, ALLOWED_MISSING_DOCS, "docs cited but not in the repository (module, path)")
