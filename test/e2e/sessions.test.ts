/**
 * `picklebot sessions` and `picklebot sessions compact`: the CLI as a child process on a
 * temp workspace, against the fake model.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  lastUserText,
  messageText,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let fake: FakeAnthropic;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic({
    defaultReply: (request) =>
      JSON.stringify(request.body.system).includes("You compress a conversation")
        ? { text: "Notes: the user asked about brine twice." }
        : { text: `echo: ${lastUserText(request)}` },
  });
  ws = makeWorkspace({ "picklebot.yaml": fakeModelConfig(fake.url) });
});

afterEach(async () => {
  await fake.close();
  ws.remove();
});

const cli = (...args: string[]) => runCli([...args, "--workspace", ws.dir]);

describe("picklebot sessions", () => {
  it("lists sessions with their size, compacts one, and the next request starts from the summary", async () => {
    expect(
      (await runCli(["chat", "--workspace", ws.dir], { input: "what is brine?\nand again?\n" }))
        .code,
    ).toBe(0);
    const listed = await cli("sessions", "--json");
    expect(listed.code).toBe(0);
    const [session] = JSON.parse(listed.stdout) as Array<{
      id: string;
      messageCount: number;
      context: { tokens: number; window: number };
    }>;
    expect(session).toMatchObject({ messageCount: 4, context: { window: 200_000 } });
    expect((await cli("sessions")).stdout).toMatch(/context ~0k of 200k tokens \(0%\)/);

    const compacted = await cli("sessions", "compact", session?.id ?? "");
    expect(compacted.stderr).toBe("");
    expect(compacted.stdout).toMatch(
      new RegExp(
        `^compacted session ${session?.id}: 2 messages summarised, the last 2 kept as they were`,
      ),
    );

    await runCli(["chat", "--workspace", ws.dir, "--session", session?.id ?? ""], {
      input: "one more\n",
    });
    // The summary, then the last turn word for word, then the new message.
    const sent = (fake.requests.at(-1)?.body.messages ?? []).map((message) => [
      message.role,
      messageText(message),
    ]);
    expect(sent).toEqual([
      ["user", expect.stringContaining("Notes: the user asked about brine twice.")],
      ["assistant", "echo: and again?"],
      ["user", "one more"],
    ]);
    expect(sent[0]?.[1]).toMatch(/and again\?$/);
    // The usage ledger holds every model call, the summary's too.
    const usage = JSON.parse((await cli("usage", "--json")).stdout) as {
      total: { calls: number };
    };
    expect(usage.total.calls).toBe(fake.requests.length);
    // Two turns, the memory save call and the summary call, and one more turn.
    expect(fake.requests).toHaveLength(5);
  });

  it("names an unknown session id", async () => {
    const result = await cli("sessions", "compact", "nope");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('picklebot: no session "nope"; list them with picklebot sessions\n');
  });
});
