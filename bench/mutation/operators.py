"""A mutation operator cosmic-ray lacks: the dropped call.

cosmic-ray flips comparisons, conditions, numbers and loops, but never drops a statement - and
"the ownership check was never made", "the patch was never sent", "the error was never
recorded" are exactly the defects a safety function can have. ``DropCall`` replaces a call made
for its effect (an expression statement of its own) with ``None``. ``cli`` registers the
provider with cosmic-ray before running it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cosmic_ray.operators.operator import Example, Operator
from parso.python.tree import Keyword


def _is_call_statement(node: Any) -> bool:
    if node.type not in ("atom_expr", "power") or node.parent is None:
        return False
    trailer = node.children[-1]
    return (
        node.parent.type == "simple_stmt"
        and trailer.type == "trailer"
        and trailer.children[0].value == "("
    )


class DropCall(Operator):  # type: ignore[misc]
    """A call statement (``check(x)``, ``client.delete(...)``) replaced by ``None``."""

    def mutation_positions(self, node: Any) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
        if _is_call_statement(node):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        assert index == 0 and _is_call_statement(node)
        return Keyword("None", node.start_pos, prefix=node.get_first_leaf().prefix)

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (Example("def f(x):\n    check(x)\n", "def f(x):\n    None\n"),)


OPERATORS = {"DropCall": DropCall}


class Provider:
    """cosmic-ray's operator-provider protocol: names, and the class for a name."""

    def __iter__(self) -> Iterator[str]:
        return iter(OPERATORS)

    def __getitem__(self, name: str) -> type[Operator]:
        return OPERATORS[name]
