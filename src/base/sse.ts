/**
 * Reads a Server-Sent Events stream (the `GET /events` body) into messages: `id:`,
 * `event:` and `data:` fields up to a blank line; comment lines (`: heartbeat`) skipped.
 */

/** One SSE message. */
export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

/** Yields the messages of an SSE body as they arrive, until it ends. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let pending = "";
  let message = emptyMessage();
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf("\n");
    while (newline !== -1) {
      const line = pending.slice(0, newline).replace(/\r$/, "");
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
      if (line === "") {
        if (message.data !== null) yield { ...message, data: message.data };
        message = emptyMessage();
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") message.id = value;
      else if (field === "event") message.event = value;
      else if (field === "data")
        message.data = message.data === null ? value : `${message.data}\n${value}`;
    }
  }
}

/**
 * `body`, ended when no byte (not even a heartbeat comment) comes for `quietMs`: a
 * connection that went silent (a peer gone without a word, or a read that never returns:
 * fetch's body has been seen to hang after its connection closed) ends like a closed one.
 */
export function untilQuiet(
  body: ReadableStream<Uint8Array>,
  quietMs: number,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream({
    async pull(controller) {
      let timer: NodeJS.Timeout | undefined;
      const quiet = new Promise<"quiet">((resolve) => {
        timer = setTimeout(() => resolve("quiet"), quietMs);
      });
      const read = await Promise.race([reader.read(), quiet]);
      clearTimeout(timer);
      if (read !== "quiet" && !read.done) {
        controller.enqueue(read.value);
        return;
      }
      controller.close();
      reader.cancel().catch(() => undefined);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

function emptyMessage(): { id: string | null; event: string; data: string | null } {
  return { id: null, event: "message", data: null };
}
