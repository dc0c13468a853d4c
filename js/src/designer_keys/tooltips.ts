// Text cut with an ellipsis in the Designer (labels, table cells, notes: the CSS rules in
// nsdl_jupyter/widgets/designer/_side_pane.py) shows its full text as a tooltip. Set when the
// pointer comes over it, so text that changed or stopped being cut is read fresh; a tooltip
// the widget set itself (ipywidgets puts it on the label) follows the full text.

const OURS = "nsdlCut";
const OWN = "nsdlTitle"; // the widget's own title, kept

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
    if (!ours && at.hasAttribute("title")) at.dataset[OWN] = at.title;
    const own = at.dataset[OWN] ?? "";
    if (isCut(at)) {
      const text = (at.textContent ?? "").trim();
      at.title = own && own !== text ? `${text}\n${own}` : text;
      at.dataset[OURS] = "1";
      return;
    }
    if (ours) {
      if (own) at.title = own;
      else at.removeAttribute("title");
      delete at.dataset[OURS];
    }
    if (own) return;
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
