/**
 * The Memory section, as `picklebot memory`: every memory of every agent with how full it
 * is, who wrote what when, and one memory's page to edit or clear it (docs/guides/memory.md).
 *
 *   GET  /                      every memory, its budget bar; the latest changes
 *   GET  /:agent/:scope         its text, its changes, the edit and clear forms
 *   POST /:agent/:scope/edit    `text`, `expected` ─► 303 with a notice, or 400 keeping the text
 *   POST /:agent/:scope/clear   ─► 303, or 400 when it is empty
 */
import { Hono } from "hono";
import { clearText, replaceText } from "../../agents/memory/editing.js";
import {
  type AgentsOfMemory,
  agentOfMemory,
  type OwnedMemory,
  ownedMemory,
} from "../../agents/memory/owner.js";
import { UserError } from "../../base/errors.js";
import type { DashboardEnv, DashboardSection } from "../../http/env.js";
import type { Clock, MemoryEditor, MemoryStore } from "../../ports/index.js";
import { MemoryListPage, MemoryPage, memoryPath } from "./memory-page.js";
import {
  formField,
  notFoundPage,
  redirectWithNotice,
  refuseWritesWhenReadOnly,
  type SectionContext,
} from "./ui.js";

/** What the Memory section reads and changes. */
export interface MemorySectionDeps {
  memory: MemoryStore;
  /** The agents now (hot reloaded), for each memory's budget. */
  agents: () => AgentsOfMemory;
  /** Values no memory may hold (the configuration's secrets). */
  secrets: readonly string[];
  clock: Clock;
  timezone: string;
}

/** Changes the pages list at most. */
const CHANGES_SHOWN = 50;

/** The Memory section, mounted at `/memory`. */
export function memorySection(deps: MemorySectionDeps): DashboardSection {
  const app = new Hono<DashboardEnv>();
  app.use("*", refuseWritesWhenReadOnly);
  app.get("/", async (c) => {
    const [memories, changes] = await Promise.all([
      deps.memory.list(),
      deps.memory.changes({ limit: CHANGES_SHOWN }),
    ]);
    return c.render(
      <MemoryListPage
        c={c}
        memories={memories.filter((memory) => memory.text !== "")}
        changes={changes}
        agents={deps.agents()}
        timezone={deps.timezone}
      />,
      { title: "Memory" },
    );
  });
  app.get("/:agent/:scope", (c) => withMemory(c, deps, (owned) => renderMemory(c, deps, owned)));
  app.post("/:agent/:scope/edit", (c) =>
    withMemory(c, deps, async (owned) => {
      const text = await formField(c, "text");
      const expected = (await c.req.parseBody()).expected;
      const before = typeof expected === "string" ? expected : "";
      return change(c, deps, owned, replaceText(before, text, owned), text);
    }),
  );
  app.post("/:agent/:scope/clear", (c) =>
    withMemory(c, deps, (owned) => change(c, deps, owned, clearText(), null)),
  );
  return { path: "memory", label: "Memory", app };
}

/** Runs `use` on the memory the path names, or answers 404 saying why there is none. */
async function withMemory(
  c: SectionContext,
  deps: MemorySectionDeps,
  use: (owned: OwnedMemory) => Promise<Response>,
): Promise<Response> {
  const agentId = c.req.param("agent") ?? "";
  const scope = c.req.param("scope") ?? "";
  const agent = agentOfMemory(deps.agents(), agentId);
  if (!agent) return notFoundPage(c, `There is no agent "${agentId}".`, "Memory");
  try {
    return await use(ownedMemory(agent, scope, deps.secrets));
  } catch (thrown) {
    if (thrown instanceof UserError) return notFoundPage(c, thrown.message, "Memory");
    throw thrown;
  }
}

/** Stores a change by the dashboard; a refusal is the page again, with the typed text kept. */
async function change(
  c: SectionContext,
  deps: MemorySectionDeps,
  owned: OwnedMemory,
  editor: MemoryEditor,
  typed: string | null,
): Promise<Response> {
  const target = { agentId: owned.agentId, scope: owned.scope };
  const result = await deps.memory.update(
    target,
    { by: "dashboard", at: deps.clock.now() },
    editor,
  );
  if (result.status === "refused") {
    return renderMemory(c, deps, owned, { error: `Not saved: ${result.reason}`, typed });
  }
  const verb = typed === null ? "Cleared" : "Saved";
  return redirectWithNotice(c, `/${memoryPath(owned)}`, `${verb} ${owned.label}.`);
}

async function renderMemory(
  c: SectionContext,
  deps: MemorySectionDeps,
  owned: OwnedMemory,
  refused?: { error: string; typed: string | null },
): Promise<Response> {
  const [stored, changes] = await Promise.all([
    deps.memory.read(owned.agentId, owned.scope),
    deps.memory.changes({ agentId: owned.agentId, scope: owned.scope, limit: CHANGES_SHOWN }),
  ]);
  if (refused) c.status(400);
  return c.render(
    <MemoryPage
      c={c}
      owned={owned}
      text={stored.text}
      typed={refused?.typed ?? null}
      error={refused?.error}
      changes={changes}
      timezone={deps.timezone}
    />,
    { title: `Memory: ${owned.label}` },
  );
}
