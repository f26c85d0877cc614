"""The shape of the code, checked: no import cycle between modules of the package (the layers
and the core's purity are import-linter contracts in pyproject.toml, run by scripts/test).

A cycle is found through function-level imports too (grimp reads every import statement), so a
"lazy" import that closes a loop counts.
"""

from __future__ import annotations

import grimp


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("forecaster")
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if not imported.startswith("forecaster"):
                continue
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                cycles.add(" -> ".join((module, *back)))
    assert sorted(cycles) == []
