import type { Command } from "commander";
import { createAnthropicProvider } from "../agents/anthropic.js";
import type { ApprovalAsker } from "../agents/approval-gate.js";
import { POLICY_TOOLS } from "../agents/approval-policy.js";
import { type AgentDefinition, loadAgents } from "../agents/definition.js";
import { unknownMcpServersProblem } from "../agents/mcp/names.js";
import { McpServers, stdioSurroundings } from "../agents/mcp/servers.js";
import { AgentRunner, type RunRequest } from "../agents/runner.js";
import type { MessagePoster, SubagentDelegate } from "../agents/tools/index.js";
import { systemClock } from "../base/clock.js";
import { UserError } from "../base/errors.js";
import { printable } from "../base/printable.js";
import { type Config, loadConfig, resolveWorkspace } from "../config/index.js";
import type { HistoryStore, ModelProvider, Storage } from "../ports/index.js";
import { openStorage } from "../storage/index.js";

/** A workspace opened for a command: its config, agents and storage. */
export interface WorkspaceContext extends LoadedWorkspace {
  storage: Storage;
  /** The MCP servers of picklebot.yaml; each starts on first use and stops with `close`. */
  mcp: McpServers;
  close(): Promise<void>;
}

/** The workspace a command runs in: `--workspace`, then `PICKLEBOT_WORKSPACE`, then cwd. */
export function workspaceOf(command: Command): string {
  const { workspace } = command.optsWithGlobals<{ workspace?: string }>();
  return resolveWorkspace(workspace);
}

/** The model provider the config names. */
export function providerFor(config: Config): ModelProvider {
  return createAnthropicProvider({
    apiKey: config.llm.api_key,
    baseURL: config.llm.base_url,
    timeoutMs: config.llm.timeout_s * 1000,
    prefixCacheTtl: config.llm.prompt_cache_ttl,
  });
}

/** A workspace's config, agents and model provider, without storage. */
export interface LoadedWorkspace {
  workspace: string;
  config: Config;
  agents: Map<string, AgentDefinition>;
  /** Agents whose AGENT.md is broken, by id: they do not run (fail closed). */
  brokenAgents: Map<string, UserError>;
  provider: ModelProvider;
}

/**
 * Loads the workspace's config and agents. Broken agent files are reported on stderr and
 * kept as broken, so one bad AGENT.md does not stop the others, and its agent's jobs fail
 * with its error instead of running a built-in in its place.
 */
export function loadWorkspace(command: Command): LoadedWorkspace {
  const workspace = workspaceOf(command);
  const { agents, errors, broken } = loadAgents(workspace);
  for (const error of errors)
    process.stderr.write(`picklebot: warning: ${printable(error.message, { multiline: true })}\n`);
  const config = loadConfig(workspace, process.env, {
    agentIds: [...agents.keys(), ...broken.keys()],
    tools: POLICY_TOOLS,
  });
  for (const error of breakAgentsWithUnknownMcpServers(agents, broken, config)) {
    process.stderr.write(`picklebot: warning: ${printable(error.message, { multiline: true })}\n`);
  }
  return { workspace, config, agents, brokenAgents: broken, provider: providerFor(config) };
}

/**
 * Agents whose `mcp:` entries name a server `mcp_servers` does not configure become broken
 * (their jobs fail with the error, fail closed); returns their errors.
 */
function breakAgentsWithUnknownMcpServers(
  agents: Map<string, AgentDefinition>,
  broken: Map<string, UserError>,
  config: Config,
): UserError[] {
  const errors: UserError[] = [];
  for (const agent of agents.values()) {
    const problem = unknownMcpServersProblem(agent, Object.keys(config.mcp_servers));
    if (problem === null) continue;
    const error = new UserError(problem, { context: { file: agent.source, key: "tools" } });
    agents.delete(agent.id);
    broken.set(agent.id, error);
    errors.push(error);
  }
  return errors;
}

/** Loads the workspace and opens its storage, for commands that read or run agents. */
export async function openWorkspace(command: Command): Promise<WorkspaceContext> {
  const loaded = loadWorkspace(command);
  const storage = await openStorage(loaded.config, systemClock);
  const mcp = new McpServers({
    servers: loaded.config.mcp_servers,
    surroundings: stdioSurroundings(loaded.workspace, loaded.config),
  });
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
    clock: systemClock,
    postMessage,
    delegate: inPlaceSubagents(context.storage.history, () => runner),
    approvals,
    mcp: context.mcp,
  });
  return runner;
}

/**
 * The delegate of a terminal chat, which has no queue to park in: the subagent's turn
 * runs in place, in its own session, and the call waits for it (`wait: false` too).
 */
function inPlaceSubagents(history: HistoryStore, runner: () => AgentRunner): SubagentDelegate {
  return async ({ agent, task, sessionKey }, { signal }) => {
    const [existing] = await history.listSessions({ key: sessionKey, limit: 1 });
    const session = existing ?? (await history.createSession({ key: sessionKey, agentId: agent }));
    if (!existing) {
      await history.append(session.id, { role: "user", content: [{ type: "text", text: task }] });
    }
    const result = await runner().run({
      agentId: agent,
      sessionId: session.id,
      sessionKey,
      signal,
    });
    return result.text || "(no reply)";
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
