/** The dashboard's stylesheet: light and dark (prefers-color-scheme), readable at 375 px. */
export const DASHBOARD_CSS = `
:root { --bg: #fafafa; --fg: #1d1d1f; --muted: #6b6b70; --card: #fff; --line: #dedee3;
  --accent: #2f6f3e; --bad: #b3261e; --warn: #8a5a00; --code: #f0f0f3; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #141416; --fg: #e8e8ea; --muted: #a0a0a8; --card: #1e1e22; --line: #34343a;
    --accent: #7bc88a; --bad: #f2867d; --warn: #e7b75f; --code: #2a2a30; }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; overflow-wrap: anywhere; }
header { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center;
  padding: .6rem 1rem; border-bottom: 1px solid var(--line); background: var(--card); }
header .brand { font-weight: 700; color: var(--accent); text-decoration: none; }
nav { display: flex; flex-wrap: wrap; gap: .1rem .8rem; }
nav a { color: var(--fg); text-decoration: none; }
nav a[aria-current="page"] { color: var(--accent); font-weight: 600; text-decoration: underline; }
main { max-width: 70rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: .2rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.4rem 0 .5rem; }
a { color: var(--accent); }
.badge { display: inline-block; font-size: .75rem; line-height: 1.4; padding: .05rem .5rem;
  border: 1px solid currentColor; border-radius: 1rem; color: var(--muted); white-space: nowrap; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 16rem), 1fr)); gap: .8rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .7rem .9rem;
  margin: 0 0 .8rem; min-width: 0; }
.cards > .card { margin: 0; }
.card h2 { margin-top: 0; }
h3 { font-size: 1rem; margin: 0 0 .4rem; }
.muted, .state-stopped { color: var(--muted); }
.state-failed, .state-disabled, .state-broken, .state-revoked, .bad, .error { color: var(--bad); }
.state-running, .state-waiting, .state-queued, .state-pending, .warn { color: var(--warn); }
.state-done, .state-scheduled, .state-loaded, .state-connected, .good { color: var(--accent); }
.notice { background: var(--card); border: 1px solid var(--line); border-left: 4px solid var(--accent);
  border-radius: .4rem; padding: .5rem .8rem; margin: 0 0 .8rem; }
.notice.error { border-left-color: var(--bad); }
.scroll-x { width: 100%; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: .85rem; overflow-wrap: normal; white-space: nowrap; }
td { overflow-wrap: normal; }
th.number, td.number { text-align: right; font-variant-numeric: tabular-nums; }
tfoot td { font-weight: 600; border-bottom: 0; border-top: 2px solid var(--line); }
td .actions { margin: 0; }
@media (max-width: 40rem) {
  table.list, table.list tbody, table.list tfoot, table.list tr, table.list td { display: block; }
  table.list thead { display: none; }
  table.list tr { border: 1px solid var(--line); border-radius: .5rem; margin-bottom: .6rem; background: var(--card); padding: .2rem 0; }
  table.list td { border: 0; padding: .15rem .6rem; overflow-wrap: anywhere; text-align: left; }
  table.list td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); font-size: .85rem; }
}
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; min-width: 0; }
dd > p:first-child { margin-top: 0; }
dd > p:last-child { margin-bottom: 0; }
.actions { display: flex; flex-wrap: wrap; gap: .4rem; align-items: end; margin: .6rem 0 .8rem; }
.actions .actions { margin: 0; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: 1rem; }
label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
input, select, textarea, button { font: inherit; color: var(--fg); background: var(--card);
  border: 1px solid var(--line); border-radius: .35rem; padding: .3rem .5rem; max-width: 100%; }
textarea { width: 100%; min-height: 4.5rem; }
button { cursor: pointer; font-weight: 600; }
button:hover { border-color: var(--fg); }
button.primary { background: var(--accent); color: var(--bg); border-color: var(--accent); }
button.danger { background: var(--bad); color: var(--bg); border-color: var(--bad); }
meter { width: 6rem; max-width: 100%; }
pre, code { background: var(--code); border-radius: .3rem; font-size: .9em; }
code { padding: 0 .2rem; }
pre { padding: .5rem; overflow-x: auto; white-space: pre-wrap; }
.msg { background: var(--card); border: 1px solid var(--line); border-radius: .5rem;
  padding: .5rem .8rem; margin: .6rem 0; }
.msg.user { border-left: 4px solid var(--accent); }
.msg.assistant { border-left: 4px solid var(--muted); }
.msg .who { font-size: .8rem; color: var(--muted); }
.msg p { margin: .3rem 0; }
figure.file { margin: .4rem 0; }
figure.file img.thumbnail { display: block; max-width: min(240px, 100%); max-height: 240px;
  border: 1px solid var(--line); border-radius: .4rem; }
figure.file figcaption { font-size: .9rem; overflow-wrap: anywhere; }
details.tool { border: 1px dashed var(--line); border-radius: .4rem; padding: .3rem .6rem; margin: .4rem 0; }
details.tool summary { cursor: pointer; font-family: ui-monospace, monospace; font-size: .9rem; }
details.tool.error summary { color: var(--bad); }
.compaction { border: 2px solid var(--warn); border-radius: .5rem; padding: .5rem .8rem; margin: .8rem 0; }
.compaction .who { color: var(--warn); font-weight: 600; }
.reply { white-space: pre-wrap; }
.login { max-width: 22rem; margin: 3rem auto; }
`;
