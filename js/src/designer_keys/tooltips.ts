// Text cut with an ellipsis in the Designer (labels, table cells, notes: the CSS rules in
// nsdl_jupyter/widgets/designer/_side_pane.py) shows its full text as a tooltip. Set when the
// pointer comes over it, so text that changed or stopped being cut is read fresh; a title the
// widget set itself is left alone.

const OURS = "nsdlCut";

/** Whether `el` shows only part of its text behind an ellipsis. */
export function isCut(el: Element): boolean {
  return (
    el instanceof HTMLElement &&
    el.scrollWidth > el.clientWidth + 1 &&
    getComputedStyle(el).textOverflow === "ellipsis"
  );
}

/** Give `el` (or the nearest of its next ancestors that is cut) its full text as title. */
export function explain(el: Element | null, root: HTMLElement): void {
  for (let at = el, up = 0; at && at !== root && up < 3; at = at.parentElement, up++) {
    if (!(at instanceof HTMLElement)) continue;
    const ours = at.dataset[OURS] === "1";
    if (at.hasAttribute("title") && !ours) return;
    if (isCut(at)) {
      at.title = (at.textContent ?? "").trim();
      at.dataset[OURS] = "1";
      return;
    }
    if (ours) {
      at.removeAttribute("title");
      delete at.dataset[OURS];
    }
  }
}

/** Listen inside `root`; returns the cleanup. */
export function attachCutTooltips(root: HTMLElement): () => void {
  const onOver = (event: Event) => {
    if (event.target instanceof Element) explain(event.target, root);
  };
  root.addEventListener("pointerover", onOver);
  return () => root.removeEventListener("pointerover", onOver);
}
