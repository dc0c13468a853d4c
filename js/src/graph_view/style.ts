// Styles of the GraphView, scoped under .nsdl-graph-view (injected with the view).
import { BREADCRUMB_HEIGHT } from "./breadcrumb";
import { V } from "./vocabulary";

/** Class of the anywidget host element (its parent given to `render`). */
export const HOST = "nsdl-graph-host";

export const STYLE = `
.${HOST} { min-width: 0; }
.nsdl-graph-view { display: flex; flex-direction: column; height: var(--nsdl-gv-height, 560px);
  border: 1px solid #d0d7de; border-radius: 6px; overflow: hidden; background: #ffffff;
  font: 12px ${V.font}; color: ${V.text.dark}; }
.nsdl-gv-toolbar { display: flex; flex-wrap: nowrap; gap: 4px; align-items: center; padding: 4px 6px;
  border-bottom: 1px solid #d0d7de; background: #f6f8fa; overflow-x: auto; overflow-y: hidden;
  scrollbar-width: thin; flex: 0 0 auto; }
.nsdl-gv-toolbar > * { flex: 0 0 auto; white-space: nowrap; }
.nsdl-gv-toolbar.nsdl-gv-compact { gap: 2px; padding: 3px 4px; }
.nsdl-gv-compact .nsdl-gv-btn { padding: 1px 5px; font-size: 11px; }
.nsdl-gv-compact .nsdl-gv-search { width: auto; flex: 1 0 120px; min-width: 120px; }
.nsdl-gv-btn { font: inherit; padding: 2px 8px; border: 1px solid #d0d7de; border-radius: 4px;
  background: #ffffff; cursor: pointer; color: #1f2328; }
.nsdl-gv-btn:hover { background: #eef2ff; }
.nsdl-gv-btn.nsdl-gv-on { background: #dbeafe; border-color: #60a5fa; }
.nsdl-gv-search { font: inherit; margin-left: auto; width: 240px; padding: 2px 6px;
  border: 1px solid #d0d7de; border-radius: 4px; }
.nsdl-gv-search-info { color: #57606a; min-width: 60px; }
.nsdl-gv-stage { position: relative; flex: 1; min-height: 0; }
.nsdl-gv-canvas { position: absolute; inset: 0; width: 100%; height: 100%; cursor: grab;
  touch-action: none; }
.nsdl-gv-tooltip { position: absolute; display: none; pointer-events: none; white-space: pre;
  background: rgba(31,35,40,0.92); color: #fff; padding: 4px 8px; border-radius: 4px;
  font: 11px ui-monospace, SFMono-Regular, Menlo, monospace; max-width: 420px; overflow: hidden;
  z-index: 2; }
.nsdl-gv-foot { display: flex; flex: 0 0 auto; align-items: center; gap: 12px; padding: 3px 8px;
  border-top: 1px solid #d0d7de; background: #f6f8fa; min-width: 0; white-space: nowrap; }
.nsdl-gv-legend { display: flex; flex: 0 1 auto; align-items: center; gap: 6px; min-width: 0; }
.nsdl-gv-legend-title { flex: 0 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; }
.nsdl-gv-legend-bar { flex: 0 1 160px; min-width: 40px; height: 10px; border-radius: 2px; }
.nsdl-gv-legend-min, .nsdl-gv-legend-max { flex: 0 0 auto; color: #57606a; }
.nsdl-gv-status { flex: 0 1 auto; min-width: 0; margin-left: auto; color: #57606a;
  overflow: hidden; text-overflow: ellipsis; }
.nsdl-gv-breadcrumb { position: absolute; left: 0; right: 0; top: 0; height: ${BREADCRUMB_HEIGHT}px;
  box-sizing: border-box; padding: 4px 8px; background: rgba(246,248,250,0.9); border-bottom: 1px solid #eaeef2;
  color: #57606a; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; z-index: 1;
  pointer-events: none; }
.nsdl-gv-crumb { color: ${V.frame.text}; cursor: pointer; font-weight: 600; pointer-events: auto; }
.nsdl-gv-crumb:hover { text-decoration: underline; }
.nsdl-gv-minimap { position: absolute; right: 8px; bottom: 8px; padding: 3px; z-index: 1;
  background: rgba(255,255,255,0.92); border: 1px solid #d0d7de; border-radius: 4px;
  cursor: pointer; touch-action: none; line-height: 0; }
.nsdl-gv-minimap canvas { display: block; }
.nsdl-gv-minimap-view { position: absolute; margin: 3px; box-sizing: border-box;
  border: 1.5px solid #2563eb; background: rgba(37,99,235,0.12); pointer-events: none; }
.nsdl-gv-band { position: absolute; display: none; border: 1px dashed #2563eb;
  background: rgba(37,99,235,0.08); pointer-events: none; }
`;
