"""The import rules of ``docs/CONTRIBUTING.md`` ("Layers and imports"), read from the source.

Every module of the project's packages is parsed with ``ast`` (nothing is imported) and every
import of a project module is an arrow, whether it sits at the top of the file or inside a
function. The rules:

- no circle: no module reaches itself through imports, at module or function level;
- layers: ``core`` < ``api`` < ``tasks`` < ``models_hub`` < ``annotation``, ``leaderboards``.
  A package imports only the packages below it, and ``annotation`` and ``leaderboards`` never
  import each other;
- ``dynatask_site`` is configuration: no package imports it, and it imports no package (it
  names the apps' URL confs and classes by string).

``from package import name`` is an arrow to ``package.name`` when that is a module (Python
imports the submodule; the package's ``__init__`` only runs first, as it does for any import
under it), else to the package. Imports under ``if TYPE_CHECKING:`` never run and are skipped.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The rank of each package: a package imports only those of a lower rank (and itself).
LAYERS = {
    "core": 0,
    "api": 1,
    "tasks": 2,
    "models_hub": 3,
    "annotation": 4,
    "leaderboards": 4,
}
CONFIGURATION = "dynatask_site"
PACKAGES = (*LAYERS, CONFIGURATION)


def project_modules(root: Path, packages) -> dict[str, Path]:
    """Map every module name of ``packages`` under ``root`` (migrations apart) to its file."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Yield each import that runs and whether it sits inside a function."""

    def walk(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if _type_checking_block(child):
                for orelse in child.orelse:
                    yield from walk(orelse, in_function)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, in_function
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            yield from walk(child, nested)

    yield from walk(tree, False)


def _owner(name: str, modules) -> str | None:
    """The project module that ``name`` (a module or a name in one) belongs to."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(node, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        parts = package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, packages) -> dict[str, dict[str, int]]:
    """Map each module to the project modules it imports, each with the line of one import."""
    modules = project_modules(root, packages)
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node, _in_function in _imports(tree):
            for target in _targets(node, name, path.name == "__init__.py"):
                owner = _owner(target, modules)
                if owner is not None and owner != name:
                    graph[name].setdefault(owner, node.lineno)
    return graph


def import_circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in graph:
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return circles


def layer_breaks(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every arrow that breaks the layers or touches ``dynatask_site``, as ``a:line -> b``."""
    breaks = []
    for module, targets in graph.items():
        source = module.partition(".")[0]
        for target, line in targets.items():
            destination = target.partition(".")[0]
            if source == destination:
                continue
            allowed = (
                source in LAYERS and destination in LAYERS and LAYERS[destination] < LAYERS[source]
            )
            if not allowed:
                breaks.append(f"{module}:{line} -> {target}")
    return breaks


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT, PACKAGES)


def test_no_module_reaches_itself_through_imports(graph):
    assert import_circles(graph) == []


def test_packages_import_only_the_layers_below_and_never_dynatask_site(graph):
    assert layer_breaks(graph) == []


def test_the_graph_covers_every_package_and_function_level_imports(graph):
    assert {name.partition(".")[0] for name in graph} == set(PACKAGES)
    # The job modules import their services (at module level) ...
    assert "leaderboards.services.scheduling" in graph["leaderboards.jobs"]
    # ... and the apps' ready() imports (function level) are arrows too.
    assert "annotation.receivers" in graph["annotation.apps"]


# -- the checks themselves, on small made-up projects --------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_circle_held_apart_by_a_function_level_import_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "tasks/__init__.py": "",
            "tasks/jobs.py": "from tasks import services\n",
            "tasks/services.py": "def enqueue():\n    from tasks import jobs\n",
            "tasks/models.py": "",
        },
    )
    graph = import_graph(tmp_path, ["tasks"])
    assert import_circles(graph) == [["tasks.jobs", "tasks.services"]]


def test_relative_and_type_checking_imports(tmp_path):
    _write(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/a.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core import b\n"
            ),
            "core/b.py": "from . import a\nfrom .a import name\n",
        },
    )
    graph = import_graph(tmp_path, ["core"])
    assert graph["core.b"] == {"core.a": 1}
    assert graph["core.a"] == {}  # never runs
    assert import_circles(graph) == []


def test_a_lower_layer_importing_a_higher_one_or_the_configuration_breaks(tmp_path):
    _write(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/errors.py": "import dynatask_site.settings\n",
            "tasks/__init__.py": "",
            "tasks/models.py": "from core.errors import x\n",
            "tasks/views.py": "def view():\n    from leaderboards.models import Score\n",
            "annotation/__init__.py": "from leaderboards import models\n",
            "leaderboards/__init__.py": "",
            "leaderboards/models.py": "from tasks.models import Task\n",
            "dynatask_site/__init__.py": "",
            "dynatask_site/settings.py": "from tasks import models\n",
        },
    )
    graph = import_graph(tmp_path, PACKAGES)
    assert sorted(layer_breaks(graph)) == [
        "annotation:1 -> leaderboards.models",
        "core.errors:1 -> dynatask_site.settings",
        "dynatask_site.settings:1 -> tasks.models",
        "tasks.views:2 -> leaderboards.models",
    ]
