// The right-click menu of the canvas in edit mode: a list of items, one level of submenu, and
// an inline text field (Rename, quick add) that replaces the list until Enter or Escape.

export interface MenuItem {
  label: string;
  action?: () => void;
  disabled?: boolean;
  submenu?: MenuItem[];
}

/** One line of a suggestion list: what Enter gives, and a muted note beside it. */
export interface Suggestion {
  value: string;
  note?: string;
}

export class ContextMenu {
  readonly el: HTMLDivElement;

  constructor(private readonly parent: HTMLElement) {
    this.el = document.createElement("div");
    this.el.className = "nsdl-gv-menu";
    this.el.style.display = "none";
    parent.appendChild(this.el);
  }

  get open(): boolean {
    return this.el.style.display !== "none";
  }

  show(x: number, y: number, items: MenuItem[]): void {
    this.el.replaceChildren(this.list(items));
    this.place(x, y);
  }

  /** A one-line text field at (x, y); Enter gives its text to `done`. With `suggest`, a list
   *  under it follows the typing: Up/Down move, Enter or a click takes the highlighted one,
   *  Escape closes. Returns a function that lists the suggestions again (new vocabulary). */
  ask(
    x: number,
    y: number,
    label: string,
    value: string,
    done: (text: string) => void,
    suggest?: (text: string) => Suggestion[],
  ): () => void {
    const input = document.createElement("input");
    input.className = "nsdl-gv-menu-input";
    input.placeholder = label;
    input.value = value;
    input.setAttribute("aria-label", label);
    const list = document.createElement("ul");
    list.className = "nsdl-gv-suggestions";
    list.setAttribute("role", "listbox");
    let shown: Suggestion[] = [];
    let active = -1;
    const pick = (text: string) => {
      this.hide();
      if (text) done(text);
    };
    const highlight = (index: number) => {
      active = index;
      list.childNodes.forEach((li, i) => {
        (li as HTMLElement).classList.toggle("nsdl-gv-active", i === active);
        if (i === active) (li as HTMLElement).scrollIntoView({ block: "nearest" });
      });
    };
    const refresh = () => {
      shown = suggest ? suggest(input.value) : [];
      list.replaceChildren(
        ...shown.map((item) => {
          const li = document.createElement("li");
          li.className = "nsdl-gv-suggestion";
          li.dataset.value = item.value;
          li.setAttribute("role", "option");
          li.textContent = item.value;
          if (item.note) {
            const note = document.createElement("span");
            note.className = "nsdl-gv-suggestion-note";
            note.textContent = item.note;
            li.appendChild(note);
          }
          // mousedown, not click: the input keeps the focus until the pick
          li.addEventListener("mousedown", (ev) => {
            ev.preventDefault();
            pick(item.value);
          });
          return li;
        }),
      );
      list.style.display = shown.length ? "" : "none";
      highlight(shown.length ? 0 : -1);
    };
    input.addEventListener("input", refresh);
    input.addEventListener("keydown", (ev) => {
      ev.stopPropagation(); // typing here is not a canvas or notebook shortcut
      if (ev.key === "Enter") pick(active >= 0 ? shown[active].value : input.value.trim());
      else if (ev.key === "Escape") this.hide();
      else if ((ev.key === "ArrowDown" || ev.key === "ArrowUp") && shown.length) {
        ev.preventDefault(); // the caret stays where it is
        const step = ev.key === "ArrowDown" ? 1 : -1;
        highlight((active + step + shown.length) % shown.length);
      }
    });
    this.el.replaceChildren(input, list);
    refresh();
    if (!this.open) this.place(x, y);
    input.focus();
    input.select();
    return () => {
      if (input.isConnected) refresh();
    };
  }

  hide(): void {
    this.el.style.display = "none";
    this.el.replaceChildren();
  }

  private place(x: number, y: number): void {
    Object.assign(this.el.style, { display: "block", left: `${x}px`, top: `${y}px` });
    const room = this.parent.getBoundingClientRect();
    const box = this.el.getBoundingClientRect();
    if (box.right > room.right) this.el.style.left = `${Math.max(0, x - box.width)}px`;
    if (box.bottom > room.bottom) this.el.style.top = `${Math.max(0, y - box.height)}px`;
  }

  private list(items: MenuItem[]): HTMLUListElement {
    const ul = document.createElement("ul");
    for (const item of items) {
      const li = document.createElement("li");
      li.className = "nsdl-gv-menu-item";
      li.textContent = item.submenu ? `${item.label} ▸` : item.label;
      li.dataset.label = item.label;
      if (item.disabled) li.classList.add("nsdl-gv-disabled");
      else if (item.submenu) {
        const sub = this.list(item.submenu);
        sub.className = "nsdl-gv-submenu";
        li.appendChild(sub);
      } else if (item.action) {
        const action = item.action;
        li.addEventListener("click", (ev) => {
          ev.stopPropagation();
          this.hide();
          action();
        });
      }
      ul.appendChild(li);
    }
    return ul;
  }
}

export const MENU_STYLE = `
.nsdl-gv-menu { position: absolute; z-index: 5; background: #ffffff; border: 1px solid #d0d7de;
  border-radius: 6px; box-shadow: 0 4px 14px rgba(31,35,40,0.15); padding: 4px 0; min-width: 170px; }
.nsdl-gv-menu ul { list-style: none; margin: 0; padding: 0; }
.nsdl-gv-menu-item { position: relative; padding: 4px 14px; cursor: pointer; white-space: nowrap; }
.nsdl-gv-menu-item:hover { background: #eef2ff; }
.nsdl-gv-menu-item.nsdl-gv-disabled { color: #8c959f; cursor: default; background: none; }
/* opens upward: the submenu (TensorRT precision) is the menu's last item */
.nsdl-gv-submenu { display: none; position: absolute; left: 100%; bottom: -4px; background: #ffffff;
  border: 1px solid #d0d7de; border-radius: 6px; padding: 4px 0 !important; min-width: 90px;
  box-shadow: 0 4px 14px rgba(31,35,40,0.15); }
.nsdl-gv-menu-item:hover > .nsdl-gv-submenu { display: block; }
.nsdl-gv-menu-input { font: inherit; margin: 2px 6px; width: 200px; padding: 2px 6px;
  border: 1px solid #60a5fa; border-radius: 4px; }
.nsdl-gv-suggestions { max-height: 220px; overflow-y: auto; margin-top: 2px !important; }
.nsdl-gv-suggestion { padding: 2px 10px; cursor: pointer; white-space: nowrap; display: flex;
  justify-content: space-between; gap: 12px; }
.nsdl-gv-suggestion:hover, .nsdl-gv-suggestion.nsdl-gv-active { background: #eef2ff; }
.nsdl-gv-suggestion-note { color: #6e7781; font-size: 0.9em; }
`;
