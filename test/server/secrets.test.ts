/**
 * Configured secrets never leave the server (docs/operations/security.md), in-process: a tool that
 * prints the bot token (`read` of a file holding it, `bash` printing it raw and in
 * base64) and a model that quotes it in `post_message` and in its streamed reply. Neither
 * history, nor the model's next request, nor the chat, nor the log sees it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { REDACTED } from "../../src/base/redact.js";
import { CHAT_ID, type Core, openCore } from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";

const TOKEN = "987654321:AAH-secret-bot-token-in-process";
/** The API key of {@link openCore}'s config. */
const API_KEY = "test-key";

const LEAKY_AGENT = {
  "agents/pickle/AGENT.md":
    "---\nname: Pickle\ndescription: Leaks\ntools: [read, bash, post_message]\n---\nYou help.\n",
  "notes/token.txt": `the bot token is ${TOKEN}\n`,
};

let core: Core;

afterEach(async () => {
  await core?.close();
});

/** Every string the test can see, as one text to search. */
function everything(...parts: unknown[]): string {
  return JSON.stringify(parts);
}

describe("secrets in tool output and model replies", () => {
  it("are redacted before history, the model, the chat and the log", async () => {
    core = await openCore({ botToken: TOKEN, files: LEAKY_AGENT });
    core.model.script(
      {
        toolUses: [
          { name: "read", input: { path: "notes/token.txt" } },
          { name: "bash", input: { command: "cat notes/token.txt; base64 notes/token.txt" } },
        ],
      },
      { toolUses: [{ name: "post_message", input: { text: `Found it: ${TOKEN}` } }] },
      { text: `Your token is ${TOKEN} and the key is ${API_KEY}.`, chunks: 12 },
    );
    core.start({ bus: true });
    const job = await core.enqueue("what is my bot token?");
    const done = await core.waitForJob(job.id, (job) => job.state === "done");
    await waitFor(() => core.platform.texts(CHAT_ID).length >= 2, "the post and the reply");

    const history = await core.storage.history.loadContext(done.sessionId ?? "", 100);
    const requests = core.model.requests.map((request) => request.body);
    const chat = core.platform.calls;
    for (const seen of [everything(history), everything(requests), everything(chat)]) {
      expect(seen).not.toContain(TOKEN);
      expect(seen).not.toContain(Buffer.from(TOKEN).toString("base64").slice(0, 16));
      expect(seen).toContain(REDACTED);
    }
    expect(everything(core.lines)).not.toContain(TOKEN);
    expect(core.platform.texts(CHAT_ID)).toEqual([
      `Found it: ${REDACTED}`,
      `Your token is ${REDACTED} and the key is ${REDACTED}.`,
    ]);
  });
});
