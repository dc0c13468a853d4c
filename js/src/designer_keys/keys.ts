// Which keyboard event means which Designer action (pure functions, unit-testable).
import type { KeyAction } from "./model";

export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
}

/** The action for a key press, or null. `editingText`: the focus is in a text field, where
 * Ctrl+Z / Ctrl+Y keep their text meaning; Ctrl+S saves the model from anywhere. */
export function actionFor(ev: KeyLike, editingText: boolean): KeyAction | null {
  if (!(ev.ctrlKey || ev.metaKey) || ev.altKey) return null;
  const key = ev.key.toLowerCase();
  if (key === "s" && !ev.shiftKey) return "save";
  if (editingText) return null;
  if (key === "z") return ev.shiftKey ? "redo" : "undo";
  if (key === "y" && !ev.shiftKey) return "redo";
  return null;
}

/** "/" outside a text field focuses the quick-add box. */
export function wantsQuickAdd(ev: KeyLike, editingText: boolean): boolean {
  return !editingText && ev.key === "/" && !(ev.ctrlKey || ev.metaKey || ev.altKey);
}

export function isTextField(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["button", "checkbox", "radio", "range", "color", "file", "submit"].includes(
      target.type,
    );
  }
  return false;
}
