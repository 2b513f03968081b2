/** `picklebot memory`: the agents' memory (docs/guides/memory.md). */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { resolveAgent } from "../agents/definition.js";
import { clearText, replaceText } from "../agents/memory/editing.js";
import {
  agentOfMemory,
  fullness,
  memoryBudget,
  type OwnedMemory,
  ownedMemory,
  whatChanged,
  whoChanged,
} from "../agents/memory/owner.js";
import { UserError } from "../base/errors.js";
import { memoryChars, memoryEntries } from "../base/memory-text.js";
import { isPersonKey, PERSON_KEY_FORMS } from "../base/person-key.js";
import { secretValues } from "../config/index.js";
import type { MemoryEditor } from "../ports/index.js";
import { type WorkspaceContext, withWorkspace } from "./context.js";
import { formatTime, printJson, printLine, printTable } from "./output.js";

/** What `show`, `edit` and `clear` name: `agent` or a person key. */
const SCOPE_ARGUMENT = `agent (the agent's notes) or a person: ${PERSON_KEY_FORMS}`;

/** The `memory` command group. */
export function memoryCommand(): Command {
  const memory = new Command("memory").description(
    "the agents' memory: memory show [scope] | edit <scope> | clear <scope> | link <person> <to> | unlink <person> | links",
  );
  memory
    .command("show")
    .description(
      "without SCOPE: every memory and how full it is; with SCOPE: its text (--history: its changes)",
    )
    .argument("[scope]", SCOPE_ARGUMENT)
    .option("--agent <id>", "the agent whose memory (default: the default agent)")
    .option("--history", "the recorded changes: who wrote what, when")
    .option("--json", "print JSON for scripts")
    .action((scope: string | undefined, options: ShowOptions, command: Command) =>
      withWorkspace(command, async (context) => {
        if (options.history) return showHistory(context, scope, options);
        if (scope === undefined) return showAll(context, options);
        const owned = target(context, scope, options.agent);
        const stored = await context.storage.memory.read(owned.agentId, owned.scope);
        if (options.json) return printJson({ ...stored, budget: owned.budget });
        printLine(`${owned.label}: ${fullness(stored.text, owned.budget)}`);
        // Line by line: printLine shows a line's control characters escaped.
        if (stored.text !== "") for (const line of stored.text.split("\n")) printLine(line);
      }),
    );
  memory
    .command("edit")
    .description(
      "open $EDITOR on a memory's text; the result is checked (budget, secrets, separators) before it is stored",
    )
    .argument("<scope>", SCOPE_ARGUMENT)
    .option("--agent <id>", "the agent whose memory (default: the default agent)")
    .action((scope: string, options: { agent?: string }, command: Command) =>
      withWorkspace(command, async (context) => {
        const owned = target(context, scope, options.agent);
        const before = (await context.storage.memory.read(owned.agentId, owned.scope)).text;
        const after = editInEditor(before, owned);
        await store(context, owned, replaceText(before, after.text, owned), after.file);
        rmSync(after.folder, { recursive: true, force: true });
      }),
    );
  memory
    .command("clear")
    .description("empty a memory (its old text stays in memory show --history)")
    .argument("<scope>", SCOPE_ARGUMENT)
    .option("--agent <id>", "the agent whose memory (default: the default agent)")
    .action((scope: string, options: { agent?: string }, command: Command) =>
      withWorkspace(command, async (context) => {
        await store(context, target(context, scope, options.agent), clearText(), null);
      }),
    );
  memory
    .command("link")
    .description(
      "give PERSON the memory of TO (one person on two platforms); PERSON's memory is merged into TO's",
    )
    .argument("<person>", PERSON_KEY_FORMS)
    .argument("<to>", PERSON_KEY_FORMS)
    .action((person: string, to: string, _options: unknown, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const link = await storage.memory.link(personKey(person), personKey(to), {
          by: "cli",
          at: Date.now(),
        });
        printLine(
          `linked ${link.person} to ${link.linkedTo}: both now share ${link.linkedTo}'s memory and their conversations are searched together`,
        );
      }),
    );
  memory
    .command("unlink")
    .description("end PERSON's link; the memory stays with the key it was linked to")
    .argument("<person>", PERSON_KEY_FORMS)
    .action((person: string, _options: unknown, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        if (!(await storage.memory.unlink(personKey(person)))) {
          throw new UserError(
            `${person} is not linked to anyone; see the links with picklebot memory links`,
          );
        }
        printLine(`unlinked ${person}: from now on it has a memory of its own`);
      }),
    );
  memory
    .command("links")
    .description("the person keys linked to another's memory")
    .option("--json", "print JSON for scripts")
    .action((options: { json?: boolean }, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const links = await storage.memory.links();
        if (options.json) return printJson(links);
        if (links.length === 0) return printLine("no linked person keys");
        printTable(
          ["person", "shares the memory of", "since"],
          links.map((link) => [link.person, link.linkedTo, formatTime(link.at)]),
        );
      }),
    );
  return memory;
}

interface ShowOptions {
  agent?: string;
  history?: boolean;
  json?: boolean;
}

/** The memory `scope` of `--agent` (or the default agent), with its budget. */
function target(context: WorkspaceContext, scope: string, agentId?: string): OwnedMemory {
  const { agents, brokenAgents, config } = context;
  const agent = resolveAgent(
    agents,
    agentId ?? config.default_agent,
    config.default_agent,
    brokenAgents,
  );
  return ownedMemory(agent, scope, secretValues(config));
}

/** Every stored memory, with its size against its budget. */
async function showAll(context: WorkspaceContext, options: ShowOptions): Promise<void> {
  const memories = (await context.storage.memory.list(options.agent)).filter(
    (memory) => memory.text !== "",
  );
  if (options.json) return printJson(memories);
  if (memories.length === 0) return printLine("no memory saved yet");
  printTable(
    ["agent", "memory", "entries", "size", "changed"],
    memories.map((memory) => [
      memory.agentId,
      memory.scope,
      String(memoryEntries(memory.text).length),
      sizeOf(context, memory.agentId, memory.scope, memory.text),
      memory.updatedAt === null ? "" : formatTime(memory.updatedAt),
    ]),
  );
}

/** How full a listed memory is; the size alone when its agent is gone or has memory off. */
function sizeOf(context: WorkspaceContext, agentId: string, scope: string, text: string): string {
  const agent = agentOfMemory(
    { agents: context.agents, defaultAgentId: context.config.default_agent },
    agentId,
  );
  const budget = agent && memoryBudget(agent, scope);
  return budget ? fullness(text, budget) : `${memoryChars(text)} characters`;
}

/** The recorded changes, newest first, of one memory or of all. */
async function showHistory(
  context: WorkspaceContext,
  scope: string | undefined,
  options: ShowOptions,
): Promise<void> {
  const owned = scope === undefined ? undefined : target(context, scope, options.agent);
  const changes = await context.storage.memory.changes({
    agentId: owned?.agentId ?? options.agent,
    scope: owned?.scope,
    limit: 200,
  });
  if (options.json) return printJson(changes);
  if (changes.length === 0) return printLine("no changes recorded");
  printTable(
    ["when", "agent", "memory", "change", "by", "what"],
    changes.map((change) => [
      formatTime(change.at),
      change.agentId,
      change.scope,
      change.action,
      whoChanged(change),
      whatChanged(change),
    ]),
  );
}

/** A text the person edited in $EDITOR, and the file it is in (kept if it is refused). */
interface EditedText {
  text: string;
  file: string;
  folder: string;
}

/** Opens `$VISUAL` or `$EDITOR` on `text` and returns what the person saved. */
function editInEditor(text: string, owned: OwnedMemory): EditedText {
  const editor = process.env.VISUAL || process.env.EDITOR;
  if (!editor) {
    throw new UserError(
      "no editor: set EDITOR to the command of one (such as EDITOR=nano picklebot memory edit agent)",
    );
  }
  const folder = mkdtempSync(join(tmpdir(), "picklebot-memory-"));
  const file = join(folder, `${owned.agentId}-${owned.scope.replace(/[^\w-]/g, "_")}.txt`);
  writeFileSync(file, text === "" ? "" : `${text}\n`, { mode: 0o600 });
  // Through the shell, as git does, so EDITOR may hold arguments ("code --wait").
  const ran = spawnSync("sh", ["-c", `${editor} "$1"`, "sh", file], { stdio: "inherit" });
  if (ran.status !== 0) {
    rmSync(folder, { recursive: true, force: true });
    throw new UserError(
      `the editor (${editor}) ended with ${ran.error?.message ?? `exit code ${ran.status}`}; nothing was changed`,
    );
  }
  return { text: utf8Text(file, owned), file, folder };
}

/** The edited file's text; a refusal keeping the file when it is not UTF-8 (UTF-16, binary). */
function utf8Text(file: string, owned: OwnedMemory): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(file));
  } catch {
    throw new UserError(
      `${owned.label} was not changed: the edited file is not UTF-8 text (did the editor save it in another encoding?)${keptIn(file)}`,
    );
  }
}

/** Where the person's refused text is kept, for a refusal's end. */
function keptIn(file: string): string {
  return `; your text is kept in ${file}, copy from it and run edit again`;
}

/**
 * Runs `editor` on the memory as a change by the CLI and says what came of it; a refusal
 * is an error naming, when there is one, the file that keeps the person's edited text.
 */
async function store(
  context: WorkspaceContext,
  owned: OwnedMemory,
  editor: MemoryEditor,
  editedFile: string | null,
): Promise<void> {
  const target = { agentId: owned.agentId, scope: owned.scope };
  const result = await context.storage.memory.update(target, { by: "cli", at: Date.now() }, editor);
  if (result.status === "refused") {
    const kept = editedFile ? keptIn(editedFile) : "";
    throw new UserError(`${owned.label} was not changed: ${result.reason}${kept}`);
  }
  if (result.status === "applied") {
    const verb = result.change.action === "clear" ? "cleared" : "saved";
    printLine(`${verb} ${owned.label}: ${fullness(result.text, owned.budget)}`);
  }
}

/** `text` when it is a person key; a UserError naming the forms otherwise. */
function personKey(text: string): string {
  if (isPersonKey(text)) return text;
  throw new UserError(`"${text}" is not a person key; write ${PERSON_KEY_FORMS}`);
}
