/**
 * The dashboard in-process for HTTP tests: the real HTTP app (access, CSRF, layout, every
 * section) over real SQLite storage in a temp workspace, called with `app.request()`. The
 * server's live parts the overview reads (worker health, buses) are given as plain data,
 * and the session stopper records the keys it was asked to stop. `request` asks as the
 * owner (with the access token), `anonymous` as anyone else.
 */
import type { Hono } from "hono";
import { MediaStore } from "../../src/agents/media/store.js";
import { systemClock } from "../../src/base/clock.js";
import type { Config } from "../../src/config/index.js";
import { loadWorkspaceCrons } from "../../src/cron/admin.js";
import { describeCrons } from "../../src/cron/describe.js";
import { resolveAccess } from "../../src/http/access.js";
import { httpApp } from "../../src/http/endpoint.js";
import type { ClaimedJob, Job, NewJob, Storage } from "../../src/ports/index.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { type ClusterStatus, describeCluster } from "../../src/storage/cluster-status.js";
import { openStorage } from "../../src/storage/index.js";
import { composeDashboard } from "../../src/web/index.js";
import type { HealthView } from "../../src/web/overview.js";
import { WebReplies } from "../../src/web/replies.js";
import { testConfig } from "./config.js";
import { makeWorkspace, type TempWorkspace } from "./workspace.js";

/** Options of {@link openDashboard}. */
export interface DashboardTestOptions {
  /** `http.host`. (Default: 127.0.0.1) */
  host?: string;
  /** `http.token`. (Default: none: one is generated into history/http-token) */
  token?: string;
  readOnly?: boolean;
  /** Workspace files (agents, crons). */
  files?: Record<string, string>;
  /** What the overview reads as the cluster. (Default: the storage's, null on SQLite) */
  cluster?: ClusterStatus;
  /** Queue and history on this PostgreSQL database. (Default: SQLite in the workspace) */
  postgresUrl?: string;
}

/** A dashboard over a temp workspace. */
export interface DashboardHarness {
  ws: TempWorkspace;
  config: Config;
  storage: Storage;
  app: Hono;
  /** The `silent` frontend whose replies the session pages stream. */
  replies: WebReplies;
  /** Session keys the Cancel of a running job (or a web chat's Stop) asked to stop. */
  stopped: string[];
  /** What a generated token's announcement printed. */
  announced: string[];
  /** What the overview reads as the server's health. */
  health: HealthView;
  /** The access token the dashboard requires. */
  token: string;
  /** `app.request` as the owner (the bearer token) from a client at `client` (default 127.0.0.1). */
  request(path: string, init?: RequestInit, client?: string): Promise<Response>;
  /** `app.request` with `init` as it is (no token), from `client` (default 127.0.0.1). */
  anonymous(path: string, init?: RequestInit, client?: string): Promise<Response>;
  /** A job enqueued, then (optionally) claimed and driven to `state`. */
  job(state: SettledState | "queued", overrides?: Partial<NewJob>): Promise<Job>;
  close(): Promise<void>;
}

/** The dashboard's CSRF token, as a page renders it. */
export async function csrfTokenOf(harness: DashboardHarness): Promise<string> {
  const page = await (await harness.request("/jobs")).text();
  const token = page.match(/x-csrf-token(?:&quot;|"):(?:&quot;|")([\w-]+)/)?.[1];
  if (!token) throw new Error("the page carries no CSRF token");
  return token;
}

/** `init` with the bearer `token` added to its headers. */
function withToken(init: RequestInit, token: string): RequestInit {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  return { ...init, headers };
}

/** Builds the dashboard over a fresh temp workspace. */
export async function openDashboard(options: DashboardTestOptions = {}): Promise<DashboardHarness> {
  const ws = makeWorkspace(options.files);
  const config = testConfig(ws.dir, {
    http: {
      enabled: true,
      host: options.host ?? "127.0.0.1",
      token: options.token,
      read_only: options.readOnly ?? false,
    },
    ...(options.postgresUrl
      ? {
          queue: { backend: "postgres", url: options.postgresUrl, pool_size: 2 },
          history: { backend: "postgres" },
        }
      : { queue: { backend: "sqlite" }, history: { backend: "sqlite" } }),
  });
  const storage = await openStorage(config, systemClock);
  const stopped: string[] = [];
  const replies = new WebReplies();
  const announced: string[] = [];
  const health: HealthView = {
    healthy: true,
    workers: [{ name: "agents", state: "running", restarts: 2, lastError: "boom" }],
    buses: [{ platform: "telegram", state: "connected" }],
    queue: await storage.queue.counts(),
  };
  const access = resolveAccess({
    token: config.http.token,
    historyPath: config.history.path,
    announce: (text) => announced.push(text),
  });
  const stopper = {
    stop: async (key: string) => {
      stopped.push(key);
      return true;
    },
  };
  const dashboard = composeDashboard({
    access,
    readOnly: config.http.read_only,
    overview: {
      health: async () => ({ ...health, queue: await storage.queue.counts() }),
      crons: async () =>
        describeCrons(loadWorkspaceCrons(ws.dir, config).crons, storage.cronState, systemClock),
      cluster: async () => options.cluster ?? describeCluster(storage),
      jobs: storage.queue,
      clock: systemClock,
    },
    jobs: {
      jobs: storage.queue,
      transcripts: storage,
      stopper,
    },
    sessions: {
      history: storage.history,
      usage: storage.usage,
      queue: storage.queue,
      media: new MediaStore(config.history.path),
      agents: () => ["pickle", "scout"],
      replies,
      stopper,
    },
  });
  const app = httpApp({
    access,
    dashboard,
    registry: new ServerMetrics().registry,
    health: async () => ({ healthy: true }),
  });
  return {
    ws,
    config,
    storage,
    app,
    stopped,
    replies,
    announced,
    health,
    token: access.token,
    anonymous: async (path, init, client = "127.0.0.1") =>
      app.request(path, init, { incoming: { socket: { remoteAddress: client } } }),
    request: async (path, init = {}, client = "127.0.0.1") =>
      app.request(path, withToken(init, access.token), {
        incoming: { socket: { remoteAddress: client } },
      }),
    job: (state, overrides) => jobIn(storage, state, overrides),
    async close() {
      await storage.close();
      ws.remove();
    },
  };
}

/** The states a test job is put in after its claim. */
type SettledState = "running" | "failed" | "stopped" | "done";

async function jobIn(
  storage: Storage,
  state: SettledState | "queued",
  overrides: Partial<NewJob> = {},
): Promise<Job> {
  const job = await storage.queue.enqueue({
    agentId: "pickle",
    sessionKey: `telegram:${Math.random().toString(36).slice(2, 8)}`,
    message: "hello",
    mode: "chat",
    replyTo: { kind: "silent" },
    maxAttempts: 1,
    ...overrides,
  });
  if (state === "queued") return job;
  const [claimed] = await storage.queue.claim("test-worker", 1);
  if (claimed?.id !== job.id) throw new Error(`claimed ${claimed?.id}, not job ${job.id}`);
  await settle(storage, claimed, state);
  return (await storage.queue.get(job.id)) ?? job;
}

async function settle(storage: Storage, job: ClaimedJob, state: SettledState) {
  if (state === "failed") await storage.queue.fail(job, "the model said no", null);
  if (state === "stopped") {
    await storage.queue.fail(job, "stopped by the user", null, { stopped: true });
  }
  if (state === "done") await storage.queue.complete(job);
}
