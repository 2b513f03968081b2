/**
 * The dashboard's live updates: every element with `hx-trigger="picklebot-event from:body"`
 * refreshes itself when the event stream (`/events`) reports changes, at most once a second
 * (a busy queue does not turn into a request per event). Without a stream
 * (the server serves none, or the connection drops) it refreshes every 3 s instead.
 * An element with `data-stream` shows the text of a reply as it is written (plain text,
 * never HTML), from that URL's Server-Sent Events. A form with `data-reset-on-success`
 * empties itself once htmx has posted it (here, not in `hx-on`: the pages' CSP allows no eval).
 * In a textarea with `data-enter-sends`, Enter sends its form (as its submit button would,
 * so the form's checks and htmx apply) and Shift+Enter adds a line; Enter that confirms an
 * input method's composition (Japanese, Chinese…) does neither. Files pasted or dropped
 * into a textarea with `data-takes-files` join its form's file input. A form's
 * `[data-form-error]` shows why htmx's post was refused (the answer's text), until the next
 * post succeeds.
 */
import { EVENT_TYPES } from "../../ports/index.js";

export const DASHBOARD_JS = `
(function () {
  var EVENT_TYPES = ${JSON.stringify(EVENT_TYPES)};
  var pending = null, poll = null;
  function refresh() {
    if (pending) return;
    pending = setTimeout(function () { pending = null; htmx.trigger(document.body, "picklebot-event"); }, 1000);
  }
  function startPolling() { if (!poll) poll = setInterval(refresh, 3000); }
  var streams = [];
  function connectStreams(root) {
    if (!window.EventSource) return;
    streams = streams.filter(function (s) { if (document.contains(s.el)) return true; s.reply.close(); return false; });
    root.querySelectorAll("[data-stream]:not([data-connected])").forEach(function (el) {
      el.setAttribute("data-connected", "1");
      var reply = new EventSource(el.getAttribute("data-stream"));
      streams.push({ el: el, reply: reply });
      function gone() { if (document.contains(el)) return false; reply.close(); return true; }
      reply.addEventListener("text", function (e) { if (!gone()) el.textContent = JSON.parse(e.data).text; });
      reply.addEventListener("tool", function (e) {
        if (gone()) return;
        var news = JSON.parse(e.data), line = document.createElement("div");
        line.className = "muted";
        line.textContent = "→ " + news.name + " " + news.summary;
        el.parentNode.insertBefore(line, el);
      });
      reply.addEventListener("end", function () { reply.close(); refresh(); });
      reply.onerror = function () { reply.close(); };
    });
  }
  document.addEventListener("htmx:load", function (e) { connectStreams(e.detail.elt); });
  document.addEventListener("keydown", function (e) {
    var box = e.target;
    if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229) return;
    if (!box.matches || !box.matches("textarea[data-enter-sends]") || !box.form) return;
    e.preventDefault();
    box.form.requestSubmit();
  });
  function takesFiles(el) { return el.matches && el.matches("textarea[data-takes-files]") && el.form; }
  function addFiles(box, files) {
    var input = box.form.querySelector('input[type="file"]');
    if (!input || !files || !files.length || !window.DataTransfer) return false;
    var all = new DataTransfer();
    [input.files, files].forEach(function (list) {
      Array.prototype.forEach.call(list, function (file) { all.items.add(file); });
    });
    input.files = all.files;
    return true;
  }
  document.addEventListener("paste", function (e) {
    if (takesFiles(e.target) && e.clipboardData && addFiles(e.target, e.clipboardData.files)) e.preventDefault();
  });
  document.addEventListener("dragover", function (e) { if (takesFiles(e.target)) e.preventDefault(); });
  document.addEventListener("drop", function (e) {
    if (takesFiles(e.target) && e.dataTransfer && addFiles(e.target, e.dataTransfer.files)) e.preventDefault();
  });
  function formError(form) { return form.querySelector ? form.querySelector("[data-form-error]") : null; }
  document.addEventListener("htmx:responseError", function (e) {
    var shown = formError(e.detail.elt);
    if (!shown) return;
    shown.textContent = e.detail.xhr.responseText;
    shown.hidden = false;
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var form = e.detail.elt;
    if (!e.detail.successful) return;
    var shown = formError(form);
    if (shown) shown.hidden = true;
    if (form.hasAttribute("data-reset-on-success")) form.reset();
  });
  connectStreams(document);
  if (!document.querySelector('[hx-trigger*="picklebot-event"]')) return;
  if (!window.EventSource) return startPolling();
  var opened = false, source = new EventSource("/events");
  source.onopen = function () { opened = true; if (poll) { clearInterval(poll); poll = null; } };
  source.onmessage = refresh;
  EVENT_TYPES.forEach(function (type) { source.addEventListener(type, refresh); });
  source.onerror = function () { if (!opened) source.close(); startPolling(); };
})();
`;
