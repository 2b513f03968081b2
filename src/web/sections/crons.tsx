/**
 * The Crons section: every cron of `crons/` with its schedule in words and in its own
 * zone, its next run and its last runs with their results; Run now (as `picklebot cron
 * run`), and enable/disable, which edits the `enabled:` key of the cron's file in place
 * (comments kept; the file is never deleted) so the running CronWorker reloads it.
 *
 *   GET  /             the list, and the files that failed to load with their error
 *   GET  /:id          one cron: definition, next runs, last runs with their replies
 *   POST /:id/run      enqueue one run now ─► 303 to /:id
 *   POST /:id/enable   enabled: true in its file ─► 303 to /:id
 *   POST /:id/disable  enabled: false in its file ─► 303 to /:id
 *   POST /schedules/:id/cancel   cancels a reminder set in a chat ─► 303 to /
 */
import { Hono } from "hono";
import { textOf } from "../../agents/loop.js";
import { formatReplyTarget } from "../../base/chat-address.js";
import { UserError } from "../../base/errors.js";
import { truncate } from "../../base/printable.js";
import { cronKeyPrefix } from "../../base/session-key.js";
import { findCron, setCronEnabled } from "../../cron/admin.js";
import type { CronDefinition, CronDirLoad } from "../../cron/definition.js";
import { describeSchedules } from "../../cron/describe.js";
import { type CronRow, describeCrons, runCronNow } from "../../cron/worker.js";
import type { DashboardEnv, DashboardSection } from "../../http/env.js";
import type {
  Clock,
  CronStateStore,
  HistoryStore,
  Job,
  JobAdmin,
  JobQueue,
  ScheduleStore,
} from "../../ports/index.js";
import { CronDetail, CronList, type CronRun } from "./cron-pages.js";
import { ScheduleList } from "./schedule-pages.js";
import {
  notFoundPage,
  redirectWithNotice,
  refuseWritesWhenReadOnly,
  type SectionContext,
} from "./ui.js";

/** What the Crons section reads and changes. */
export interface CronsSectionDeps {
  /** Loads `crons/` with the workspace's defaults (`loadWorkspaceCrons`). */
  loadCrons: () => CronDirLoad;
  state: CronStateStore;
  /** Enqueues Run now; lists a cron's jobs by their `cron:<id>:` session keys. */
  queue: Pick<JobQueue, "enqueue"> & Pick<JobAdmin, "list">;
  /** Reads the reply a run produced. */
  history: Pick<HistoryStore, "loadContext">;
  clock: Clock;
  /** `workers.max_attempts`, given to a Run now job as the CronWorker does. */
  maxAttempts: number;
  /** The reminders and recurring tasks agents set up in chats, listed and cancelled here. */
  schedules: ScheduleStore;
}

/** Runs shown on a cron's own page. */
const RUNS_SHOWN = 10;
/** Characters of a reply shown per run. */
const REPLY_EXCERPT_CHARS = 280;

/** The Crons section, mounted at `/crons`. */
export function cronsSection(deps: CronsSectionDeps): DashboardSection {
  const app = new Hono<DashboardEnv>();
  app.use("*", refuseWritesWhenReadOnly);
  app.get("/", async (c) => {
    const load = deps.loadCrons();
    const rows = await describeCrons(load.crons, deps.state, deps.clock);
    const lastRuns = await Promise.all(rows.map((row) => lastRunsOf(deps, row.id, 1)));
    const schedules = await describeSchedules(deps.schedules, deps.clock);
    return c.render(
      <>
        <CronList
          c={c}
          crons={rows.map((row, index) => ({ row, last: lastRuns[index]?.[0] ?? null }))}
          broken={load.errors}
        />
        <ScheduleList c={c} schedules={schedules} />
      </>,
      { title: "Crons" },
    );
  });
  app.post("/schedules/:id/cancel", async (c) => {
    const id = c.req.param("id");
    const cancelled = await deps.schedules.cancel(id, deps.clock.now());
    const notice = cancelled
      ? `Cancelled ${id} (${cancelled.kind} for ${formatReplyTarget(cancelled.chat)}).`
      : `No active reminder ${id}: it already ran or was cancelled.`;
    return redirectWithNotice(c, "", notice);
  });
  app.get("/:id", (c) =>
    withCron(c, deps, async (cron, row) => {
      const runs = await lastRunsOf(deps, cron.id, RUNS_SHOWN);
      return c.render(
        <CronDetail c={c} cron={cron} row={row} runs={runs} now={deps.clock.now()} />,
        {
          title: `Cron ${cron.id}`,
        },
      );
    }),
  );
  app.post("/:id/run", (c) =>
    withCron(c, deps, async (cron) => {
      const job = await runCronNow(cron, deps.queue, deps.clock, { maxAttempts: deps.maxAttempts });
      return redirectWithNotice(c, `/${cron.id}`, `Enqueued job ${job.id}: ${cron.id} runs now.`);
    }),
  );
  app.post("/:id/enable", (c) => switchCron(c, deps, true));
  app.post("/:id/disable", (c) => switchCron(c, deps, false));
  return { path: "crons", label: "Crons", app };
}

/** Runs `handle` with the cron of `:id`, or answers the not-found page naming the ids. */
async function withCron(
  c: SectionContext,
  deps: CronsSectionDeps,
  handle: (cron: CronDefinition, row: CronRow) => Promise<Response>,
): Promise<Response> {
  const id = c.req.param("id") ?? "";
  let cron: CronDefinition;
  try {
    cron = findCron(deps.loadCrons(), id);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return notFoundPage(c, error.message, "the crons");
  }
  const [row] = await describeCrons([cron], deps.state, deps.clock);
  if (!row) throw new Error(`cron ${id} was loaded but not described`);
  return handle(cron, row);
}

function switchCron(c: SectionContext, deps: CronsSectionDeps, enabled: boolean) {
  return withCron(c, deps, async (cron, row) => {
    try {
      setCronEnabled(cron, enabled);
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      return redirectWithNotice(c, `/${cron.id}`, error.message);
    }
    const done =
      row.status === "done (one_off)" ? " It is a one-off that already ran: it stays done." : "";
    const verb = enabled ? "Enabled" : "Disabled";
    return redirectWithNotice(
      c,
      `/${cron.id}`,
      `${verb} ${cron.id} (enabled: ${enabled} in ${cron.file}).${done}`,
    );
  });
}

/** The newest runs of a cron (scheduled and Run now), with their replies. */
async function lastRunsOf(deps: CronsSectionDeps, id: string, limit: number): Promise<CronRun[]> {
  const jobs = await deps.queue.list({ sessionKeyPrefix: cronKeyPrefix(id), limit });
  return Promise.all(jobs.map(async (job) => ({ job, reply: await replyOf(deps, job) })));
}

async function replyOf(deps: CronsSectionDeps, job: Job): Promise<string | null> {
  if (job.sessionId === null || job.state !== "done") return null;
  const messages = await deps.history.loadContext(job.sessionId, 4);
  const last = messages.filter((message) => message.role === "assistant").at(-1);
  const text = last ? textOf(last) : "";
  if (text === "") return null;
  return truncate(text, REPLY_EXCERPT_CHARS);
}
