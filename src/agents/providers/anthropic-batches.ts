/**
 * The Message Batches side of the Anthropic provider ({@link ModelBatches}): one request
 * per batch, created, listed, polled and read back through the official SDK. The request
 * is built exactly as a streamed call's (same cache breakpoints), and a succeeded item's
 * message becomes the same {@link ModelReply}, its usage marked `batch`.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { ModelError } from "../../base/errors.js";
import type {
  BatchOutcome,
  BatchStatus,
  ModelBatches,
  ModelReply,
  ModelRequest,
} from "../../ports/index.js";

/** What the batch calls share with the provider's streamed calls. */
export interface BatchCodec {
  toParams(request: ModelRequest): Promise<Anthropic.MessageStreamParams>;
  toReply(message: Anthropic.Message): ModelReply;
}

/**
 * Runs one call on the provider's client (made on first use), turning what it throws
 * into a ModelError, or the abort's error when `signal` aborted it.
 */
export type OnClient = <T>(
  signal: AbortSignal | undefined,
  call: (client: Anthropic) => Promise<T>,
) => Promise<T>;

/** Batches listed per page: the API's largest. */
const PAGE = 1000;

/** The Message Batches API on the client `call` runs on. */
export function createAnthropicBatches(call: OnClient, codec: BatchCodec): ModelBatches {
  return {
    async submit(customId, request) {
      // The streamed call's params (no `stream`: a batch refuses it); picklebot sets no
      // `output_config`, the one field whose type differs.
      const params = (await codec.toParams(request)) as Anthropic.MessageCreateParamsNonStreaming;
      const batch = await call(request.signal, (client) =>
        client.messages.batches.create(
          { requests: [{ custom_id: customId, params }] },
          { signal: request.signal },
        ),
      );
      return batch.id;
    },
    listSince(since, signal) {
      return call(signal, async (client) => {
        const found: BatchStatus[] = [];
        for await (const batch of client.messages.batches.list({ limit: PAGE }, { signal })) {
          const status = toStatus(batch);
          if (status.createdAt < since) break;
          found.push(status);
        }
        return found;
      });
    },
    status(batchId, signal) {
      return call(signal, async (client) =>
        toStatus(await client.messages.batches.retrieve(batchId, {}, { signal })),
      );
    },
    outcome(batchId, customId, signal) {
      return call(signal, async (client) => {
        const lines = await client.messages.batches.results(batchId, {}, { signal });
        for await (const line of lines) {
          if (line.custom_id === customId) return toOutcome(line.result, codec);
        }
        return null;
      });
    },
  };
}

function toStatus(batch: Anthropic.Messages.MessageBatch): BatchStatus {
  return {
    id: batch.id,
    ended: batch.processing_status === "ended",
    createdAt: Date.parse(batch.created_at),
  };
}

function toOutcome(result: Anthropic.Messages.MessageBatchResult, codec: BatchCodec): BatchOutcome {
  switch (result.type) {
    case "succeeded": {
      const reply = codec.toReply(result.message);
      return { kind: "succeeded", reply: { ...reply, batch: true } };
    }
    case "errored": {
      const error = result.error.error;
      return { kind: "failed", reason: "errored", message: `${error.type}: ${error.message}` };
    }
    case "expired":
      return {
        kind: "failed",
        reason: "expired",
        message: "the batch expired before the request ran",
      };
    case "canceled":
      return { kind: "failed", reason: "canceled", message: "the batch was canceled" };
    default: {
      const never: never = result;
      throw new ModelError(`unknown batch result ${JSON.stringify(never)}`, { retryable: false });
    }
  }
}
