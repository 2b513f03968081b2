/**
 * `/jobs`: the queue filtered by state, agent and chat (session key), refreshed live; a
 * job's page with its attempts and errors, its session, its parent and subagent jobs,
 * and the Retry (failed) and Cancel (queued, waiting, running) actions.
 */
import { type Context, Hono } from "hono";
import { raw } from "hono/html";
import {
  type JobTurn,
  readTranscript,
  type TranscriptSource,
  turnOfJob,
} from "../agents/transcript.js";
import { formatReplyTarget } from "../base/chat-address.js";
import { truncate } from "../base/printable.js";
import { formatTime } from "../base/time-zone.js";
import type { DashboardEnv } from "../http/env.js";
import { Notice } from "../http/layout.js";
import {
  JOB_STATES,
  type Job,
  type JobAdmin,
  type JobState,
  RESUME_MARKER,
  type SessionStopper,
} from "../ports/index.js";
import { ActionForm, type Column, JobStateBadge, ListTable } from "./components.js";
import { renderMarkdown } from "./markdown.js";
import { noticeOf, redirectWithNotice } from "./sections/ui.js";

/** Jobs a list page shows. */
const PAGE_SIZE = 50;
/** Jobs scanned for an agent filter (the queue filters state and chat itself). */
const AGENT_SCAN = 1000;

/** What the jobs section works with. */
export interface JobsSource {
  jobs: JobAdmin;
  /** Stops a running job's session wherever it runs (the server's `/stop`). */
  stopper: SessionStopper;
  /** Where a job's message and reply are read, from its session. */
  transcripts: TranscriptSource;
}

/** Filters of the list, from the query string. */
interface JobQuery {
  state: JobState | undefined;
  agent: string;
  chat: string;
}

/** The jobs section. */
export function jobsRoutes(source: JobsSource): Hono<DashboardEnv> {
  const app = new Hono<DashboardEnv>();
  app.get("/", async (c) => {
    const query = readQuery(c);
    if (query instanceof Response) return query;
    return c.render(
      <>
        <Filters query={query} />
        <JobTable jobs={await listJobs(source.jobs, query)} query={query} />
      </>,
      { title: "Jobs" },
    );
  });
  app.get("/live", async (c) => {
    const query = readQuery(c);
    if (query instanceof Response) return query;
    return c.html(<JobTable jobs={await listJobs(source.jobs, query)} query={query} />);
  });
  app.get("/:id", async (c) => {
    const job = await source.jobs.get(c.req.param("id"));
    if (!job) {
      c.status(404);
      return c.render(<NoJob id={c.req.param("id")} />, { title: "No such job" });
    }
    const subagents = await source.jobs.list({ parentId: job.id, limit: 1000 });
    const turn = await turnOf(source.transcripts, job);
    return c.render(<JobPage job={job} turn={turn} subagents={subagents} notice={noticeOf(c)} />, {
      title: `Job ${job.id}`,
    });
  });
  app.post("/:id/retry", (c) => act(c, source, retry));
  app.post("/:id/cancel", (c) => act(c, source, cancel));
  return app;
}

/** What an action did: a note for the job's page, or why it was refused (409). */
type Outcome = { done: string } | { refused: string };

async function act(
  c: Context<DashboardEnv>,
  source: JobsSource,
  action: (job: Job, source: JobsSource) => Promise<Outcome>,
): Promise<Response> {
  const id = c.req.param("id") ?? "";
  const job = await source.jobs.get(id);
  if (!job) {
    c.status(404);
    return c.render(<NoJob id={id} />, { title: "No such job" });
  }
  const outcome = await action(job, source);
  if ("done" in outcome) {
    return redirectWithNotice(c, `/${encodeURIComponent(id)}`, `Job ${id}: ${outcome.done}.`);
  }
  c.status(409);
  return c.render(<Notice error text={outcome.refused} back={`/jobs/${id}`} />, {
    title: `Job ${id}`,
  });
}

async function retry(job: Job, { jobs }: JobsSource): Promise<Outcome> {
  if (await jobs.retryFailed(job.id)) return { done: "requeued with a fresh attempt budget" };
  const why =
    job.state === "stopped"
      ? "a stopped job is not run again: send its message again"
      : "only failed jobs can be retried";
  return { refused: `job ${job.id} is ${job.state}; ${why}` };
}

async function cancel(job: Job, { jobs, stopper }: JobsSource): Promise<Outcome> {
  if (job.state === "running") {
    if (await stopper.stop(job.sessionKey)) return { done: "stopping (as /stop in its chat)" };
    return { refused: `job ${job.id} just stopped running; reload to see its state` };
  }
  if (await jobs.requestStop(job.id))
    return { done: "cancelled: it ends at once, with its subagent jobs" };
  return {
    refused: `job ${job.id} is ${job.state}; only queued, waiting and running jobs can be cancelled`,
  };
}

function readQuery(c: Context<DashboardEnv>): JobQuery | Response {
  const state = c.req.query("state") || undefined;
  if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) {
    return c.text(
      `400 bad request: state must be one of ${JOB_STATES.join(", ")}; found "${state}"\n`,
      400,
    );
  }
  return {
    state: state as JobState | undefined,
    agent: c.req.query("agent")?.trim() ?? "",
    chat: c.req.query("chat")?.trim() ?? "",
  };
}

async function listJobs(jobs: JobAdmin, query: JobQuery): Promise<Job[]> {
  const list = await jobs.list({
    state: query.state,
    sessionKey: query.chat || undefined,
    limit: query.agent ? AGENT_SCAN : PAGE_SIZE,
  });
  return (query.agent ? list.filter((job) => job.agentId === query.agent) : list).slice(
    0,
    PAGE_SIZE,
  );
}

function queryString(query: JobQuery): string {
  const params = new URLSearchParams();
  if (query.state) params.set("state", query.state);
  if (query.agent) params.set("agent", query.agent);
  if (query.chat) params.set("chat", query.chat);
  const text = params.toString();
  return text ? `?${text}` : "";
}

function Filters(props: { query: JobQuery }) {
  const { query } = props;
  return (
    <form class="filters" method="get" action="/jobs">
      <label>
        State
        <select name="state">
          <option value="">any</option>
          {JOB_STATES.map((state) => (
            <option value={state} selected={query.state === state}>
              {state}
            </option>
          ))}
        </select>
      </label>
      <label>
        Agent
        <input name="agent" value={query.agent} placeholder="any" size={10} />
      </label>
      <label>
        Chat (session key)
        <input name="chat" value={query.chat} placeholder="e.g. telegram:42" size={16} />
      </label>
      <button type="submit">Filter</button>
    </form>
  );
}

/** The columns of the jobs list. */
const JOB_COLUMNS: Column<Job>[] = [
  { label: "job", cell: (job) => <a href={`/jobs/${job.id}`}>{job.id}</a> },
  { label: "state", cell: (job) => <JobStateBadge job={job} /> },
  { label: "agent", cell: (job) => job.agentId },
  { label: "chat", cell: (job) => job.sessionKey },
  { label: "message", cell: messageCell },
  { label: "attempts", cell: (job) => `${job.attempts}/${job.maxAttempts}` },
  { label: "updated", cell: (job) => formatTime(job.updatedAt) },
  { label: "last error", cell: (job) => truncate(job.lastError ?? "", 80), class: "bad" },
];

/**
 * The start of the job's message; a checkpointed job's message is in its session (the
 * job row keeps only the resume marker), shown on the job's page.
 */
function messageCell(job: Job) {
  if (job.message === RESUME_MARKER) return <span class="muted">in its session</span>;
  return truncate(job.message.replace(/\s+/g, " "), 60);
}

function JobTable(props: { jobs: Job[]; query: JobQuery }) {
  return (
    <div
      id="jobs"
      hx-get={`/jobs/live${queryString(props.query)}`}
      hx-trigger="picklebot-event from:body"
      hx-swap="outerHTML"
    >
      <ListTable
        columns={JOB_COLUMNS}
        rows={props.jobs}
        empty="no jobs match"
        rowAttributes={(job) => ({ "data-job": job.id })}
      />
    </div>
  );
}

/** The job's message and reply as its session stored them. */
async function turnOf(transcripts: TranscriptSource, job: Job): Promise<JobTurn> {
  const transcript = job.sessionId ? await readTranscript(transcripts, job.sessionId) : null;
  return transcript ? turnOfJob(transcript, job.id) : { message: null, reply: null };
}

function JobPage(props: { job: Job; turn: JobTurn; subagents: Job[]; notice: string | undefined }) {
  const { job } = props;
  return (
    <>
      <Notice text={props.notice} />
      <div class="card">
        <dl>
          <dt>state</dt>
          <dd>
            <JobStateBadge job={job} />
            {job.stopRequested && job.state !== "stopped" ? (
              <span class="muted"> (stop requested)</span>
            ) : null}
          </dd>
          <dt>agent</dt>
          <dd>{job.agentId}</dd>
          <dt>chat</dt>
          <dd>
            <a href={`/jobs?chat=${encodeURIComponent(job.sessionKey)}`}>{job.sessionKey}</a>
          </dd>
          <dt>session</dt>
          <dd>
            {job.sessionId ? <a href={`/sessions/${job.sessionId}`}>{job.sessionId}</a> : "-"}
          </dd>
          <dt>reply to</dt>
          <dd>{formatReplyTarget(job.replyTo)}</dd>
          <dt>attempts</dt>
          <dd>
            {job.attempts}/{job.maxAttempts}
          </dd>
          <dt>created</dt>
          <dd>{formatTime(job.createdAt)}</dd>
          <dt>run at</dt>
          <dd>{formatTime(job.runAt)}</dd>
          <dt>parent job</dt>
          <dd>{job.parentId ? <a href={`/jobs/${job.parentId}`}>{job.parentId}</a> : "-"}</dd>
          <dt>message</dt>
          <dd>
            {job.checkpointed && props.turn.message === null ? (
              <span class="muted">in the session's history (checkpointed)</span>
            ) : (
              raw(renderMarkdown(props.turn.message ?? job.message))
            )}
          </dd>
          <dt>reply</dt>
          <dd class="reply-text">
            {props.turn.reply === null ? (
              <span class="muted">none yet</span>
            ) : (
              raw(renderMarkdown(props.turn.reply))
            )}
          </dd>
        </dl>
        <Actions job={job} />
      </div>
      <h2>Subagent jobs</h2>
      {props.subagents.length === 0 ? (
        <p class="muted">none</p>
      ) : (
        <ul>
          {props.subagents.map((child) => (
            <li>
              <a href={`/jobs/${child.id}`}>{child.id}</a> {child.agentId},{" "}
              <JobStateBadge job={child} />
            </li>
          ))}
        </ul>
      )}
      <h2>Errors</h2>
      {job.errors.length === 0 ? (
        <p class="muted">none</p>
      ) : (
        <ol>
          {job.errors.map((error) => (
            <li>
              attempt {error.attempt} at {formatTime(error.at)}:{" "}
              <span class="bad">{error.message}</span>
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

function Actions(props: { job: Job }) {
  const { job } = props;
  const canCancel = job.state === "queued" || job.state === "waiting" || job.state === "running";
  return (
    <div class="actions">
      {job.state === "failed" ? (
        <ActionForm action={`/jobs/${job.id}/retry`}>
          <button type="submit" class="primary">
            Retry
          </button>
        </ActionForm>
      ) : null}
      {canCancel ? (
        <ActionForm action={`/jobs/${job.id}/cancel`}>
          <button type="submit" class="danger">
            Cancel
          </button>
        </ActionForm>
      ) : null}
    </div>
  );
}

function NoJob(props: { id: string }) {
  return <Notice error text={`No job "${props.id}".`} back="/jobs" />;
}
