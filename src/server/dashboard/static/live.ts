/**
 * The dashboard's live updates: every element with `hx-trigger="picklebot-event from:body"`
 * refreshes itself when the event stream (`/events`) reports a change. Without a stream
 * (the server serves none, or the connection drops) it refreshes every 3 s instead.
 */
import { EVENT_TYPES } from "../../../ports/index.js";

export const DASHBOARD_JS = `
(function () {
  var EVENT_TYPES = ${JSON.stringify(EVENT_TYPES)};
  var pending = null, poll = null;
  function refresh() {
    if (pending) return;
    pending = setTimeout(function () { pending = null; htmx.trigger(document.body, "picklebot-event"); }, 250);
  }
  function startPolling() { if (!poll) poll = setInterval(refresh, 3000); }
  if (!document.querySelector('[hx-trigger*="picklebot-event"]')) return;
  if (!window.EventSource) return startPolling();
  var opened = false, source = new EventSource("/events");
  source.onopen = function () { opened = true; if (poll) { clearInterval(poll); poll = null; } };
  source.onmessage = refresh;
  EVENT_TYPES.forEach(function (type) { source.addEventListener(type, refresh); });
  source.onerror = function () { if (!opened) source.close(); startPolling(); };
})();
`;
