/**
 * The {@link ChatPlatform} contract, written once and run against every chat platform's
 * adapter with the platform's fake (test/chat/telegram.contract.test.ts,
 * test/chat/discord.contract.test.ts): one line per platform, as Hono runs one router
 * suite against every router.
 *
 * Each case is something the port (src/ports/chat.ts, and ChatPlatformError in
 * src/base/errors.ts) promises. A platform that cannot do something opts out of that case
 * with the reason, and the case shows as skipped with it. The suite acts as the people on
 * the other side through the harness (./harness.ts) and reads what the fake received; it
 * waits for conditions, never for a time, and no verdict depends on how fast a call is.
 *
 * Sending cases use adapters that were never started: the chat senders send through
 * instances they never start (src/chat/senders.ts).
 *
 * A new platform proves itself with a fake of its service in test/fakes/ (refusing what
 * the service refuses, with its status codes and error texts), a harness here built on it,
 * and a one-line test file calling {@link chatPlatformContract} with the harness factory.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import { CREDENTIAL_SERVICES } from "../../src/config/index.js";
import {
  CHAT_PLATFORMS,
  type ChatPlatform,
  type Choice,
  type IncomingChatMessage,
  type IncomingChoice,
  MAX_CHOICE_ID_BYTES,
  MAX_CHOICES,
} from "../../src/ports/index.js";
import { recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";
import type {
  ChatPlatformHarness,
  ChatPlatformHarnessFactory,
  HarnessPlatformOptions,
} from "./harness.js";

/** Cases a platform may opt out of. */
export type ChatPlatformCase =
  /** Messages by the bot itself and by other bots reach the adapter, which ignores them. */
  | "ignoresBots"
  /** A message or press whose handler rejected is handed over again. */
  | "redelivery"
  /** A send repeated with the same key returns the message the first one created. */
  | "idempotentSend"
  /** `typing` shows an indicator (and fails as the platform's other calls do). */
  | "typing"
  /** A press answered without a notice is an answer the platform receives. */
  | "silentAnswer"
  /** `sendFile` sends documents, images and voice, and refuses what the platform refuses. */
  | "files";

/** Options of {@link chatPlatformContract}. */
export interface ChatPlatformContractOptions {
  /** Cases this platform cannot meet, each with the reason. */
  optOut?: Partial<Record<ChatPlatformCase, string>>;
}

/** What the suite gives `start()`; null leaves `onChoice` out. */
interface Handlers {
  onMessage?: (message: IncomingChatMessage) => Promise<void>;
  onChoice?: ((press: IncomingChoice) => Promise<void>) | null;
}

/** A started adapter, and what it handed over so far, in order. */
interface Listening {
  platform: ChatPlatform;
  messages: IncomingChatMessage[];
  presses: IncomingChoice[];
}

/** A key as the outbox makes them: 25 characters, the most the port allows. */
const KEY = "p8Jq2cLr0xT5vW7yZa9Bd3Fg1";

const CHOICES: Choice[] = [
  { id: "once", label: "Allow once", style: "primary" },
  { id: "always", label: "Always allow" },
  { id: "deny", label: "Deny", style: "danger" },
];

/** A file as `send_file` sends one; the test gives the content. */
const REPORT = {
  kind: "document",
  name: "report.pdf",
  mediaType: "application/pdf",
  caption: "The report",
} as const;

function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** The error `call` rejects with, which must be a ChatPlatformError. */
async function failure(call: Promise<unknown>): Promise<ChatPlatformError> {
  const error = await call.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ChatPlatformError)) {
    throw new Error(`expected a ChatPlatformError, got ${String(error)}`);
  }
  return error;
}

/** A handler that refuses its first call, as a full disk would, then passes on. */
function refusingOnce<T>(pass: (value: T) => Promise<void>): (value: T) => Promise<void> {
  let refusals = 1;
  return async (value) => {
    if (refusals-- > 0) throw new Error("database or disk is full");
    await pass(value);
  };
}

/** Runs the ChatPlatform contract against the adapter of the harnesses `makeHarness` starts. */
export function chatPlatformContract(
  name: string,
  makeHarness: ChatPlatformHarnessFactory,
  options: ChatPlatformContractOptions = {},
): void {
  describe(`ChatPlatform contract: ${name}`, () => {
    let h: ChatPlatformHarness;
    /** Every adapter a case built: each is stopped after it. */
    let built: ChatPlatform[];

    beforeEach(async () => {
      h = await makeHarness();
      built = [];
    });

    afterEach(async () => {
      for (const platform of built) await platform.stop();
      await h.close();
    });

    /** `it`, or a skipped case that shows the reason the platform opted out. */
    function unlessOptedOut(key: ChatPlatformCase, title: string, body: () => Promise<void>) {
      const reason = options.optOut?.[key];
      if (reason === undefined) it(title, body);
      else it.skip(`${title} (opted out: ${reason})`, () => {});
    }

    /** A new adapter the case owns (stopped after it). */
    function adapter(platformOptions?: HarnessPlatformOptions): ChatPlatform {
      const platform = h.platform(platformOptions);
      built.push(platform);
      return platform;
    }

    /** Starts an adapter that records what it hands over (unless `handlers` say otherwise). */
    async function started(handlers: Handlers = {}, platform = adapter()): Promise<Listening> {
      const listening: Listening = { platform, messages: [], presses: [] };
      const onMessage =
        handlers.onMessage ??
        (async (message: IncomingChatMessage) => {
          listening.messages.push(message);
        });
      const onChoice =
        handlers.onChoice === null
          ? undefined
          : (handlers.onChoice ??
            (async (press: IncomingChoice) => {
              listening.presses.push(press);
            }));
      await platform.start(onMessage, onChoice);
      return listening;
    }

    /** Waits until `listening` has handed over `count` messages. */
    function received(listening: Listening, count: number): Promise<unknown> {
      return waitFor(() => listening.messages.length >= count, `${count} message(s) handed over`);
    }

    /** Sends the choices to `chatId` and presses `choiceId` as `from`; waits for the press. */
    async function pressed(
      listening: Listening,
      chatId: string,
      from = h.alice,
      choiceId = "always",
    ): Promise<{ messageId: string; pressId: string; press: IncomingChoice }> {
      const { messageId } = await listening.platform.sendChoices(
        chatId,
        "Run ls?",
        "plain",
        CHOICES,
      );
      const pressId = await h.press({ from, chatId, messageId, choiceId });
      const press = await waitFor(
        () => listening.presses.find((p) => p.pressId === pressId),
        "the press handed over",
      );
      return { messageId, pressId, press };
    }

    describe("lifecycle", () => {
      it("is stopped before start, connected once start resolves, stopped after stop", async () => {
        const platform = adapter();
        expect(platform.kind).toBe(h.kind);
        expect(platform.state).toBe("stopped");
        await started({}, platform);
        expect(platform.state).toBe("connected");
        await platform.stop();
        expect(platform.state).toBe("stopped");
      });

      it("stops receiving and holds no connection open after stop", async () => {
        const { platform } = await started();
        await waitFor(() => h.connections() > 0, "a connection to receive on");
        await platform.stop();
        expect(platform.state).toBe("stopped");
        await waitFor(() => h.connections() === 0, "every connection closed");
      });

      it("nothing reaches a stopped adapter; a fresh one receives what comes next, and nothing already handed over", async () => {
        const first = await started();
        await h.write({ from: h.alice, in: "direct", text: "before the restart" });
        await received(first, 1);
        await first.platform.stop();
        await waitFor(() => h.connections() === 0, "the stopped adapter's connection closed");

        const second = await started();
        await h.write({ from: h.alice, in: "direct", text: "after the restart" });
        await received(second, 1);
        await h.write({ from: h.bob, in: "direct", text: "and one more" });
        await received(second, 2);
        expect(second.messages.map((m) => m.text)).toEqual(["after the restart", "and one more"]);
        expect(first.messages.map((m) => m.text)).toEqual(["before the restart"]);
      });

      it("is connecting while the connection is lost, then reconnects and receives again", async () => {
        const listening = await started();
        await waitFor(() => h.connections() > 0, "a connection to receive on");
        h.goOffline();
        await waitFor(() => listening.platform.state === "connecting", "connecting while offline");
        h.goOnline();
        // A held poll learns it is connected only from an answer: a message gives one.
        await h.write({ from: h.alice, in: "direct", text: "still there?" });
        await received(listening, 1);
        expect(listening.messages[0]?.text).toBe("still there?");
        await waitFor(() => listening.platform.state === "connected", "connected again");
      });

      it("keeps trying a refused token with backoff until stop, telling the refusal and its fix once, never the token", async () => {
        const { logger, lines } = recordingLogger();
        const platform = adapter({ token: h.wrongToken, logger });
        let resolved = false;
        const starting = platform
          .start(async () => {})
          .then(() => {
            resolved = true;
          });
        await waitFor(() => h.logins() >= 4, "three logins after the refusal");
        expect(platform.state).toBe("connecting");
        expect(platform.refusal).toContain(CREDENTIAL_SERVICES[h.kind].fix);
        expect(resolved).toBe(false);
        await platform.stop();
        await starting;
        expect(platform.state).toBe("stopped");
        const errors = lines.filter((line) => line.level >= 50);
        expect(errors).toEqual([expect.objectContaining({ error: platform.refusal })]);
        expect(JSON.stringify(lines)).not.toContain(h.wrongToken);
      });
    });

    describe("receiving", () => {
      it("hands over a direct message with the chat, the sender, the text and direct", async () => {
        const listening = await started();
        await h.write({ from: h.alice, in: "direct", text: "hello there" });
        await received(listening, 1);
        expect(listening.messages).toEqual([
          {
            platform: h.kind,
            chatId: h.directChat(h.alice),
            userId: h.alice.id,
            userName: h.alice.userName,
            text: "hello there",
            direct: true,
            messageId: expect.any(String),
          },
        ]);
      });

      it("hands over a group message that mentions the bot, without the mention, not direct", async () => {
        const listening = await started();
        await h.write({ from: h.bob, in: "group", text: "what is the weather?", mention: true });
        await received(listening, 1);
        expect(listening.messages).toEqual([
          {
            platform: h.kind,
            chatId: h.groupChat,
            userId: h.bob.id,
            userName: h.bob.userName,
            text: "what is the weather?",
            direct: false,
            messageId: expect.any(String),
          },
        ]);
      });

      it("ignores a group message that does not mention the bot", async () => {
        const listening = await started();
        await h.write({ from: h.alice, in: "group", text: "just chatting" });
        await h.write({ from: h.bob, in: "group", text: "for the bot", mention: true });
        await received(listening, 1);
        expect(listening.messages.map((m) => m.text)).toEqual(["for the bot"]);
      });

      it("tells people and chats apart, and gives each message its own messageId", async () => {
        const listening = await started();
        await h.write({ from: h.alice, in: "direct", text: "from alice" });
        await h.write({ from: h.bob, in: "direct", text: "from bob" });
        await h.write({ from: h.alice, in: "direct", text: "alice again" });
        await received(listening, 3);
        expect(listening.messages.map((m) => [m.text, m.userId, m.chatId])).toEqual([
          ["from alice", h.alice.id, h.directChat(h.alice)],
          ["from bob", h.bob.id, h.directChat(h.bob)],
          ["alice again", h.alice.id, h.directChat(h.alice)],
        ]);
        expect(new Set(listening.messages.map((m) => m.messageId)).size).toBe(3);
      });

      unlessOptedOut(
        "ignoresBots",
        "ignores messages by the bot itself and by other bots",
        async () => {
          const listening = await started();
          await h.writeAsBot({ self: true, text: "my own words" });
          await h.writeAsBot({ self: false, text: "another bot" });
          await h.write({ from: h.alice, in: "group", text: "a person", mention: true });
          await received(listening, 1);
          expect(listening.messages.map((m) => m.text)).toEqual(["a person"]);
        },
      );

      it("keeps receiving after onMessage rejected a message", async () => {
        const texts: string[] = [];
        await started({
          onMessage: refusingOnce(async (message) => {
            texts.push(message.text);
          }),
        });
        await h.write({ from: h.alice, in: "direct", text: "first" });
        await h.write({ from: h.alice, in: "direct", text: "second" });
        await waitFor(() => texts.includes("second"), "the second message");
      });

      unlessOptedOut(
        "redelivery",
        "hands a message over again, with the same messageId, when onMessage rejected it",
        async () => {
          const kept: IncomingChatMessage[] = [];
          const seen: IncomingChatMessage[] = [];
          await started({
            onMessage: async (message) => {
              seen.push(message);
              await refusing(message);
            },
          });
          const refusing = refusingOnce(async (message: IncomingChatMessage) => {
            kept.push(message);
          });
          await h.write({ from: h.alice, in: "direct", text: "keep me" });
          await waitFor(() => kept.length === 1, "the message handed over again");
          expect(seen.map((m) => m.text)).toEqual(["keep me", "keep me"]);
          expect(seen[1]).toEqual(seen[0]);
        },
      );
    });

    describe("sending", () => {
      it("sends into a direct chat and a group (with a key), answering with the message's id", async () => {
        const platform = adapter();
        const direct = await platform.send(h.directChat(h.alice), "hello alice", "plain");
        const group = await platform.send(h.groupChat, "hello everyone", "plain", KEY);
        expect(h.shown(h.directChat(h.alice))).toEqual([
          { messageId: direct.messageId, text: "hello alice", buttons: [] },
        ]);
        expect(h.shown(h.groupChat)).toEqual([
          { messageId: group.messageId, text: "hello everyone", buttons: [] },
        ]);
      });

      it("replies into the chat an incoming message named", async () => {
        const listening = await started();
        await h.write({ from: h.bob, in: "direct", text: "hi" });
        await received(listening, 1);
        const chatId = listening.messages[0]?.chatId ?? "";
        await listening.platform.send(chatId, "hello back", "plain");
        expect(h.shown(h.directChat(h.bob)).map((m) => m.text)).toEqual(["hello back"]);
      });

      it("sends before start and after stop", async () => {
        const platform = adapter();
        await platform.send(h.groupChat, "before", "plain");
        await started({}, platform);
        await platform.stop();
        await platform.send(h.groupChat, "after", "plain");
        expect(h.shown(h.groupChat).map((m) => m.text)).toEqual(["before", "after"]);
      });

      it("sends a text of maxMessageLength whole, and refuses a longer one for good", async () => {
        const platform = adapter();
        const longest = "x".repeat(platform.maxMessageLength);
        await platform.send(h.groupChat, longest, "plain");
        const tooLong = await failure(platform.send(h.groupChat, `${longest}y`, "plain"));
        expect(tooLong.retryable).toBe(false);
        expect(h.shown(h.groupChat).map((m) => m.text)).toEqual([longest]);
      });

      unlessOptedOut(
        "idempotentSend",
        "answers a send repeated with the same key with the first message",
        async () => {
          const platform = adapter();
          const first = await platform.send(h.groupChat, "once only", "plain", KEY);
          const again = await platform.send(h.groupChat, "once only", "plain", KEY);
          expect(again.messageId).toBe(first.messageId);
          expect(h.shown(h.groupChat).map((m) => m.text)).toEqual(["once only"]);
        },
      );

      it("edits a message's text; the same text again counts as success", async () => {
        const platform = adapter();
        const { messageId } = await platform.send(h.groupChat, "Thinking", "plain");
        await platform.edit(h.groupChat, messageId, "Done", "plain");
        await platform.edit(h.groupChat, messageId, "Done", "plain");
        expect(h.shown(h.groupChat)).toEqual([{ messageId, text: "Done", buttons: [] }]);
      });

      unlessOptedOut(
        "files",
        "sends a file with a caption, the bytes unchanged, answering with the message's id",
        async () => {
          const platform = adapter();
          const content = Buffer.from("%PDF-1.4 a small report\n");
          const sent = await platform.sendFile(h.groupChat, { ...REPORT, content }, KEY);
          expect(h.files(h.groupChat)).toEqual([
            {
              messageId: sent.messageId,
              name: "report.pdf",
              size: content.length,
              sha256: sha256(content),
              caption: "The report",
            },
          ]);
        },
      );

      unlessOptedOut(
        "files",
        "sends an image, and a voice message, into a direct chat",
        async () => {
          const platform = adapter();
          const chat = h.directChat(h.alice);
          const image = Buffer.from("\x89PNG\r\n\x1a\n a tiny image");
          const voice = Buffer.from("OggS an opus voice message");
          await platform.sendFile(chat, {
            kind: "photo",
            name: "chart.png",
            mediaType: "image/png",
            content: image,
          });
          await platform.sendFile(chat, {
            kind: "voice",
            name: "reply.ogg",
            mediaType: "audio/ogg",
            content: voice,
          });
          expect(h.files(chat).map((file) => [file.name, file.sha256])).toEqual([
            ["chart.png", sha256(image)],
            ["reply.ogg", sha256(voice)],
          ]);
        },
      );

      unlessOptedOut(
        "files",
        "refuses an empty file and one over the platform's limit for good, saying why, before anything is sent",
        async () => {
          const platform = adapter();
          const limit = CHAT_PLATFORMS[platform.kind].maxFileBytes;
          const empty = await failure(
            platform.sendFile(h.groupChat, { ...REPORT, content: Buffer.alloc(0) }),
          );
          const huge = await failure(
            platform.sendFile(h.groupChat, { ...REPORT, content: Buffer.alloc(limit + 1) }),
          );
          expect([empty.retryable, huge.retryable]).toEqual([false, false]);
          expect(empty.message).toMatch(/"report\.pdf" is empty/);
          expect(huge.message).toMatch(/over .* limit/);
          expect(h.fileAttempts()).toBe(0);
        },
      );

      unlessOptedOut("typing", "shows the typing indicator", async () => {
        const platform = adapter();
        await platform.typing(h.directChat(h.alice));
        await platform.typing(h.groupChat);
        expect([h.typings(h.directChat(h.alice)), h.typings(h.groupChat)]).toEqual([1, 1]);
      });
    });

    describe("choices", () => {
      it("shows the choices as one row of buttons, and an edit removes them", async () => {
        const platform = adapter();
        const { messageId } = await platform.sendChoices(h.groupChat, "Run ls?", "plain", CHOICES);
        expect(h.shown(h.groupChat)).toEqual([
          {
            messageId,
            text: "Run ls?",
            buttons: [CHOICES.map(({ id, label }) => ({ id, label }))],
          },
        ]);
        await platform.edit(h.groupChat, messageId, "Run ls? Allowed once.", "plain");
        expect(h.shown(h.groupChat)).toEqual([
          { messageId, text: "Run ls? Allowed once.", buttons: [] },
        ]);
      });

      it(`takes the most the port allows: ${MAX_CHOICES} choices, an id of ${MAX_CHOICE_ID_BYTES} bytes`, async () => {
        const listening = await started();
        const longestId = "é".repeat(MAX_CHOICE_ID_BYTES / 2);
        const choices = Array.from({ length: MAX_CHOICES }, (_, i) => ({
          id: i === 0 ? longestId : `c${i}`,
          label: `Choice ${i}`,
        }));
        const chatId = h.groupChat;
        const { messageId } = await listening.platform.sendChoices(
          chatId,
          "Pick",
          "plain",
          choices,
        );
        expect(h.shown(chatId)[0]?.buttons).toEqual([choices]);
        const pressId = await h.press({ from: h.alice, chatId, messageId, choiceId: longestId });
        const press = await waitFor(
          () => listening.presses.find((p) => p.pressId === pressId),
          "the press handed over",
        );
        expect(press.choiceId).toBe(longestId);
      });

      /** Choices the port refuses, and what the refusal must say is wrong. */
      const refusedChoices: { what: string; choices: Choice[]; says: string }[] = [
        { what: "none", choices: [], says: "needs at least one" },
        {
          what: `more than ${MAX_CHOICES}`,
          choices: Array.from({ length: MAX_CHOICES + 1 }, (_, i) => ({
            id: `c${i}`,
            label: `C${i}`,
          })),
          says: `${MAX_CHOICES + 1} choices, at most ${MAX_CHOICES}`,
        },
        { what: "an empty id", choices: [{ id: "", label: "Empty" }], says: "has an empty id" },
        {
          what: "an id of 66 bytes (33 characters)",
          choices: [{ id: "é".repeat(33), label: "Accent" }],
          says: `66 bytes long, at most ${MAX_CHOICE_ID_BYTES}`,
        },
        {
          what: "two ids alike",
          choices: [
            { id: "same", label: "One" },
            { id: "same", label: "Two" },
          ],
          says: 'two choices have the id "same"',
        },
      ];
      for (const { what, choices, says } of refusedChoices) {
        it(`refuses ${what} for good, saying why, before anything is sent`, async () => {
          const platform = adapter();
          const error = await failure(platform.sendChoices(h.groupChat, "?", "plain", choices));
          expect(error.retryable).toBe(false);
          expect(error.message).toContain(says);
          expect(h.sendAttempts()).toBe(0);
        });
      }

      it("hands a press over with the person, the chat, the message and the choice", async () => {
        const listening = await started();
        const inGroup = await pressed(listening, h.groupChat, h.bob, "deny");
        const inDirect = await pressed(listening, h.directChat(h.alice), h.alice, "once");
        expect(listening.presses).toEqual([
          {
            platform: h.kind,
            chatId: h.groupChat,
            userId: h.bob.id,
            userName: h.bob.userName,
            direct: false,
            messageId: inGroup.messageId,
            choiceId: "deny",
            pressId: inGroup.pressId,
          },
          {
            platform: h.kind,
            chatId: h.directChat(h.alice),
            userId: h.alice.id,
            userName: h.alice.userName,
            direct: true,
            messageId: inDirect.messageId,
            choiceId: "once",
            pressId: inDirect.pressId,
          },
        ]);
      });

      it("drops a press without onChoice, and keeps receiving messages", async () => {
        const listening = await started({ onChoice: null });
        const { messageId } = await listening.platform.sendChoices(
          h.groupChat,
          "Run ls?",
          "plain",
          CHOICES,
        );
        await h.press({ from: h.alice, chatId: h.groupChat, messageId, choiceId: "once" });
        await h.write({ from: h.alice, in: "direct", text: "after the press" });
        await received(listening, 1);
        expect(listening.messages.map((m) => m.text)).toEqual(["after the press"]);
      });

      unlessOptedOut(
        "redelivery",
        "hands a press over again, with the same pressId, when onChoice rejected it",
        async () => {
          const seen: IncomingChoice[] = [];
          const listening = await started({
            onChoice: async (press) => {
              seen.push(press);
              await refusing(press);
            },
          });
          const refusing = refusingOnce(async (press: IncomingChoice) => {
            listening.presses.push(press);
          });
          const { pressId } = await pressed(listening, h.groupChat);
          expect(seen.map((press) => press.pressId)).toEqual([pressId, pressId]);
        },
      );

      it("answers a press with a notice", async () => {
        const listening = await started();
        const noticed = await pressed(listening, h.groupChat, h.bob, "deny");
        await listening.platform.acknowledgeChoice(noticed.press, "Denied");
        expect(h.answers()).toEqual([{ pressId: noticed.pressId, notice: "Denied" }]);
      });

      unlessOptedOut("silentAnswer", "answers a press silently", async () => {
        const listening = await started();
        const silent = await pressed(listening, h.groupChat, h.alice, "once");
        await listening.platform.acknowledgeChoice(silent.press);
        expect(h.answers()).toEqual([{ pressId: silent.pressId }]);
      });

      it("refuses for good a second answer, a late one and one to an unknown press", async () => {
        const listening = await started();
        const { platform } = listening;
        const answered = await pressed(listening, h.groupChat, h.alice, "once");
        await platform.acknowledgeChoice(answered.press, "Allowed once");
        const late = await pressed(listening, h.groupChat, h.bob, "deny");
        h.expirePresses();
        const unknown = { ...answered.press, pressId: "123456789012345678" };

        const errors = [
          await failure(platform.acknowledgeChoice(answered.press, "Allowed once")),
          await failure(platform.acknowledgeChoice(late.press, "Too late")),
          await failure(platform.acknowledgeChoice(unknown)),
        ];
        expect(errors.map((error) => error.retryable)).toEqual([false, false, false]);
        expect(h.answers()).toEqual([{ pressId: answered.pressId, notice: "Allowed once" }]);
      });
    });

    describe("failures", () => {
      it("a refused token fails for good, and the error never shows the token", async () => {
        const platform = adapter({ token: h.wrongToken });
        const error = await failure(platform.send(h.groupChat, "hello", "plain"));
        expect(error.retryable).toBe(false);
        expect(`${error.message} ${String(error.cause ?? "")}`).not.toContain(h.wrongToken);
        expect(h.shown(h.groupChat)).toEqual([]);
      });

      it("a rate limit (429 retry_after) is retryable, after the wait the platform asked for", async () => {
        const platform = adapter();
        h.failNext("send", { status: 429, retryAfterS: 3 });
        const error = await failure(platform.send(h.groupChat, "hello", "plain"));
        expect(error.retryable).toBe(true);
        expect(error.retryAfterS).toBeGreaterThanOrEqual(3);
        expect(h.shown(h.groupChat)).toEqual([]);
      });

      it("a server error (5xx) is retryable, for edit and choices alike", async () => {
        const platform = adapter();
        const { messageId } = await platform.send(h.groupChat, "one", "plain");
        h.failNext("edit", { status: 502 });
        h.failNext("send", { status: 502 });
        const edit = await failure(platform.edit(h.groupChat, messageId, "two", "plain"));
        const choices = await failure(platform.sendChoices(h.groupChat, "?", "plain", CHOICES));
        expect([edit.retryable, choices.retryable]).toEqual([true, true]);
        expect(h.shown(h.groupChat).map((m) => m.text)).toEqual(["one"]);
      });

      unlessOptedOut("typing", "a server error (5xx) is retryable for typing too", async () => {
        const platform = adapter();
        h.failNext("typing", { status: 502 });
        const typing = await failure(platform.typing(h.groupChat));
        expect(typing.retryable).toBe(true);
      });

      it("an unreachable platform is retryable, and the error never shows the token", async () => {
        const platform = adapter();
        await h.close();
        const error = await failure(platform.send(h.groupChat, "hello", "plain"));
        expect(error.retryable).toBe(true);
        expect(`${error.message} ${String(error.cause ?? "")}`).not.toContain(h.token);
      });

      it("a call left unanswered is abandoned as retryable, and the next one goes through", async () => {
        const platform = adapter({ callTimeoutMs: 1000 });
        h.hangNext("send");
        const error = await failure(platform.send(h.groupChat, "hello?", "plain"));
        expect(error.retryable).toBe(true);
        await platform.send(h.groupChat, "again", "plain");
        expect(h.shown(h.groupChat).map((m) => m.text)).toEqual(["again"]);
      });
    });
  });
}
