"""How arena/ imports itself: import cycles between modules and pairs of apps that import each
other, counted over every import statement at any depth (those inside functions too).

    .venv/bin/python scripts/import_graph.py [--list]

It reads the same graph import-linter checks (grimp, without imports under TYPE_CHECKING); the
contracts in `.importlinter` keep the counts at zero, this prints them (the figures in
docs/architecture.md were taken with it).
"""

import sys
from itertools import combinations
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def module_cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The strongly connected groups of modules (Tarjan): each group of two or more modules is one
    tangle of cycles; a module importing itself does not count."""
    modules = sorted(m for m in graph.modules if m.startswith(package))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def visit(module: str) -> None:  # recursive: arena/ is a few hundred modules deep at most
        index[module] = low[module] = counter[0]
        counter[0] += 1
        stack.append(module)
        on_stack.add(module)
        for target in graph.find_modules_directly_imported_by(module):
            if not target.startswith(package):
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for module in modules:
        if module not in index:
            visit(module)
    return groups


def app_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else module


def mutual_app_pairs(graph: grimp.ImportGraph, package: str) -> list[tuple[str, str]]:
    """Pairs of arena's subpackages (apps) each importing the other; top-level modules such as
    arena.streams count as their own unit."""
    edges: set[tuple[str, str]] = set()
    for module in graph.modules:
        if not module.startswith(package + "."):
            continue
        for target in graph.find_modules_directly_imported_by(module):
            if target.startswith(package + ".") and app_of(module) != app_of(target):
                edges.add((app_of(module), app_of(target)))
    units = sorted({a for a, _ in edges} | {b for _, b in edges})
    return [(a, b) for a, b in combinations(units, 2) if (a, b) in edges and (b, a) in edges]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph("arena", include_external_packages=False, exclude_type_checking_imports=True)
    cycles = module_cycles(graph, "arena")
    pairs = mutual_app_pairs(graph, "arena")
    print(f"import cycles between modules: {len(cycles)} tangles, {sum(map(len, cycles))} modules in them")
    print(f"app pairs importing each other: {len(pairs)}")
    if "--list" in sys.argv:
        for group in cycles:
            print("  cycle:", " ".join(group))
        for a, b in pairs:
            print(f"  pair: {a} <-> {b}")


if __name__ == "__main__":
    main()
