/**
 * `/sessions`: stored conversations, searchable; a session's transcript, refreshed as new
 * messages land; and a chat box that talks to an agent from the browser. A web chat is a
 * session of its own (key `web:<agent>:<id>`): its messages are queued as chat jobs like
 * any chat's, so they survive a restart, and their replies stay in the session (nothing
 * is sent to a chat platform). While a reply is written its Stop button stops it as `/stop`
 * does in a chat (agents/session-stop.ts); in the chat box Enter sends, Shift+Enter adds a
 * line. Known secrets typed into a message are replaced by [redacted] before it is queued.
 * The chat box takes files too (a file input, or pasted or dropped into the message): they
 * become the files of the person's turn, and the session's files are served to the owner
 * (session-files.ts); the transcript shows images as thumbnails and other files as links.
 */
import { randomBytes } from "node:crypto";
import { type Context, Hono } from "hono";
import type { Child } from "hono/jsx";
import { streamSSE } from "hono/streaming";
import type { MediaStore } from "../agents/media/store.js";
import { stopSessionReply } from "../agents/session-stop.js";
import { buildTranscript } from "../agents/transcript.js";
import { isWebSessionKey, webSessionKey } from "../base/session-key.js";
import { formatTime } from "../base/time-zone.js";
import { CSRF_FIELD, type DashboardEnv } from "../http/env.js";
import { Notice } from "../http/layout.js";
import type {
  ChatAttachment,
  HistoryStore,
  Job,
  JobAdmin,
  JobQueue,
  Session,
  SessionStopper,
  UsageLedger,
} from "../ports/index.js";
import { type Column, ListTable, PostForm } from "./components.js";
import type { WebReplies } from "./replies.js";
import {
  FILE_FIELD,
  fileHeaders,
  MAX_UPLOAD_BYTES,
  sessionFiles,
  storeUploads,
  uploadsOf,
} from "./session-files.js";
import { TranscriptView } from "./transcript-view.js";

/** Sessions a list shows. */
const PAGE_SIZE = 50;
/** Newest sessions a search looks through. */
const SEARCH_SCAN = 1000;

/** What the sessions section works with. */
export interface SessionsSource {
  history: HistoryStore;
  /** The ledger the transcript reads each turn's model call from. */
  usage: UsageLedger;
  queue: JobQueue & JobAdmin;
  /** The history's media folder: where uploads are stored and session files are read. */
  media: MediaStore;
  /** Agents a new web chat may talk to; the first is the default. */
  agents: () => readonly string[];
  /** Replies being written in this process, streamed to the page. (Default: not streamed) */
  replies?: WebReplies;
  /** Stops a session's running job wherever it runs (the Stop button, as `/stop`). */
  stopper: SessionStopper;
  /**
   * Takes known secrets out of a message before it is queued (`secretValues(config)`).
   * (Default: the text as it is)
   */
  redact?: (text: string) => string;
}

/** The sessions section. */
export function sessionsRoutes(source: SessionsSource): Hono<DashboardEnv> {
  const app = new Hono<DashboardEnv>();
  app.get("/", async (c) => {
    const q = c.req.query("q")?.trim() ?? "";
    const sessions = await searchSessions(source.history, q);
    return c.render(
      <>
        <NewChat agents={source.agents()} />
        <form class="filters" method="get" action="/sessions">
          <label>
            Search (id, key, agent, title)
            <input name="q" value={q} type="search" />
          </label>
          <button type="submit">Search</button>
        </form>
        <SessionTable sessions={sessions} />
      </>,
      { title: "Sessions" },
    );
  });
  const redact = source.redact ?? ((text: string) => text);
  /** The message a form sent: its lines end in "\n" (a browser sends "\r\n"), no secret in it. */
  const messageOf = (form: Record<string, unknown>) =>
    redact(
      String(form.message ?? "")
        .replace(/\r\n?/g, "\n")
        .trim(),
    );
  /** The message and files a chat form sent, stored; or why they are refused. */
  const chatOf = async (form: Record<string, unknown>): Promise<SentChat | string> => {
    const message = messageOf(form);
    const uploads = uploadsOf(form);
    if ("problem" in uploads) return uploads.problem;
    if (message === "" && uploads.files.length === 0) {
      return "the message is empty; write something or attach a file to send";
    }
    return { message, attachments: await storeUploads(source.media, uploads.files) };
  };
  app.post("/new", async (c) => {
    const form = await c.req.parseBody({ all: true });
    const agentId = String(form.agent ?? "");
    const agents = source.agents();
    if (!agents.includes(agentId)) {
      return refuse(c, `no agent "${agentId}"; pick one of ${agents.join(", ")}`);
    }
    const chat = await chatOf(form);
    if (typeof chat === "string") return refuse(c, chat);
    const key = webSessionKey(agentId, randomBytes(4).toString("hex"));
    const session = await source.history.createSession({ key, agentId });
    await enqueueChat(source.queue, session, chat);
    return c.redirect(`/sessions/${session.id}`, 303);
  });
  app.get("/:id", async (c) => {
    const session = await source.history.getSession(c.req.param("id"));
    if (!session) return noSession(c);
    return c.render(
      <>
        {(await Transcript({ source, session, stop: stopControls(c, session) })).html}
        <ChatBox session={session} />
      </>,
      { title: session.title ?? `Session ${session.id}` },
    );
  });
  app.get("/:id/transcript", async (c) => {
    const session = await source.history.getSession(c.req.param("id"));
    if (!session) return noSession(c);
    const pending = await pendingJobs(source.queue, session.key);
    // Unchanged since the page's copy: no swap (an open tool card stays open), and no
    // transcript read.
    if (c.req.query("seen") === transcriptVersion(session, pending)) return c.body(null, 204);
    const stop = stopControls(c, session);
    return c.html((await Transcript({ source, session, pending, stop })).html);
  });
  app.get("/:id/stream", async (c) => {
    const jobId = c.req.query("job") ?? "";
    const { replies } = source;
    if (!replies || jobId === "") return c.text("404 not found: no reply stream here\n", 404);
    const job = await source.queue.get(jobId);
    const writing = job?.state === "queued" || job?.state === "running";
    return streamSSE(c, async (stream) => {
      if (!writing) return stream.writeSSE({ event: "end", data: '{"kind":"end"}' });
      // Writes in order; the stream closes only after the last one is out.
      let sent: Promise<void> = Promise.resolve();
      await new Promise<void>((resolve) => {
        const stop = replies.watch(jobId, (news) => {
          sent = sent.then(() => stream.writeSSE({ event: news.kind, data: JSON.stringify(news) }));
          if (news.kind === "end") finish();
        });
        const finish = () => {
          stop();
          resolve();
        };
        stream.onAbort(finish);
      });
      await sent;
    });
  });
  app.post("/:id/chat", async (c) => {
    const session = await source.history.getSession(c.req.param("id"));
    if (!session) return noSession(c);
    if (!isWebSessionKey(session.key)) {
      return refuse(c, "only web chats take messages here; answer other chats where they happen");
    }
    const chat = await chatOf(await c.req.parseBody({ all: true }));
    if (typeof chat === "string") return refuse(c, chat);
    await enqueueChat(source.queue, session, chat);
    return showSession(c, source, session);
  });
  app.get("/:id/files/:sha256", async (c) => {
    const session = await source.history.getSession(c.req.param("id"));
    if (!session) return noSession(c);
    const files = await sessionFiles(source.history, source.media, session.id);
    const file = files.get(c.req.param("sha256"));
    if (!file) return c.text("404 not found: this session has no such file\n", 404);
    const bytes = await source.media.read(file.sha256);
    return c.body(new Uint8Array(bytes), 200, fileHeaders(file));
  });
  app.post("/:id/stop", async (c) => {
    const session = await source.history.getSession(c.req.param("id"));
    if (!session) return noSession(c);
    await stopSessionReply(session.key, source);
    return showSession(c, source, session);
  });
  return app;
}

/** After a POST: the transcript for htmx to swap in, or the session's page. */
async function showSession(c: Context<DashboardEnv>, source: SessionsSource, session: Session) {
  if (!c.req.header("hx-request")) return c.redirect(`/sessions/${session.id}`, 303);
  const stop = stopControls(c, session);
  return c.html((await Transcript({ source, session, stop })).html);
}

/** The Stop button of a reply being written; none in read-only mode. */
function stopControls(
  c: Context<DashboardEnv>,
  session: Session,
): ((job: Job) => Child) | undefined {
  if (c.get("readOnly")) return undefined;
  const csrf = c.get("csrfToken");
  return (job) => (job.state === "running" ? <StopButton session={session} csrf={csrf} /> : null);
}

/** A chat form's message and its stored files. */
interface SentChat {
  message: string;
  attachments: ChatAttachment[];
}

/** A form refused: its reason as text for htmx (the chat box shows it), else as a page. */
function refuse(c: Context<DashboardEnv>, text: string) {
  if (c.req.header("hx-request")) return c.text(`400 not sent: ${text}\n`, 400);
  c.status(400);
  return c.render(<Notice error text={text} back="/sessions" />, { title: "Not sent" });
}

function noSession(c: Context<DashboardEnv>) {
  c.status(404);
  return c.render(<Notice error text={`No session "${c.req.param("id")}".`} back="/sessions" />, {
    title: "No such session",
  });
}

async function enqueueChat(queue: JobQueue, session: Session, chat: SentChat): Promise<Job> {
  return queue.enqueue({
    agentId: session.agentId,
    sessionKey: session.key,
    sessionId: session.id,
    message: chat.message,
    mode: "chat",
    replyTo: { kind: "silent" },
    ...(chat.attachments.length > 0 ? { attachments: chat.attachments } : {}),
  });
}

async function searchSessions(history: HistoryStore, q: string): Promise<Session[]> {
  if (q === "") return history.listSessions({ limit: PAGE_SIZE });
  const needle = q.toLowerCase();
  const all = await history.listSessions({ limit: SEARCH_SCAN });
  return all
    .filter((session) =>
      [session.id, session.key, session.agentId, session.title ?? ""].some((field) =>
        field.toLowerCase().includes(needle),
      ),
    )
    .slice(0, PAGE_SIZE);
}

/** What the transcript panel shows changes with these; the refresh skips a no-op. */
function transcriptVersion(session: Session, pending: Job[]): string {
  return `${session.messageCount}.${session.usage.output}.${pending.map((job) => `${job.id}${job.state}`).join(",")}`;
}

/** The transcript panel and a version of what it shows, for the refresh to skip no-ops. */
async function Transcript(props: {
  source: SessionsSource;
  session: Session;
  pending?: Job[];
  stop?: ((job: Job) => Child) | undefined;
}) {
  const { source, session } = props;
  const [messages, calls, pending, sent] = await Promise.all([
    source.history.messages(session.id),
    source.usage.calls({ since: 0, sessionId: session.id }),
    props.pending ?? pendingJobs(source.queue, session.key),
    source.media.sentFiles(session.id),
  ]);
  const { entries } = buildTranscript(session, messages, calls);
  const version = transcriptVersion(session, pending);
  const html = (
    <div
      id="transcript"
      hx-get={`/sessions/${session.id}/transcript?seen=${encodeURIComponent(version)}`}
      hx-trigger="picklebot-event from:body"
      hx-swap="outerHTML"
    >
      <SessionFacts session={session} />
      <TranscriptView
        entries={entries}
        pending={pending}
        streamOf={
          source.replies ? (job) => `/sessions/${session.id}/stream?job=${job.id}` : undefined
        }
        controlsOf={props.stop}
        files={{
          url: (sha256) => `/sessions/${session.id}/files/${sha256}`,
          sent: new Map(sent.map((file) => [file.callId, file])),
        }}
      />
    </div>
  );
  return { html, version };
}

/** Jobs of the key not finished yet, oldest first. */
async function pendingJobs(queue: JobAdmin, key: string): Promise<Job[]> {
  const jobs = await queue.list({ sessionKey: key, limit: PAGE_SIZE });
  return jobs
    .filter((job) => job.state === "queued" || job.state === "running" || job.state === "waiting")
    .reverse();
}

/** The columns of the sessions list. */
const SESSION_COLUMNS: Column<Session>[] = [
  {
    label: "session",
    cell: (session) => <a href={`/sessions/${session.id}`}>{session.title ?? session.id}</a>,
  },
  { label: "updated", cell: (session) => formatTime(session.updatedAt) },
  { label: "agent", cell: (session) => session.agentId },
  { label: "key", cell: (session) => session.key },
  { label: "messages", cell: (session) => session.messageCount },
];

function SessionTable(props: { sessions: Session[] }) {
  return <ListTable columns={SESSION_COLUMNS} rows={props.sessions} empty="no sessions match" />;
}

function SessionFacts(props: { session: Session }) {
  const { session } = props;
  const { usage } = session;
  return (
    <p class="muted">
      {session.agentId} · key {session.key} · {session.messageCount} messages · started{" "}
      {formatTime(session.createdAt)} · {usage.input + usage.output} tokens ·{" "}
      <a href={`/jobs?chat=${encodeURIComponent(session.key)}`}>its jobs</a>
    </p>
  );
}

function NewChat(props: { agents: readonly string[] }) {
  return (
    <PostForm action="/sessions/new" title="New web chat" upload>
      <label>
        Agent
        <select name="agent">
          {props.agents.map((agent) => (
            <option value={agent}>{agent}</option>
          ))}
        </select>
      </label>
      <MessageField />
      <button type="submit" class="primary">
        Start chat
      </button>
    </PostForm>
  );
}

function ChatBox(props: { session: Session }) {
  const { session } = props;
  if (!isWebSessionKey(session.key)) {
    return (
      <p class="muted">
        This conversation happens in {session.key}; answer it there. Start a web chat on the{" "}
        <a href="/sessions">sessions page</a>.
      </p>
    );
  }
  return (
    <PostForm
      action={`/sessions/${session.id}/chat`}
      title="Send a message"
      htmx={{ target: "#transcript" }}
      upload
    >
      <MessageField />
      <button type="submit" class="primary">
        Send
      </button>
    </PostForm>
  );
}

/**
 * A message to send: Enter sends it, Shift+Enter adds a line; files chosen, pasted or
 * dropped into it go with it (the live script, live.ts), up to the upload limit.
 */
function MessageField() {
  return (
    <>
      <label>
        Message
        <textarea
          name="message"
          data-enter-sends=""
          data-takes-files=""
          placeholder="Enter sends; Shift+Enter starts a new line; paste or drop files here"
        />
      </label>
      <label>
        Files (images, PDFs, text, audio; up to {MAX_UPLOAD_BYTES / 1024 / 1024} MiB in all)
        <input type="file" name={FILE_FIELD} multiple />
      </label>
      <p class="notice error" data-form-error="" role="alert" hidden />
    </>
  );
}

/**
 * Stops the reply being written, as `/stop` does in a chat: posts with the CSRF token,
 * and swaps the transcript with the answer (a plain POST without the script).
 */
function StopButton(props: { session: Session; csrf: string }) {
  const action = `/sessions/${props.session.id}/stop`;
  return (
    <form
      method="post"
      action={action}
      class="actions"
      hx-post={action}
      hx-target="#transcript"
      hx-swap="outerHTML"
    >
      <input type="hidden" name={CSRF_FIELD} value={props.csrf} />
      <button type="submit" class="danger">
        Stop
      </button>
    </form>
  );
}
