"""Undo/redo: commands made of primitive edits, the undo stack, batching and the dirty flag."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from nsdl_jupyter.document._events import ChangeEvent
from nsdl_jupyter.document.edits import Edit


@dataclass
class Command:
    """A user-level edit: primitive edits applied in order, reverted in reverse order.

    `event` describes the change as seen after `apply`; undo emits its inverse.
    """

    description: str
    edits: Sequence[Edit]
    event: ChangeEvent

    def apply(self) -> None:
        done: list[Edit] = []
        try:
            for edit in self.edits:
                edit.apply()
                done.append(edit)
        except BaseException:
            # A failed command leaves the model unchanged.
            for edit in reversed(done):
                edit.revert()
            raise

    def revert(self) -> None:
        for edit in reversed(self.edits):
            edit.revert()


def inverse_event(event: ChangeEvent) -> ChangeEvent:
    """The event an undo emits: what was added is removed, renames run backwards."""
    return replace(
        event,
        source="undo",
        added=event.removed,
        removed=event.added,
        changed=event.changed | frozenset(old for old, _ in event.renamed),
        renamed=tuple((new, old) for old, new in reversed(event.renamed)),
    )


@dataclass
class History:
    """The undo stack. `dirty` compares the current position with the last save point."""

    _done: list[Command] = field(default_factory=list)
    _undone: list[Command] = field(default_factory=list)
    _saved_at: int | None = 0
    _batch: list[Command] | None = None

    @property
    def dirty(self) -> bool:
        return self._saved_at != len(self._done)

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    @property
    def undo_description(self) -> str | None:
        return self._done[-1].description if self._done else None

    @property
    def redo_description(self) -> str | None:
        return self._undone[-1].description if self._undone else None

    @property
    def in_batch(self) -> bool:
        return self._batch is not None

    def push(self, command: Command) -> ChangeEvent | None:
        """Apply `command` and record it. Returns the event to emit (None inside a batch)."""
        command.apply()
        if self._batch is not None:
            self._batch.append(command)
            return None
        self._record(command)
        return command.event

    def _record(self, command: Command) -> None:
        if self._saved_at is not None and self._saved_at > len(self._done):
            self._saved_at = None  # the saved state was undone and can no longer be redone
        self._done.append(command)
        self._undone.clear()

    def undo(self) -> ChangeEvent | None:
        if not self._done:
            return None
        command = self._done.pop()
        command.revert()
        self._undone.append(command)
        return inverse_event(command.event)

    def redo(self) -> ChangeEvent | None:
        if not self._undone:
            return None
        command = self._undone.pop()
        command.apply()
        self._done.append(command)
        return command.event.with_source("redo")

    def mark_saved(self) -> None:
        self._saved_at = len(self._done)

    @contextmanager
    def batch(self, description: str) -> Iterator[list[ChangeEvent]]:
        """Group the commands pushed inside into one undo step; all or nothing.

        Yields a list that receives the merged event after the block (empty when nothing was
        edited), so the caller can emit it.
        """
        if self._batch is not None:
            # Nested batches join the outer one.
            yield []
            return
        self._batch = []
        result: list[ChangeEvent] = []
        try:
            yield result
        except BaseException:
            commands, self._batch = self._batch, None
            for command in reversed(commands):
                command.revert()
            raise
        commands, self._batch = self._batch, None
        if not commands:
            return
        edits = [edit for command in commands for edit in command.edits]
        event = commands[0].event
        for command in commands[1:]:
            event = event.merged(command.event)
        merged = Command(description, edits, replace(event, description=description, source="do"))
        self._record(merged)
        result.append(merged.event)
