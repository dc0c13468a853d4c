"""Change events: how a ModelDocument tells its views what an edit touched.

Every command, when applied, undone or redone, produces one `ChangeEvent`. Views use the
name sets to patch their drawing in place instead of rebuilding it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

_log = logging.getLogger(__name__)

EventSource = Literal["do", "undo", "redo", "load", "save"]


@dataclass(frozen=True)
class ChangeEvent:
    """What one edit (or its undo/redo) changed in the main graph.

        `added`/`removed`/`changed` hold node names as they are *after* the change; `renamed` maps
        old to new names. `edges` is true when any connection changed (a view then refreshes the
        edges of the named nodes), `graph_io` when graph inputs/outputs changed, `initializers`
        when an initializer was created, deleted or re-pointed, `tensorrt` when the model's TensorRT
    properties (optimization profiles, layer precisions) changed. `source` says whether the change
        came from a new edit, an undo or a redo.
    """

    description: str
    source: EventSource = "do"
    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()
    renamed: tuple[tuple[str, str], ...] = ()
    edges: bool = False
    graph_io: bool = False
    initializers: bool = False
    metadata: bool = False
    tensorrt: bool = False
    dirty: bool = True

    @property
    def structural(self) -> bool:
        """True when nodes or edges were added or removed (a view must update its topology)."""
        return bool(self.added or self.removed or self.edges or self.graph_io)

    def merged(self, other: ChangeEvent) -> ChangeEvent:
        """One event for a batch of edits (multi-select edits are one undo step)."""
        return ChangeEvent(
            description=self.description,
            source=self.source,
            added=(self.added - other.removed) | other.added,
            removed=(self.removed - other.added) | other.removed,
            changed=self.changed | other.changed,
            renamed=self.renamed + other.renamed,
            edges=self.edges or other.edges,
            graph_io=self.graph_io or other.graph_io,
            initializers=self.initializers or other.initializers,
            metadata=self.metadata or other.metadata,
            tensorrt=self.tensorrt or other.tensorrt,
            dirty=self.dirty or other.dirty,
        )

    def with_source(self, source: EventSource) -> ChangeEvent:
        return replace(self, source=source)


Listener = Callable[[ChangeEvent], None]


@dataclass
class EventBus:
    """Synchronous fan-out of ChangeEvents; a failing listener is logged, never fatal."""

    _listeners: list[Listener] = field(default_factory=list)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` after every change; returns a function that unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: ChangeEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                # A broken view must not make an edit look failed: the model already changed.
                _log.exception("change listener %r failed on %s", listener, event.description)
