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

function emptyMessage(): { id: string | null; event: string; data: string | null } {
  return { id: null, event: "message", data: null };
}
