"""The pure core never imports Django, Channels or Celery."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, pkgutil, sys
import roles, memory
for package in (roles, memory):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
bad = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"django", "channels", "celery"}
)
print(",".join(bad))
"""


def test_roles_and_memory_import_no_django_channels_or_celery():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def _artoo_web_imports() -> dict[str, tuple[set[str], list[str]]]:
    """Return, per artoo_web module, every artoo_web module it imports and where
    it imports one inside a function body."""
    import ast

    package = ROOT / "artoo_web"
    found = {}
    for path in package.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(), str(path))
        top, nested = set(), []
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "artoo_web":
                    targets = [f"artoo_web.{a.name}" for a in node.names]
                elif node.module.startswith("artoo_web."):
                    targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("artoo_web")]
            if not targets:
                continue
            top.update(targets)
            if node.col_offset != 0:
                nested.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        found[name] = (top, nested)
    return found


def _resolve(target: str, modules: set[str]) -> str | None:
    """Return the module an import names (a name imported from a module → it)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def test_artoo_web_modules_import_no_cycle():
    graph = _artoo_web_imports()
    modules = set(graph)
    edges = {
        m: {r for t in top if (r := _resolve(t, modules)) and r != m}
        for m, (top, _) in graph.items()
    }
    cycles, state = [], {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = "done"

    for module in sorted(modules):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_artoo_web_import_inside_a_function():
    nested = [
        where for _, (_, inner) in _artoo_web_imports().items() for where in inner
    ]
    assert nested == []


def test_only_tasks_imports_the_handlers():
    importers = sorted(
        m
        for m, (top, _) in _artoo_web_imports().items()
        if not m.startswith("artoo_web.handlers")
        and any(t.startswith("artoo_web.handlers") for t in top)
    )
    assert importers == ["artoo_web.tasks"]
