/**
 * `picklebot events`: the running server's event stream (`GET /events`), as readable lines
 * or JSON lines; without `--follow`, the events the server still buffers, then it exits.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Command } from "commander";
import { UserError } from "../base/errors.js";
import { readSse, untilQuiet } from "../base/sse.js";
import { typeMatcher } from "../events/broadcast.js";
import { clientToken } from "../http/token-file.js";
import { EVENT_TYPES, type PicklebotEvent } from "../ports/index.js";
import { loadWorkspace } from "./context.js";
import { formatTime, printLine } from "./output.js";
import { serverBaseUrl } from "./server-url.js";
import { formatTokens } from "./transcript-print.js";

/** Options of `picklebot events`. */
interface EventsOptions {
  follow?: boolean;
  json?: boolean;
  type?: string;
}

/** The `events` command. */
export function eventsCommand(): Command {
  return new Command("events")
    .description(
      "print the running server's events (jobs, model and tool calls, deliveries, crons, workers, cluster)",
    )
    .option("-f, --follow", "keep printing events as they happen (Ctrl-C stops)")
    .option("--json", "print one JSON object per line, as served at GET /events")
    .option(
      "--type <patterns>",
      "only these types, comma-separated; a trailing * matches a prefix (job.*)",
    )
    .action(async (options: EventsOptions, command: Command) => {
      const loaded = loadWorkspace(command);
      checkTypes(options.type);
      const base = serverBaseUrl(loaded.config, "the event stream");
      const query = new URLSearchParams({
        follow: options.follow ? "true" : "false",
        ...(options.type ? { type: options.type } : {}),
      });
      const token = clientToken(loaded.config.http.token, loaded.config.history.path);
      await readEvents(`${base}/events?${query}`, token, options);
    });
}

/** How long `--follow` waits before connecting again, and how many times in a row it tries. */
const RESUME_DELAY_MS = 500;
const RESUME_TRIES = 20;
/** A followed stream silent this long (three heartbeats) is taken for lost, and resumed. */
const QUIET_MS = 45_000;

/**
 * Prints the stream at `url`. Following, a stream that ends, or goes silent for
 * {@link QUIET_MS}, is resumed after its last event (the server's fan-out process
 * restarted, the connection was lost), and a connection that fails is tried
 * again for {@link RESUME_TRIES} × {@link RESUME_DELAY_MS} (the server restarts), except
 * when the very first one is refused: then no server runs, and it says so at once.
 */
async function readEvents(url: string, token: string | null, options: EventsOptions) {
  let lastId = "";
  for (let connected = false, failures = 0; ; await sleep(RESUME_DELAY_MS)) {
    const answer = await request(url, token, lastId);
    if (typeof answer === "string") {
      failures += 1;
      const retry = options.follow && (connected || answer === "dropped");
      if (retry && failures <= RESUME_TRIES) continue;
      throw new UserError(
        `no picklebot server answers at ${new URL(url).origin}; start one with picklebot server (http.host and http.port in picklebot.yaml say where it listens)`,
      );
    }
    connected = true;
    failures = 0;
    if (!answer.body)
      throw new UserError(`the server at ${new URL(url).origin} sent no event stream`);
    try {
      const body = options.follow ? untilQuiet(answer.body, QUIET_MS) : answer.body;
      for await (const message of readSse(body)) {
        lastId = message.id ?? lastId;
        printEvent(JSON.parse(message.data) as PicklebotEvent, options);
      }
    } catch (error) {
      // A connection cut mid-stream is resumed like one that ended, when following.
      if (!options.follow) throw error;
    }
    if (!options.follow) return;
  }
}

/** Refuses a `--type` pattern that matches no event type, listing the types. */
function checkTypes(patterns: string | undefined): void {
  if (!patterns) return;
  for (const pattern of patterns.split(",").map((part) => part.trim())) {
    const matches = typeMatcher(pattern);
    if (!EVENT_TYPES.some((type) => matches(type))) {
      throw new UserError(
        `--type ${pattern} matches no event type; types are ${EVENT_TYPES.join(", ")} (a trailing * matches a prefix: job.*)`,
      );
    }
  }
}

/**
 * `GET url` with the token and the resume point (`Last-Event-ID`), when there are: the
 * response, or why there is none: "refused" (nothing listens there), "dropped" (the
 * connection closed before an answer).
 *
 * @throws UserError with the status and the server's text when the server refuses.
 */
async function request(
  url: string,
  token: string | null,
  lastId: string,
): Promise<Response | "refused" | "dropped"> {
  const headers: Record<string, string> = {
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    ...(lastId ? { "last-event-id": lastId } : {}),
  };
  let response: Response;
  try {
    response = await fetch(url, { headers });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code === "ECONNREFUSED" ? "refused" : "dropped";
  }
  if (!response.ok) {
    const body = (await response.text()).trim();
    throw new UserError(
      `the server at ${new URL(url).origin} refused /events: ${response.status} ${body}`,
    );
  }
  return response;
}

/** One event, as a JSON line (`--json`) or a readable one. */
function printEvent(event: PicklebotEvent, options: EventsOptions): void {
  if (options.json) console.log(JSON.stringify(event));
  else printLine(describeEvent(event));
}

/** One readable line: time, type, and what the event is about. */
function describeEvent(event: PicklebotEvent): string {
  const instance = event.instance === "local" ? "" : ` [${event.instance}]`;
  return `${formatTime(event.at)}${instance} ${event.type.padEnd(17)} ${detailOf(event)}`;
}

function detailOf(event: PicklebotEvent): string {
  switch (event.type) {
    case "job.enqueued":
    case "job.started":
    case "job.checkpointed":
    case "job.parked":
    case "job.done":
    case "job.failed":
    case "job.stopped": {
      const wait = event.waitingFor ? ` waiting for ${event.waitingFor}` : "";
      const retry = event.retrying ? " (will retry)" : "";
      const error = event.error ? `: ${event.error}` : "";
      return `job ${event.jobId} ${event.agentId} ${event.sessionKey} attempt ${event.attempts}${wait}${retry}${error}`;
    }
    case "model.started":
    case "model.ended":
      return `${event.model} ${event.agentId} session ${event.sessionId}${event.usage ? ` ${formatTokens(event.usage)}` : ""}`;
    case "tool.started":
    case "tool.ended":
      return `${event.tool} ${event.agentId} call ${event.callId}${event.isError ? " (error)" : ""}`;
    case "message.delivered":
    case "message.refused":
      return `${event.platform}:${event.chatId}${event.jobId ? ` job ${event.jobId}` : ""}${event.error ? `: ${event.error}` : ""}`;
    case "cron.fired":
      return `${event.cronId} → job ${event.jobId} (${event.agentId})`;
    case "memory.changed":
      return `${event.agentId} ${event.scope} ${event.action} by ${event.by}${event.callId ? ` call ${event.callId}` : ""}`;
    case "worker.crashed":
    case "worker.restarted":
      return `${event.worker}${event.error ? `: ${event.error}` : ""}`;
    case "instance.joined":
    case "instance.left":
    case "leader.changed":
      return event.subject ?? "(no leader)";
  }
}
