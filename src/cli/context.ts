import type { Command } from "commander";
import type { ApprovalAsker } from "../agents/approval-gate.js";
import { POLICY_TOOLS } from "../agents/approval-policy.js";
import { AgentCatalog } from "../agents/catalog.js";
import { type AgentDefinition, agentConfigProblem, definedAgentIds } from "../agents/definition.js";
import { type McpServers, mcpServersOf } from "../agents/mcp/servers.js";
import { MediaStore } from "../agents/media/store.js";
import { createModelProvider } from "../agents/providers/index.js";
import { AgentRunner, type RunRequest } from "../agents/runner.js";
import type { MessagePoster, SubagentDelegate } from "../agents/tools/index.js";
import { TurnDriver } from "../agents/turn.js";
import { systemClock } from "../base/clock.js";
import type { UserError } from "../base/errors.js";
import { printable } from "../base/printable.js";
import {
  type Config,
  loadConfig,
  requireWorkspaceFiles,
  resolveWorkspace,
} from "../config/index.js";
import type { HistoryStore, MediaReader, ModelProvider, Storage } from "../ports/index.js";
import { openStorage } from "../storage/index.js";

/** A workspace opened for a command: its config, agents and storage. */
export interface WorkspaceContext extends LoadedWorkspace {
  storage: Storage;
  /** The MCP servers of picklebot.yaml; each starts on first use and stops with `close`. */
  mcp: McpServers;
  close(): Promise<void>;
}

/**
 * The workspace a command runs in: `--workspace`, then `PICKLEBOT_WORKSPACE`, then cwd.
 * A folder without picklebot.yaml or agents/ is refused (only `init` creates one).
 */
export function workspaceOf(command: Command): string {
  const { workspace } = command.optsWithGlobals<{ workspace?: string }>();
  const folder = resolveWorkspace(workspace);
  requireWorkspaceFiles(folder);
  return folder;
}

/** Reads the files people sent from the workspace's media folder, for the model providers. */
function mediaReaderFor(config: Config): MediaReader {
  const media = new MediaStore(config.history.path);
  return (ref) => media.read(ref.sha256);
}

/** The model provider the config names (`llm.provider`). */
export function providerFor(config: Config): ModelProvider {
  return createModelProvider(config.llm, mediaReaderFor(config));
}

/** A workspace's config, agents and model provider, without storage. */
export interface LoadedWorkspace {
  workspace: string;
  config: Config;
  agents: Map<string, AgentDefinition>;
  /** Agents whose AGENT.md is broken, by id: they do not run (fail closed). */
  brokenAgents: Map<string, UserError>;
  /** The agents and skills, reloadable (`agents` and `brokenAgents` are its maps). */
  catalog: AgentCatalog;
  provider: ModelProvider;
  /** Reads the files people sent, for the providers of the other named models. */
  readMedia: MediaReader;
  /**
   * What loading skipped: broken agents, invalid skills, skill listings over their
   * budget. The caller reports them (stderr or the server's logger).
   */
  loadWarnings: LoadWarning[];
}

/** One thing {@link loadWorkspace} skipped: a sentence, and the file and agent it is about. */
export interface LoadWarning {
  message: string;
  file?: string;
  agent?: string;
}

function loadWarningsOf(
  catalog: AgentCatalog,
  errors: UserError[],
  warnings: string[],
): LoadWarning[] {
  const agentOf = new Map([...catalog.broken].map(([id, error]) => [error, id]));
  return [
    ...errors.map((error) => {
      const file = error.context.file?.toString();
      const agent = agentOf.get(error);
      return {
        message: error.message,
        ...(file === undefined ? {} : { file }),
        ...(agent === undefined ? {} : { agent }),
      };
    }),
    ...warnings.map((message) => ({ message })),
  ];
}

/**
 * Loads the workspace's config and agents. Broken agent files are kept as broken (the
 * caller reports them: on stderr, or through the server's logger), so one bad AGENT.md
 * does not stop the others, and its agent's jobs fail with its error instead of running
 * a built-in in its place.
 */
export function loadWorkspace(command: Command): LoadedWorkspace {
  const workspace = workspaceOf(command);
  const catalog = new AgentCatalog(workspace);
  const { errors } = catalog.load();
  const { agents, broken } = catalog;
  const config = loadConfig(workspace, process.env, {
    agentIds: definedAgentIds(agents, broken),
    tools: POLICY_TOOLS,
  });
  const mcpErrors = catalog.checkAgents((agent) => agentConfigProblem(agent, config));
  const settings = {
    workspace,
    maxListingChars: config.skills.max_listing_chars,
    defaultAgentId: config.default_agent,
  };
  return {
    workspace,
    config,
    agents,
    brokenAgents: broken,
    catalog,
    provider: providerFor(config),
    readMedia: mediaReaderFor(config),
    loadWarnings: loadWarningsOf(catalog, [...errors, ...mcpErrors], catalog.warnings(settings)),
  };
}

/**
 * Prints a warning on stderr for each broken agent, invalid skill and skill-listing
 * problem (commands run from a terminal; the server logs them instead).
 */
export function warnAboutBrokenAgents({ loadWarnings }: LoadedWorkspace): void {
  for (const { message } of loadWarnings)
    process.stderr.write(`picklebot: warning: ${printable(message, { multiline: true })}\n`);
}

/** Loads the workspace and opens its storage, for commands that read or run agents. */
export async function openWorkspace(command: Command): Promise<WorkspaceContext> {
  const loaded = loadWorkspace(command);
  warnAboutBrokenAgents(loaded);
  const storage = await openStorage(loaded.config, systemClock);
  const mcp = mcpServersOf(loaded.workspace, loaded.config);
  const close = async () => {
    await mcp.stop();
    await storage.close();
  };
  return { ...loaded, storage, mcp, close };
}

/** The agents' runner over a workspace's storage; `post_message` posts nowhere unless given. */
export function runnerFor(
  context: WorkspaceContext,
  postMessage: (request: RunRequest) => MessagePoster | undefined = () => undefined,
  approvals?: (request: RunRequest) => ApprovalAsker | undefined,
): AgentRunner {
  const runner: AgentRunner = new AgentRunner({
    ...context,
    history: context.storage.history,
    skills: () => context.catalog.skills,
    clock: systemClock,
    postMessage,
    delegate: inPlaceSubagents(context.storage.history, () => runner),
    approvals,
    mcp: context.mcp,
    memoryStores: context.storage,
  });
  return runner;
}

/**
 * The delegate of a terminal chat, which has no queue to park in: the subagent's turn
 * runs in place, in its own session, and the call waits for it (`wait: false` too). The
 * task starts the session; a session that has it already resumes its turn.
 */
function inPlaceSubagents(history: HistoryStore, runner: () => AgentRunner): SubagentDelegate {
  return async ({ agent, task, sessionKey }, { signal }) => {
    const [existing] = await history.listSessions({ key: sessionKey, limit: 1 });
    const session = existing ?? (await history.createSession({ key: sessionKey, agentId: agent }));
    const turn = await new TurnDriver({ runner: runner(), history }).drive({
      agentId: agent,
      sessionId: session.id,
      sessionKey,
      signal,
      ...(existing ? {} : { message: { role: "user", content: [{ type: "text", text: task }] } }),
    });
    return (turn.status === "answered" && turn.result.text) || "(no reply)";
  };
}

/** Runs `action` on the opened workspace, closing its storage afterwards. */
export async function withWorkspace(
  command: Command,
  action: (context: WorkspaceContext) => Promise<void>,
): Promise<void> {
  const context = await openWorkspace(command);
  try {
    await action(context);
  } finally {
    await context.close();
  }
}
