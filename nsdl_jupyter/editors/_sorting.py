"""Sort orders of the Designer's lists (Layer Palette, Layer Explorer), with labels that say
the true direction ("name A→Z", "count: most first"), so a list never claims "ascending"
while it shows the largest first."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from nsdl_jupyter.editors._errors import EditorError

T = TypeVar("T")

# keys that sort numbers (counts); the others sort text, case-insensitively
NUMERIC = frozenset({"count"})
POSITION = "graph order"  # the model's own order (the Layer Explorer's default)


@dataclass(frozen=True)
class SortOrder:
    key: str
    descending: bool = False

    @property
    def label(self) -> str:
        if self.key == POSITION:
            return "graph order, last first" if self.descending else "graph order"
        if self.key in NUMERIC:
            return f"{self.key}: {'most' if self.descending else 'fewest'} first"
        return f"{self.key} {'Z→A' if self.descending else 'A→Z'}"

    def apply(
        self,
        items: Iterable[T],
        value: Callable[[T], str | int],
        then: Callable[[T], tuple[str | int, ...]] = lambda _item: (),
    ) -> list[T]:
        """`items` ordered by `value` (text case-insensitively) in this direction; ties keep
        the order of `then` (always ascending, so equal counts still read A→Z)."""
        by_tie = sorted(items, key=then)
        return sorted(by_tie, key=lambda item: _comparable(value(item)), reverse=self.descending)


def _comparable(value: str | int) -> str | int:
    return value.lower() if isinstance(value, str) else value


def sort_choices(keys: Sequence[str]) -> list[tuple[str, SortOrder]]:
    """Dropdown options: each key in both directions, counts most-first first."""
    choices = []
    for key in keys:
        first = key in NUMERIC  # "most first" is what one looks for in a count
        for descending in (first, not first):
            order = SortOrder(key, descending)
            choices.append((order.label, order))
    return choices


def check_sort(order: SortOrder, keys: Sequence[str]) -> SortOrder:
    if order.key not in keys:
        raise EditorError(f"sort by {order.key!r}: use one of {', '.join(keys)}")
    return order
