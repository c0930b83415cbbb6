/** The page's style sheet, served as assets/console.css (kept in TypeScript so the build ships it). */
export const CONSOLE_STYLE = `
:root { --fg: #1d2330; --muted: #5d6678; --line: #dde2ea; --bg: #f6f7f9; --card: #fff; --accent: #2456c7;
  --warn: #a35a00; --bad: #b3261e; --ok: #1f7a3d; font-family: system-ui, sans-serif; color: var(--fg); }
body { margin: 0; background: var(--bg); font-size: 14px; }
header { display: flex; gap: 16px; align-items: center; padding: 10px 20px; background: #1d2330; color: #fff; }
header h1 { font-size: 16px; margin: 0; font-weight: 600; }
header a { color: #cfd8ea; margin-right: 12px; text-decoration: none; cursor: pointer; }
header a.active { color: #fff; text-decoration: underline; }
#session { margin-left: auto; color: #cfd8ea; font-size: 12px; }
main { padding: 16px 20px; }
#notice:empty, #access:empty { display: none; }
#access { margin: 10px 20px 0; padding: 6px 12px; border-radius: 4px; background: #eef1f6; color: var(--muted); }
#notice { margin: 10px 20px 0; padding: 8px 12px; border-radius: 4px; background: #fff4e0; border: 1px solid #f0c27a; }
#notice.error { background: #fdecea; border-color: #f1a9a3; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; margin-bottom: 14px; }
.card h2 { font-size: 15px; margin: 0 0 8px; }
.card h2 small, .card h3 small { color: var(--muted); font-weight: normal; margin-left: 8px; }
.card h3 { font-size: 14px; margin: 12px 0 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 10px; font-size: 11px; margin-right: 4px; color: #fff; }
.badge.stalled, .badge.bad { background: var(--bad); }
.badge.no-consumers, .badge.warn { background: var(--warn); }
.badge.ok { background: var(--ok); }
.badge.off { background: var(--muted); }
button { font: inherit; padding: 3px 9px; border: 1px solid var(--line); background: #fff; border-radius: 4px; cursor: pointer; }
button.danger { border-color: #e3a6a1; color: var(--bad); }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
input, select { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; }
form.inline { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.muted { color: var(--muted); }
.loss { color: var(--bad); font-weight: 600; }
a.link { color: var(--accent); cursor: pointer; text-decoration: underline; }
pre, .tree { font-family: ui-monospace, monospace; font-size: 12px; margin: 0; white-space: pre-wrap; word-break: break-all; }
.tree ul { list-style: none; margin: 0; padding-left: 16px; }
.tree .key { color: #7a3e9d; }
.tree .str { color: #1f6f43; }
.tree .num { color: #2456c7; }
td .ident, td.num { white-space: nowrap; }
.ident { font-family: ui-monospace, monospace; font-size: 12px; }
tr.problem td { background: #fff6f5; }
tr.problem td:first-child { box-shadow: inset 3px 0 0 var(--bad); }
.figures { display: flex; flex-wrap: wrap; gap: 18px; margin: 4px 0 8px; }
.figures div { display: flex; flex-direction: column; }
.figures b { font-size: 18px; font-variant-numeric: tabular-nums; }
.figures span { color: var(--muted); font-size: 12px; }
.error-text { color: var(--bad); }
.wide { display: inline-block; min-width: 18em; }
button { white-space: nowrap; }
svg polyline { fill: none; stroke-width: 1.5; }
svg polyline.pending { stroke: var(--accent); }
svg polyline.lag { stroke: var(--warn); }
svg polyline.dead { stroke: var(--bad); }
svg polyline.processed { stroke: var(--ok); }
svg.chart text { font-size: 11px; fill: var(--muted); }
svg.chart text.legend.pending { fill: var(--accent); }
svg.chart text.legend.lag { fill: var(--warn); }
svg.chart text.legend.dead { fill: var(--bad); }
svg.chart text.legend.processed { fill: var(--ok); }
svg .axis { stroke: var(--line); }
details summary { cursor: pointer; color: var(--accent); }
.pager { margin-top: 8px; display: flex; gap: 8px; }
`;
