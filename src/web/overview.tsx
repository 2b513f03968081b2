/**
 * The overview at `/`: workers and their restarts, the queue by state, throughput and
 * failures over the last hour, the chat buses, the next cron runs, and in distributed mode
 * the instances and the leader. The panel refreshes itself on every event (`/live`).
 */
import { Hono } from "hono";
import { CHAT_PLATFORM_KINDS } from "../base/chat-address.js";
import { formatTime } from "../base/time-zone.js";
import type { CronRow } from "../cron/describe.js";
import type { DashboardEnv } from "../http/env.js";
import { type Clock, JOB_STATES, type JobAdmin, type JobState } from "../ports/index.js";
import type { ClusterStatus } from "../storage/cluster-status.js";

/** The window "throughput" counts over. */
const THROUGHPUT_WINDOW_MS = 60 * 60_000;
/** Bars the window is drawn in (10 minutes each). */
const THROUGHPUT_BARS = 6;
/** Jobs of each end state read to count the last hour (the newest first). */
const THROUGHPUT_SCAN = 5000;
/** Crons listed, soonest first. */
const CRONS_SHOWN = 8;

/** What `/healthz` reports, as far as the overview shows it. */
export interface HealthView {
  healthy: boolean;
  /** Why it is not healthy, one sentence each (absent when healthy). */
  unhealthy?: string[];
  workers: Array<{ name: string; state: string; restarts: number; lastError: string | null }>;
  /** `refusal`: why the platform refuses the login, with the fix (also in `unhealthy`). */
  buses: Array<{ platform: string; state: string; refusal?: string }>;
  queue: Record<JobState, number>;
}

/** Where the overview reads from (the running server). */
export interface OverviewSource {
  health(): Promise<HealthView>;
  crons(): Promise<CronRow[]>;
  /** The cluster in distributed mode, null for a single process. */
  cluster(): Promise<ClusterStatus | null>;
  jobs: JobAdmin;
  clock: Clock;
}

/** `GET /` (the page) and `GET /live` (its panel, for refreshes). */
export function overviewRoutes(source: OverviewSource): Hono<DashboardEnv> {
  const app = new Hono<DashboardEnv>();
  app.get("/", async (c) => c.render(<Live>{await Panel(source)}</Live>, { title: "Overview" }));
  app.get("/live", async (c) => c.html(<Live>{await Panel(source)}</Live>));
  return app;
}

function Live(props: { children?: unknown }) {
  return (
    <div id="overview" hx-get="/live" hx-trigger="picklebot-event from:body" hx-swap="outerHTML">
      {props.children}
    </div>
  );
}

async function Panel(source: OverviewSource) {
  const [health, crons, cluster, throughput] = await Promise.all([
    source.health(),
    source.crons(),
    source.cluster(),
    lastHour(source.jobs, source.clock.now()),
  ]);
  return (
    <div class="cards">
      <Queue queue={health.queue} healthy={health.healthy} reasons={health.unhealthy ?? []} />
      <Throughput bars={throughput} />
      <Workers workers={health.workers} />
      <Buses buses={health.buses} />
      <Crons crons={crons} />
      {cluster ? <Cluster cluster={cluster} /> : null}
    </div>
  );
}

function Queue(props: { queue: Record<JobState, number>; healthy: boolean; reasons: string[] }) {
  return (
    <section class="card" id="queue">
      <h2>Queue</h2>
      <p class={props.healthy ? "good" : "bad"}>
        {props.healthy
          ? "healthy"
          : `unhealthy: ${props.reasons.join("; ") || "a worker restarts or a bus is down"}`}
      </p>
      <dl>
        {JOB_STATES.map((state) => (
          <>
            <dt>
              <a href={`/jobs?state=${state}`}>{state}</a>
            </dt>
            <dd class={`state-${state}`} data-state={state}>
              {props.queue[state] ?? 0}
            </dd>
          </>
        ))}
      </dl>
    </section>
  );
}

/** Jobs done, failed and stopped in one slice of the last hour. */
interface Bar {
  from: number;
  done: number;
  failed: number;
  stopped: number;
}

async function lastHour(jobs: JobAdmin, now: number): Promise<Bar[]> {
  const width = THROUGHPUT_WINDOW_MS / THROUGHPUT_BARS;
  const start = now - THROUGHPUT_WINDOW_MS;
  const bars: Bar[] = Array.from({ length: THROUGHPUT_BARS }, (_, i) => ({
    from: start + i * width,
    done: 0,
    failed: 0,
    stopped: 0,
  }));
  for (const state of ["done", "failed", "stopped"] as const) {
    for (const job of await jobs.list({ state, limit: THROUGHPUT_SCAN })) {
      const bar = bars[Math.floor((job.updatedAt - start) / width)];
      if (bar) bar[state] += 1;
    }
  }
  return bars;
}

function Throughput(props: { bars: Bar[] }) {
  const done = props.bars.reduce((sum, bar) => sum + bar.done, 0);
  const failed = props.bars.reduce((sum, bar) => sum + bar.failed, 0);
  const stopped = props.bars.reduce((sum, bar) => sum + bar.stopped, 0);
  return (
    <section class="card" id="throughput">
      <h2>Last hour</h2>
      <p>
        <span class="good">{done} done</span>,{" "}
        <span class={failed ? "bad" : ""}>{failed} failed</span>
        {stopped ? <span class="state-stopped">, {stopped} stopped</span> : null}
      </p>
      <dl>
        {props.bars.map((bar) => (
          <>
            <dt class="muted">{formatTime(bar.from).slice(11, 16)}</dt>
            <dd>
              {bar.done} done{bar.failed ? `, ${bar.failed} failed` : ""}
              {bar.stopped ? `, ${bar.stopped} stopped` : ""}
            </dd>
          </>
        ))}
      </dl>
    </section>
  );
}

function Workers(props: { workers: HealthView["workers"] }) {
  return (
    <section class="card" id="workers">
      <h2>Workers</h2>
      <dl>
        {props.workers.map((worker) => (
          <>
            <dt>{worker.name}</dt>
            <dd class={worker.state === "running" ? "" : "bad"}>
              {worker.state}, {worker.restarts} restarts
              {worker.lastError ? <div class="muted">last error: {worker.lastError}</div> : null}
            </dd>
          </>
        ))}
      </dl>
    </section>
  );
}

/** The platforms one may enable, as the server's start-up summary names them too. */
const NO_BUS_HINT = CHAT_PLATFORM_KINDS.join(" or ");

function Buses(props: { buses: HealthView["buses"] }) {
  return (
    <section class="card" id="buses">
      <h2>Chat buses</h2>
      {props.buses.length === 0 ? (
        <p class="muted">none (enable {NO_BUS_HINT} in picklebot.yaml)</p>
      ) : (
        <dl>
          {props.buses.map((bus) => (
            <>
              <dt>{bus.platform}</dt>
              <dd class={bus.state === "connected" ? "good" : "bad"} title={bus.refusal}>
                {bus.refusal === undefined ? bus.state : `${bus.state}, login refused`}
              </dd>
            </>
          ))}
        </dl>
      )}
    </section>
  );
}

function Crons(props: { crons: CronRow[] }) {
  const next = props.crons
    .filter((cron) => cron.nextRunAt !== null)
    .sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0))
    .slice(0, CRONS_SHOWN);
  return (
    <section class="card" id="crons">
      <h2>Next cron runs</h2>
      {next.length === 0 ? (
        <p class="muted">none scheduled (drop a YAML file into crons/)</p>
      ) : (
        <dl>
          {next.map((cron) => (
            <>
              <dt>{cron.id}</dt>
              <dd>
                {formatTime(cron.nextRunAt)} <span class="muted">({cron.agent})</span>
              </dd>
            </>
          ))}
        </dl>
      )}
    </section>
  );
}

function Cluster(props: { cluster: ClusterStatus }) {
  const { instances, leader, now } = props.cluster;
  return (
    <section class="card" id="cluster">
      <h2>Instances</h2>
      <p>
        leader: <strong>{leader ? leader.holder : "none (no instance holds the lease)"}</strong>
      </p>
      <dl>
        {instances.map((instance) => (
          <>
            <dt>{instance.id}</dt>
            <dd>
              {instance.hostname} pid {instance.pid}, v{instance.version}, heartbeat{" "}
              {((now - instance.heartbeatAt) / 1000).toFixed(1)} s ago
            </dd>
          </>
        ))}
      </dl>
    </section>
  );
}
