/**
 * The server's HTTP endpoint, composed: who may call (`http.host`, `http.token`),
 * `/healthz`, `/metrics`, `/events` and the web dashboard over the running server's
 * storage, queue, workers and agents. `PicklebotServer` hands over what it holds; this
 * file only wires it.
 */
import type { AgentCatalog } from "../agents/catalog.js";
import type { AgentDefinition } from "../agents/definition.js";
import type { McpServers } from "../agents/mcp/servers.js";
import { MediaStore } from "../agents/media/store.js";
import { toError, UserError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { secretRedactor } from "../base/redact.js";
import { type Config, configFileSetting, secretValues } from "../config/index.js";
import { loadWorkspaceCrons } from "../cron/admin.js";
import { describeCrons } from "../cron/describe.js";
import type { EventHub } from "../events/hub.js";
import { type HttpAccess, resolveAccess } from "../http/access.js";
import { type HealthReport, HttpEndpoint } from "../http/endpoint.js";
import type { Clock, JobAdmin, JobQueue, SessionStopper, Storage } from "../ports/index.js";
import { describeCluster } from "../storage/cluster-status.js";
import { agentExtras } from "../web/agent-extras.js";
import { composeDashboard } from "../web/index.js";
import type { HealthView } from "../web/overview.js";
import type { WebReplies } from "../web/replies.js";
import { ownerSections } from "../web/sections/index.js";
import type { ServerMetrics } from "./metrics.js";

/** What a running server hands its HTTP endpoint. */
export interface ServerHttpParts {
  workspace: string;
  config: Config;
  /** The agents given at start, and the live catalog (hot reloaded) when there is one. */
  agents: ReadonlyMap<string, AgentDefinition>;
  catalog?: AgentCatalog;
  storage: Storage;
  queue: JobQueue & JobAdmin;
  clock: Clock;
  /** The agents whose jobs this process claims (the default agent first). */
  claimedAgents: () => string[];
  health: () => Promise<HealthReport & HealthView>;
  events: EventHub;
  metrics: ServerMetrics;
  /** Stops a session's running job wherever it runs (the Cancel and Stop buttons). */
  stopper: SessionStopper;
  webReplies: WebReplies;
  mcp: McpServers | null;
  logger: Logger;
}

/** The server's HTTP endpoint, not yet listening; null when `http.enabled` is false. */
export function serverHttpEndpoint(parts: ServerHttpParts): HttpEndpoint | null {
  const { http, history } = parts.config;
  if (!http.enabled) return null;
  const access = resolveAccess({
    token: http.token,
    historyPath: history.path,
    announce: (text) => parts.logger.info(text),
  });
  return new HttpEndpoint({
    host: http.host,
    port: http.port,
    registry: parts.metrics.registry,
    health: parts.health,
    events: parts.events,
    eventStream: {
      onDropped: (count) => parts.metrics.eventsDropped.inc(count),
      onClients: (count) => parts.metrics.eventClients.set(count),
      onExit: (reason) => parts.logger.warn(reason),
    },
    access,
    dashboard: http.dashboard ? serverDashboard(parts, access) : null,
    onError: (error) => parts.logger.error({ error: error.message }, "an HTTP request failed"),
  });
}

/**
 * Listens on `http.host:http.port`; resolves with its `host:port`.
 *
 * @throws UserError naming the `http.` setting when the address cannot be listened on.
 */
export async function listenHttp(
  endpoint: HttpEndpoint,
  config: Config,
  workspace: string,
): Promise<string> {
  try {
    return await endpoint.listen();
  } catch (error) {
    throw listenError(error, config.http, (key) => configFileSetting(workspace, ["http", key]));
  }
}

/** The web dashboard over the server's storage, workers and session stopper. */
function serverDashboard(parts: ServerHttpParts, access: HttpAccess) {
  const { config, workspace, catalog, storage, queue, clock } = parts;
  return composeDashboard({
    access,
    readOnly: config.http.read_only,
    overview: {
      health: parts.health,
      crons: async () =>
        describeCrons(loadWorkspaceCrons(workspace, config).crons, storage.cronState, clock),
      cluster: () => describeCluster(storage),
      jobs: queue,
      clock,
    },
    jobs: {
      jobs: queue,
      stopper: parts.stopper,
      transcripts: storage,
    },
    sessions: {
      history: storage.history,
      usage: storage.usage,
      queue,
      media: new MediaStore(config.history.path),
      agents: parts.claimedAgents,
      replies: parts.webReplies,
      stopper: parts.stopper,
      redact: secretRedactor(secretValues(config)),
    },
    more: ownerSections({
      workspace,
      config,
      storage,
      queue,
      clock,
      agents: parts.agents,
      ...(catalog ? { catalog, describeExtras: agentExtras(catalog, () => parts.mcp) } : {}),
    }),
  });
}

/**
 * Why the HTTP endpoint could not listen, naming the config file that sets the address,
 * or saying it is the default and where to set another.
 */
function listenError(
  thrown: unknown,
  http: Pick<Config["http"], "host" | "port">,
  fileSetting: (key: "host" | "port") => string | undefined,
): Error {
  const { host, port } = http;
  const code = (thrown as NodeJS.ErrnoException).code;
  /** "http.port 8787 in picklebot.yml", or "the default http.port 8787" with where to set it. */
  const setting = (key: "host" | "port", value: string | number) => {
    const file = fileSetting(key);
    return file === undefined
      ? { what: `the default http.${key} ${value}`, where: " in picklebot.yaml" }
      : { what: `http.${key} ${value} in ${file}`, where: "" };
  };
  if (code === "EADDRINUSE") {
    const { what, where } = setting("port", port);
    const fix = where
      ? `set a free http.port${where}, or http.enabled: false there`
      : "choose another port or set http.enabled: false";
    return new UserError(`${what} is already in use on ${host}; ${fix}`, { cause: thrown });
  }
  if (code === "EACCES") {
    const { what, where } = setting("port", port);
    return new UserError(
      `${what} needs root to listen on; choose a port above 1023${where} or set http.enabled: false`,
      { cause: thrown },
    );
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
    const { what, where } = setting("host", host);
    return new UserError(
      `${what} is not an address of this machine; use 127.0.0.1, or 0.0.0.0 for every interface${where}`,
      { cause: thrown },
    );
  }
  return toError(thrown);
}
