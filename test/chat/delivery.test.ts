/**
 * Outbox delivery from several processes: two OutboxDelivery objects with their own
 * database connections and instance ids (the process that ran a job, and the leader's
 * retry loop) on one outbox, sending through the real Telegram adapter to the fake Bot API;
 * and the one window for a double send, a part accepted whose id was not stored, on
 * Telegram (no idempotency key: shown twice) and Discord (the nonce: shown once).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { silentLogger } from "../../src/base/log.js";
import { OutboxDelivery } from "../../src/chat/delivery.js";
import { DiscordPlatform } from "../../src/chat/discord/platform.js";
import { OutboxFiles } from "../../src/chat/outbox-files.js";
import { TelegramPlatform } from "../../src/chat/telegram/platform.js";
import { type ChatPlatform, DELIVERY_LEASE_MS, type OutboxStore } from "../../src/ports/index.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { Supervisor } from "../../src/server/supervisor.js";
import { type Database, openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteOutboxStore } from "../../src/storage/sqlite/outbox.js";
import { startFakeDiscord } from "../fakes/discord.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { TestClock } from "../helpers/clock.js";
import { recordingLogger } from "../helpers/log.js";

const CHAT = 42;
const address = { dedupeKey: "job:1", platform: "telegram" as const, chatId: String(CHAT) };

describe("OutboxDelivery across processes", () => {
  let dir: string;
  let telegram: FakeTelegram;
  const databases: Database[] = [];
  const clock = new TestClock();

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "picklebot-delivery-"));
    telegram = await startFakeTelegram();
    telegram.openChat(CHAT);
  });

  afterEach(async () => {
    for (const db of databases.splice(0)) db.close();
    await telegram.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One process: its own connection to the outbox, its own Telegram client and id. */
  function processNamed(holder: string) {
    const db = openDatabase(join(dir, "picklebot.db"));
    databases.push(db);
    const outbox = new SqliteOutboxStore({ db });
    const platform = new TelegramPlatform({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      logger: silentLogger(),
    });
    const delivery = new OutboxDelivery({
      platform,
      outbox,
      files: new OutboxFiles(join(dir, "history")),
      holder,
      clock,
      logger: silentLogger(),
    });
    return { outbox, delivery };
  }

  it("sends an entry once when two processes deliver it at the same moment", async () => {
    const producer = processNamed("node-b");
    const leader = processNamed("node-a");
    const entry = await producer.outbox.submit(address, "the answer", clock.now());

    const results = await Promise.all([
      producer.delivery.deliver(entry),
      leader.delivery.deliver(entry),
    ]);

    expect(results.filter(Boolean)).toHaveLength(1);
    expect(telegram.messages(CHAT)).toEqual(["the answer"]);
    expect(await leader.outbox.get(address.dedupeKey)).toMatchObject({ state: "delivered" });
    expect(await leader.delivery.deliver(entry)).toBe(true);
    expect(telegram.callsOf("sendMessage")).toHaveLength(1);
  });

  it("leaves an entry to the process sending it, and takes it over once a dead sender's lease ran out", async () => {
    const crashed = processNamed("node-b");
    const leader = processNamed("node-a");
    const entry = await crashed.outbox.submit(address, "the answer", clock.now());
    // node-b took the lease and died before it could send.
    await crashed.outbox.claim(entry.id, "node-b", clock.now(), clock.now() + DELIVERY_LEASE_MS);

    expect(await leader.delivery.deliver(entry)).toBe(false);
    expect(telegram.callsOf("sendMessage")).toHaveLength(0);
    clock.advance(DELIVERY_LEASE_MS);
    expect(await leader.delivery.deliver(entry)).toBe(true);
    expect(telegram.messages(CHAT)).toEqual(["the answer"]);
  });
});

describe("OutboxDelivery as a supervised loop", () => {
  it("a database error in the retry loop restarts the loop, which then delivers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "picklebot-delivery-"));
    const telegram = await startFakeTelegram();
    telegram.openChat(CHAT);
    const db = openDatabase(join(dir, "picklebot.db"));
    const stored = new SqliteOutboxStore({ db });
    let failures = 2;
    // The store as a backup holding the file makes it: `due` fails twice, then recovers.
    const due: OutboxStore["due"] = async (...args) => {
      if (failures-- > 0) {
        throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
      }
      return stored.due(...args);
    };
    const outbox = new Proxy(stored, {
      get: (target, name) => {
        if (name === "due") return due;
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const platform = new TelegramPlatform({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      logger: silentLogger(),
    });
    const { logger, lines } = recordingLogger();
    const clock = new TestClock();
    const delivery = new OutboxDelivery({
      platform,
      outbox,
      files: new OutboxFiles(join(dir, "history")),
      holder: "leader",
      clock,
      logger,
      pollMs: 10,
    });
    const supervisor = new Supervisor({
      clock: systemClock,
      logger,
      metrics: new ServerMetrics(),
      policy: { initialDelayMs: 10, maxDelayMs: 20 },
    });
    try {
      await stored.submit(address, "delivered after the lock", clock.now());
      supervisor.start(delivery);
      await telegram.waitFor(
        () => telegram.messages(CHAT).includes("delivered after the lock"),
        10_000,
      );
      const crashes = lines.filter((line) => line.msg === "worker crashed");
      expect(crashes.map((line) => [line.worker, line.error])).toEqual([
        ["outbox:telegram", "database is locked"],
        ["outbox:telegram", "database is locked"],
      ]);
    } finally {
      await supervisor.stop();
      await platform.stop();
      db.close();
      await telegram.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("OutboxDelivery after a send whose message id was lost", () => {
  let dir: string;
  let db: Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "picklebot-delivery-"));
    db = openDatabase(join(dir, "picklebot.db"));
  });

  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * An outbox whose `setMessageIds` fails its `nth` time: the platform accepted the part,
   * and its id never reached the database, as when the process dies in between.
   */
  function outboxLosingIds(nth: number): OutboxStore {
    let calls = 0;
    return new (class extends SqliteOutboxStore {
      override async setMessageIds(...args: Parameters<OutboxStore["setMessageIds"]>) {
        calls += 1;
        if (calls === nth) throw new Error("the process died before the id was stored");
        return super.setMessageIds(...args);
      }
    })({ db });
  }

  /** Delivers `text` with the second part's id lost, then retries as the restarted server would. */
  async function deliverLosingSecondId(platform: ChatPlatform, chatId: string, text: string) {
    const outbox = outboxLosingIds(2);
    const clock = new TestClock();
    const delivery = new OutboxDelivery({
      platform,
      outbox,
      files: new OutboxFiles(join(dir, "history")),
      holder: "node-a",
      clock,
      logger: silentLogger(),
    });
    const address = { dedupeKey: "job:7", platform: platform.kind, chatId };
    const entry = await outbox.submit(address, text, clock.now());
    expect(await delivery.deliver(entry)).toBe(false);
    clock.advance(60_000);
    expect(await delivery.deliver(entry)).toBe(true);
  }

  const paragraphs = (size: number) =>
    ["first", "second"].map((word) => `${word} part `.repeat(size / 12).trim());

  it("on Discord sends the part again with the same nonce, so the chat shows it once", async () => {
    const discord = await startFakeDiscord();
    const platform = new DiscordPlatform({ token: discord.token, apiBase: discord.restRoot });
    try {
      const parts = paragraphs(1800);
      await deliverLosingSecondId(platform, discord.guildChannelId, parts.join("\n\n"));

      expect(discord.messages(discord.guildChannelId)).toEqual(parts);
      const sends = discord.callsTo("POST /channels/:id/messages");
      expect(sends).toHaveLength(3);
      expect(sends[2]?.body).toMatchObject({ nonce: sends[1]?.body?.nonce, enforce_nonce: true });
    } finally {
      await platform.stop();
      await discord.close();
    }
  });

  it("on Telegram, which takes no idempotency key, shows that part twice: the stated window", async () => {
    const telegram = await startFakeTelegram();
    telegram.openChat(CHAT);
    const platform = new TelegramPlatform({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      logger: silentLogger(),
    });
    try {
      const parts = paragraphs(4000);
      await deliverLosingSecondId(platform, String(CHAT), parts.join("\n\n"));

      expect(telegram.messages(CHAT)).toEqual([parts[0], parts[1], parts[1]]);
    } finally {
      await telegram.close();
    }
  });
});
