/**
 * The Message Batches routes of the fake Anthropic API, as the real API documents them:
 *
 *   POST /v1/messages/batches                  create: `{requests: [{custom_id, params}]}`
 *   GET  /v1/messages/batches                  list, newest first (`limit`, `after_id`)
 *   GET  /v1/messages/batches/{id}             retrieve
 *   POST /v1/messages/batches/{id}/cancel      cancel (`canceling`, then `ended`)
 *   GET  /v1/messages/batches/{id}/results     JSONL, once the batch has `ended`
 *
 * A batch stays `in_progress` until the test ends it ({@link FakeBatches.endBatches}); only
 * then does each item take its answer (the fake's script, in order), so the usage and
 * cache figures of a batch item are counted like those of a `/v1/messages` call. An item
 * whose scripted answer is an HTTP error ends `errored` with that error; `expire` ends
 * the items `expired` instead. Refused like the real API: bad `params` (400), a duplicate or
 * malformed `custom_id` (400), an unknown id (404), results before `ended` (400).
 */
import type { ServerResponse } from "node:http";
import { refusalOf } from "./anthropic-rules.js";

/** A request item as created. */
export interface FakeBatchItem {
  custom_id: string;
  params: Record<string, unknown> & { messages: Array<{ role: string; content: unknown }> };
}

/** One line of a batch's results. */
export type FakeBatchResult =
  | { type: "succeeded"; message: Record<string, unknown> }
  | { type: "errored"; error: { type: "error"; error: { type: string; message: string } } }
  | { type: "expired" }
  | { type: "canceled" };

/** A batch the fake holds. */
export interface FakeBatch {
  id: string;
  items: FakeBatchItem[];
  status: "in_progress" | "canceling" | "ended";
  createdAt: Date;
  endedAt: Date | null;
  cancelAt: Date | null;
  results: Map<string, FakeBatchResult>;
}

/** The test's handle on the fake's batches. */
export interface FakeBatches {
  /** Every batch created, oldest first. */
  readonly created: FakeBatch[];
  /** Requests to any batch route, oldest first ("GET /v1/messages/batches/…"). */
  readonly calls: string[];
  /**
   * Ends every batch still processing: each item is answered from the script, or
   * `expired` when `expire` is set (all of them, or those whose custom_id it lists).
   */
  endBatches(options?: { expire?: true | string[] }): void;
  /**
   * Holds the answers of later creates (the batch is created, its answer waits) until the
   * returned function is called: a client killed meanwhile never learns the batch's id.
   */
  holdCreates(): () => void;
  /** Holds the answers of later results requests until the returned function is called. */
  holdResults(): () => void;
}

/** What the batch routes need of the fake: one answer to one request's params. */
export type AnswerItem = (params: FakeBatchItem["params"]) => FakeBatchResult;

const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_REQUESTS = 100_000;

/** The batch routes; `handle` answers a request and returns false when it is not theirs. */
export function createBatchRoutes(answerItem: AnswerItem) {
  const batches: FakeBatch[] = [];
  const calls: string[] = [];
  let counter = 0;
  const holds: { create: Promise<void> | null; results: Promise<void> | null } = {
    create: null,
    results: null,
  };
  function hold(kind: keyof typeof holds): () => void {
    let release = () => {};
    holds[kind] = new Promise<void>((resolve) => {
      release = () => {
        holds[kind] = null;
        resolve();
      };
    });
    return release;
  }

  const control: FakeBatches = {
    created: batches,
    calls,
    endBatches(options = {}) {
      for (const batch of batches) {
        if (batch.status === "ended") continue;
        for (const item of batch.items) {
          const expire =
            options.expire === true || (options.expire?.includes(item.custom_id) ?? false);
          batch.results.set(item.custom_id, itemResult(batch, item, expire));
        }
        batch.status = "ended";
        batch.endedAt = new Date();
      }
    },
    holdCreates: () => hold("create"),
    holdResults: () => hold("results"),
  };

  function itemResult(batch: FakeBatch, item: FakeBatchItem, expire: boolean): FakeBatchResult {
    if (batch.status === "canceling") return { type: "canceled" };
    if (expire) return { type: "expired" };
    return answerItem(item.params);
  }

  async function handle(
    method: string,
    path: string,
    query: URLSearchParams,
    raw: string,
    res: ServerResponse,
  ): Promise<boolean> {
    if (!path.startsWith("/v1/messages/batches")) return false;
    calls.push(`${method} ${path}`);
    const [, id, action] = /^\/v1\/messages\/batches(?:\/([^/]+))?(?:\/([^/]+))?$/.exec(path) ?? [];
    if (method === "POST" && id === undefined) await create(raw, res);
    else if (method === "GET" && id === undefined) list(query, res);
    else {
      const batch = batches.find((candidate) => candidate.id === id);
      if (!batch) sendBatchError(res, 404, "not_found_error", `No batch found with id ${id}.`);
      else if (method === "GET" && action === undefined) sendJson(res, view(batch));
      else if (method === "POST" && action === "cancel") cancel(batch, res);
      else if (method === "GET" && action === "results") await results(batch, res);
      else sendBatchError(res, 404, "not_found_error", `no route for ${method} ${path}`);
    }
    return true;
  }

  async function create(raw: string, res: ServerResponse): Promise<void> {
    const refusal = createRefusal(raw);
    if (typeof refusal === "string") {
      sendBatchError(res, 400, "invalid_request_error", refusal);
      return;
    }
    counter += 1;
    const batch: FakeBatch = {
      id: `msgbatch_fake_${String(counter).padStart(4, "0")}`,
      items: refusal,
      status: "in_progress",
      createdAt: new Date(),
      endedAt: null,
      cancelAt: null,
      results: new Map(),
    };
    batches.push(batch);
    if (holds.create) await holds.create;
    if (!res.destroyed) sendJson(res, view(batch));
  }

  function list(query: URLSearchParams, res: ServerResponse): void {
    const limit = Math.min(1000, Math.max(1, Number(query.get("limit") ?? 20)));
    const newestFirst = [...batches].reverse();
    const after = query.get("after_id");
    const start = after === null ? 0 : newestFirst.findIndex((batch) => batch.id === after) + 1;
    const page = newestFirst.slice(start, start + limit);
    sendJson(res, {
      data: page.map(view),
      has_more: start + limit < newestFirst.length,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
    });
  }

  function cancel(batch: FakeBatch, res: ServerResponse): void {
    if (batch.status === "in_progress") {
      batch.status = "canceling";
      batch.cancelAt = new Date();
    }
    sendJson(res, view(batch));
  }

  async function results(batch: FakeBatch, res: ServerResponse): Promise<void> {
    if (holds.results) await holds.results;
    if (res.destroyed) return;
    if (batch.status !== "ended") {
      sendBatchError(res, 400, "invalid_request_error", `Batch ${batch.id} has not ended yet.`);
      return;
    }
    const lines = batch.items.map((item) =>
      JSON.stringify({ custom_id: item.custom_id, result: batch.results.get(item.custom_id) }),
    );
    res.writeHead(200, { "content-type": "application/binary" });
    res.end(`${lines.join("\n")}\n`);
  }

  function view(batch: FakeBatch) {
    const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    for (const item of batch.items) {
      const result = batch.results.get(item.custom_id);
      counts[result?.type ?? "processing"] += 1;
    }
    return {
      id: batch.id,
      type: "message_batch",
      processing_status: batch.status,
      request_counts: counts,
      created_at: batch.createdAt.toISOString(),
      expires_at: new Date(batch.createdAt.getTime() + 24 * 3_600_000).toISOString(),
      ended_at: batch.endedAt?.toISOString() ?? null,
      cancel_initiated_at: batch.cancelAt?.toISOString() ?? null,
      archived_at: null,
      results_url: batch.status === "ended" ? `/v1/messages/batches/${batch.id}/results` : null,
    };
  }

  return { handle, control };
}

/** Why the API refuses a create body, or its items when it accepts it. */
function createRefusal(raw: string): string | FakeBatchItem[] {
  let body: { requests?: unknown };
  try {
    body = JSON.parse(raw) as { requests?: unknown };
  } catch {
    return "request body is not valid JSON";
  }
  const requests = body.requests;
  if (!Array.isArray(requests) || requests.length === 0) {
    return "requests: at least one request is required";
  }
  if (requests.length > MAX_REQUESTS) return `requests: at most ${MAX_REQUESTS} requests`;
  const seen = new Set<string>();
  for (const [index, request] of requests.entries()) {
    const item = request as Partial<FakeBatchItem>;
    const where = `requests.${index}`;
    if (typeof item.custom_id !== "string" || !CUSTOM_ID.test(item.custom_id)) {
      return `${where}.custom_id: must match ^[a-zA-Z0-9_-]{1,64}$`;
    }
    if (seen.has(item.custom_id)) {
      return `${where}.custom_id: Duplicate custom_id ${item.custom_id}; custom_id must be unique within a batch`;
    }
    seen.add(item.custom_id);
    const refusal = paramsRefusal(item.params, `${where}.params`);
    if (refusal) return refusal;
  }
  return requests as FakeBatchItem[];
}

function paramsRefusal(params: unknown, where: string): string | null {
  if (typeof params !== "object" || params === null) return `${where}: Field required`;
  const fields = params as Record<string, unknown>;
  if (typeof fields.model !== "string") return `${where}.model: Field required`;
  if (typeof fields.max_tokens !== "number" || fields.max_tokens < 1) {
    return `${where}.max_tokens: Field required`;
  }
  if (fields.stream === true) return `${where}.stream: streaming is not supported in batches`;
  if (!Array.isArray(fields.messages)) return `${where}.messages: Field required`;
  const refusal = refusalOf(fields.messages as Array<{ role: string; content: string }>);
  return refusal === null ? null : `${where}: ${refusal}`;
}

function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json", "request-id": "req_fake_batch" });
  res.end(JSON.stringify(body));
}

function sendBatchError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json", "request-id": "req_fake_batch" });
  res.end(JSON.stringify({ type: "error", error: { type, message } }));
}
