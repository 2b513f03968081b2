/**
 * The chat bus in distributed mode, as a user runs it: three `picklebot server` processes
 * (from dist/), each on its own workspace, sharing one PostgreSQL database, the fake
 * Telegram Bot API and the fake model. Only the leader polls Telegram; every process
 * streams and delivers the replies of the chat jobs it runs.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports/index.js";
import { WELCOME_TEXT } from "../../src/storage/pairing-approval.js";
import type { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { BUS_CONNECTED, stopTelegramReply, telegramYaml } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import {
  type ClusterDatabase,
  clusterYaml,
  currentLeader,
  openClusterDatabase,
  postgresSkipReason,
  type TestDatabase,
} from "../helpers/postgres.js";
import { killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skipReason = await postgresSkipReason();

const OWNER = 4242;
const STRANGER = 777;

describe.skipIf(skipReason !== null)("Telegram on a cluster of three picklebot servers", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let producer: PostgresJobQueue;
  let model: FakeAnthropic;
  let telegram: FakeTelegram;
  const workspaces = new Map<string, TempWorkspace>();

  let cluster: ClusterDatabase | undefined;

  beforeAll(async () => {
    cluster = await openClusterDatabase("cluster_chat");
    ({ database, pool, producer } = cluster);
  });

  afterAll(() => cluster?.close());

  beforeEach(async () => {
    await pool.query(
      `TRUNCATE jobs, sessions, messages, cron_state, instances, leases, outbox,
        pairing_requests, paired_users, pairing_refusals RESTART IDENTITY`,
    );
    model = await startFakeAnthropic({
      defaultReply: (request) => ({ text: `re: ${lastUserText(request)}` }),
    });
    telegram = await startFakeTelegram();
  });

  afterEach(async () => {
    await killAllServers();
    await telegram.close();
    await model.close();
    for (const workspace of workspaces.values()) workspace.remove();
    workspaces.clear();
  });

  /** Starts one server process named `id`, with the Telegram bus enabled unless `telegram` is false. */
  async function startInstance(
    id: string,
    extraYaml = "",
    { telegram: withTelegram = true } = {},
  ): Promise<ServerProcess> {
    const chat = withTelegram ? telegramYaml(telegram, { allowedUserIds: [OWNER] }) : "";
    const yaml = clusterYaml(database.url) + chat;
    const workspace = makeWorkspace({
      "picklebot.yaml": fakeModelConfig(model.url, yaml + extraYaml),
    });
    workspaces.set(id, workspace);
    return startServer(workspace.dir, { env: { PICKLEBOT_INSTANCE_ID: id } });
  }

  /** Starts node-a and waits until it leads and polls; then node-b and node-c. */
  async function startCluster(leaderYaml = ""): Promise<ServerProcess[]> {
    const first = await startInstance("node-a", leaderYaml);
    await first.waitForLog((line) => line.msg === BUS_CONNECTED, 15_000);
    return [first, await startInstance("node-b"), await startInstance("node-c")];
  }

  const leader = () => currentLeader(pool);

  function say(text: string, userId = OWNER) {
    return telegram.sendUserMessage({ chatId: userId, userId, text });
  }

  /** Waits until the bot's messages in a chat are exactly `expected`. */
  async function chatShows(chatId: number, expected: string[], timeoutMs = 15_000) {
    const same = () => JSON.stringify(telegram.messages(chatId)) === JSON.stringify(expected);
    await telegram.waitFor(same, timeoutMs).catch((error: unknown) => {
      const shown = JSON.stringify(telegram.messages(chatId));
      throw new Error(`chat ${chatId} shows ${shown}, not ${JSON.stringify(expected)}: ${error}`);
    });
  }

  /** The servers that logged the end of a job with this outcome. */
  function finishedOn(servers: ServerProcess[], jobId: string | undefined, outcome: string) {
    return servers.filter(
      (server) => server.linesMatching((l) => l.job === jobId && l.outcome === outcome).length,
    );
  }

  function connectedLines(server: ServerProcess) {
    return server.linesMatching((line) => line.msg === BUS_CONNECTED);
  }

  function sentOk() {
    return telegram.callsOf("sendMessage").filter((call) => call.status === 200);
  }

  async function chatJobs(): Promise<Job[]> {
    return (await producer.list({ limit: 100 })).filter((job) => job.mode === "chat");
  }

  /** A promise the test settles, to hold the fake model in the middle of a reply. */
  function gate(): { promise: Promise<void>; open: () => void } {
    let open: () => void = () => undefined;
    const promise = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { promise, open };
  }

  /**
   * node-a leads and runs one job at a time, and a console job (held by the fake model
   * until `release`) fills its slot; then `others` start (node-b and node-c, with
   * Telegram): chat jobs run on them.
   */
  async function startBusyLeader(
    others: { id: string; telegram: boolean }[] = [
      { id: "node-b", telegram: true },
      { id: "node-c", telegram: true },
    ],
  ) {
    const held = gate();
    model.script({ text: "busy work done", chunks: 3, pauseAfterChunks: 1, resume: held.promise });
    const first = await startInstance("node-a", "workers:\n  agent_concurrency: 1\n");
    await first.waitForLog((line) => line.msg === BUS_CONNECTED, 15_000);
    const busy = await producer.enqueue({
      agentId: "pickle",
      sessionKey: "console:busy",
      message: "keep node-a busy",
      mode: "chat",
      replyTo: { kind: "silent" },
    });
    await waitFor(() => model.requests.length >= 1, "node-a's model call");
    const servers = [first];
    for (const other of others) servers.push(await startInstance(other.id, "", other));
    return { servers, busy, release: held.open };
  }

  it("answers once from a non-leader that runs the chat job, while only the leader polls", async () => {
    const { servers, busy, release } = await startBusyLeader();
    const first = servers[0] as ServerProcess;

    say("hello cluster");
    await chatShows(OWNER, ["re: hello cluster"]);
    release();
    const chatJob = (await chatJobs())[0];
    const ranChat = () => finishedOn(servers, chatJob?.id, "done");
    await waitFor(() => ranChat().length > 0, "the chat job's done line");
    await waitFor(() => finishedOn([first], busy.id, "done").length > 0, "the busy job done");
    expect(await producer.get(chatJob?.id ?? "")).toMatchObject({ state: "done", attempts: 1 });
    expect(ranChat()).toHaveLength(1);
    expect(ranChat()[0]).not.toBe(first);
    expect(await leader()).toBe("node-a");
    expect(servers.map((server) => connectedLines(server).length)).toEqual([1, 0, 0]);
    expect(sentOk()).toHaveLength(1);
    const { rows } = await pool.query("SELECT state, locked_by FROM outbox");
    expect(rows).toEqual([{ state: "delivered", locked_by: null }]);
  });

  it("delivers once, from the leader, the reply of a chat job run on a server without Telegram", async () => {
    const { servers, busy, release } = await startBusyLeader([{ id: "node-b", telegram: false }]);
    const [first, withoutTelegram] = servers as [ServerProcess, ServerProcess];

    say("hello from afar");
    await chatShows(OWNER, ["re: hello from afar"]);
    const chatJob = (await chatJobs())[0];
    await waitFor(() => finishedOn(servers, chatJob?.id, "done").length > 0, "the chat job done");
    expect(finishedOn(servers, chatJob?.id, "done")).toEqual([withoutTelegram]);
    release();
    await waitFor(() => finishedOn([first], busy.id, "done").length > 0, "the busy job done");
    expect(sentOk()).toHaveLength(1);
    expect(telegram.messages(OWNER)).toEqual(["re: hello from afar"]);
    const { rows } = await pool.query("SELECT dedupe_key, state FROM outbox");
    expect(rows).toEqual([{ dedupe_key: `job:${chatJob?.id}`, state: "delivered" }]);
  });

  it("stops a reply running on a non-leader when the leader receives /stop", async () => {
    const { servers } = await startBusyLeader();
    model.script({
      text: "A very long story begins here and goes on",
      chunks: 4,
      pauseAfterChunks: 1,
      resume: gate().promise,
    });
    say("tell me a long story");
    await telegram.waitForCall("sendMessage", undefined, 10_000);

    await stopTelegramReply(telegram, OWNER);
    const story = (await chatJobs())[0];
    const stoppedOn = () => finishedOn(servers, story?.id, "stopped");
    await waitFor(() => stoppedOn().length > 0, "the story job stopped");
    expect(await producer.get(story?.id ?? "")).toMatchObject({ state: "stopped", attempts: 1 });
    expect(stoppedOn()).toHaveLength(1);
    expect(stoppedOn()[0]).not.toBe(servers[0]);
    expect(model.requests).toHaveLength(2);
  });

  it("resumes polling on a new leader within the TTL after SIGKILL, handling no update twice", async () => {
    const servers = await startCluster();
    const hello = say("first");
    await chatShows(OWNER, ["re: first"]);
    // node-a's next poll, held open, has confirmed "first".
    await telegram.waitFor(() => telegram.confirmedOffset === hello.update_id + 1);

    // node-a takes "second" but cannot confirm it: its next polls fail until it dies.
    telegram.failNext("getUpdates", { status: 500 }, 10_000);
    const second = say("second");
    await chatShows(OWNER, ["re: first", "re: second"]);
    expect(telegram.confirmedOffset).toBeLessThanOrEqual(second.update_id);
    // Killed only once both jobs are recorded done: this test is about the updates.
    const bothDone = async () => (await chatJobs()).every((job) => job.state === "done");
    await waitFor(bothDone, "both chat jobs done");
    await servers[0]?.kill();
    telegram.clearFailures();

    const successor = await Promise.race(
      servers.slice(1).map(async (server) => {
        await server.waitForLog((line) => line.msg === BUS_CONNECTED, 60_000);
        return server;
      }),
    );
    // Telegram hands the unconfirmed update to the new leader: its job exists already.
    await telegram.waitFor(() => telegram.confirmedOffset > second.update_id, 10_000);
    const redelivered = telegram.updateLog.find((q) => q.update.update_id === second.update_id);
    expect(redelivered?.deliveredAt.length).toBeGreaterThanOrEqual(2);

    say("third");
    await chatShows(OWNER, ["re: first", "re: second", "re: third"]);
    expect(model.requests.map(lastUserText)).toEqual(["first", "second", "third"]);
    expect(await chatJobs()).toHaveLength(3);
    expect(sentOk()).toHaveLength(3);
    const pollers = servers.slice(1).filter((server) => connectedLines(server).length > 0);
    expect(pollers).toEqual([successor]);
  });

  it("admits a user approved with `picklebot pairing approve` on any host, for every process", async () => {
    await startCluster();
    say("let me in", STRANGER);
    const refusal = await telegram.waitFor(() => telegram.messages(STRANGER)[0]);
    const code = /pairing approve (\w{8})/.exec(refusal)?.[1] ?? "";
    expect(code).toMatch(/^[A-Z2-9]{8}$/);

    const cli = (id: string, ...args: string[]) =>
      runCli([...args, "--workspace", workspaces.get(id)?.dir ?? ""]);
    const approved = await cli("node-c", "pairing", "approve", code);
    expect(approved.stdout).toContain(`approved telegram user ${STRANGER}`);
    for (const id of ["node-a", "node-b", "node-c"]) {
      const listed = JSON.parse((await cli(id, "pairing", "list", "--json")).stdout);
      expect(listed.approved).toEqual([expect.objectContaining({ userId: String(STRANGER) })]);
    }

    // The leader delivers the welcome the approval left in the shared outbox.
    await chatShows(STRANGER, [refusal, WELCOME_TEXT]);
    say("now?", STRANGER);
    await chatShows(STRANGER, [refusal, WELCOME_TEXT, "re: now?"]);
    expect(model.requests.map(lastUserText)).toEqual(["now?"]);
    // PostgreSQL mode keeps nothing in a host's SQLite file.
    for (const workspace of workspaces.values()) {
      expect(existsSync(join(workspace.dir, "history", "picklebot.db"))).toBe(false);
    }
  });
});
