/**
 * What the real Messages API refuses about a request's `messages` and `tools`, with its
 * status (400, `invalid_request_error`) and its error text, so that a test against the fake
 * fails where production would. Checked in the API's order; the first broken rule is the
 * answer.
 *
 *   - at least one message, and the first one from the user
 *   - roles alternate
 *   - no message without content (except a final assistant prefill), no empty text block
 *   - every `tool_use` answered by a `tool_result` in the very next message, and every
 *     `tool_result` answering a `tool_use` of the message just before
 *   - no two tools of one name
 *   - every `server_tool_use` followed, in the same message, by its
 *     `web_search_tool_result`, and that result exactly as the API returned it
 *     (`serverResultsRefusal`, given the results the fake sent)
 *   - images: base64 of image/jpeg, png, gif or webp, at most 5 MB each, at most 100 in a
 *     request; documents: base64 of application/pdf, at most 32 MB, starting with %PDF-
 */
/** A message as a request carries it (content blocks are read as plain objects). */
interface Message {
  role: string;
  content: string | readonly object[];
}
type Block = Record<string, unknown>;

/** Why the API refuses a request: the error message of its 400. */
export type Refusal = string;

/** Why the API refuses a request's `tools` (two tools of one name), or null. */
export function toolsRefusal(tools: readonly { name?: unknown }[] | undefined): Refusal | null {
  const names = (tools ?? []).map((tool) => tool.name);
  return new Set(names).size === names.length ? null : "tools: Tool names must be unique.";
}

/** The first rule `messages` breaks, or null when the API would accept them. */
export function refusalOf(messages: readonly Message[]): Refusal | null {
  return (
    firstRoleRule(messages) ??
    alternationRule(messages) ??
    emptinessRule(messages) ??
    toolPairRule(messages) ??
    mediaRule(messages)
  );
}

function firstRoleRule(messages: readonly Message[]): Refusal | null {
  if (messages.length === 0) return "messages: at least one message is required";
  if (messages[0]?.role !== "user") return 'messages: first message must use the "user" role';
  return null;
}

function alternationRule(messages: readonly Message[]): Refusal | null {
  for (let index = 1; index < messages.length; index++) {
    const role = messages[index]?.role;
    if (role === messages[index - 1]?.role) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`;
    }
  }
  return null;
}

function emptinessRule(messages: readonly Message[]): Refusal | null {
  for (const [index, message] of messages.entries()) {
    const blocks = blocksOf(message);
    const finalAssistant = index === messages.length - 1 && message.role === "assistant";
    if (blocks.length === 0 && !finalAssistant) {
      return `messages.${index}: all messages must have non-empty content except for the optional final assistant message`;
    }
    for (const block of blocks) {
      if (block.type !== "text") continue;
      const text = String(block.text ?? "");
      if (text === "") return "messages: text content blocks must be non-empty";
      if (text.trim() === "")
        return "messages: text content blocks must contain non-whitespace text";
    }
  }
  return null;
}

function toolPairRule(messages: readonly Message[]): Refusal | null {
  for (const [index, message] of messages.entries()) {
    const asked = idsOf(messages[index - 1], "tool_use", "id");
    for (const [position, block] of blocksOf(message).entries()) {
      if (block.type !== "tool_result" || asked.has(String(block.tool_use_id))) continue;
      return `messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    }
    if (message.role !== "assistant" || index === messages.length - 1) continue;
    const answered = idsOf(messages[index + 1], "tool_result", "tool_use_id");
    const unanswered = [...idsOf(message, "tool_use", "id")].filter((id) => !answered.has(id));
    if (unanswered.length > 0) {
      return `messages.${index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  return null;
}

function blocksOf(message: Message | undefined): Block[] {
  if (!message) return [];
  if (typeof message.content === "string")
    return message.content === "" ? [] : [{ type: "text", text: message.content }];
  return message.content as Block[];
}

function idsOf(message: Message | undefined, type: string, field: string): Set<string> {
  return new Set(
    blocksOf(message)
      .filter((block) => block.type === type)
      .map((block) => String(block[field])),
  );
}

/**
 * Why the API refuses the web searches in `messages`: a `server_tool_use` without its
 * result after it in the same message, or a result that is not the one the API returned
 * (`sent`: each result's JSON by its `tool_use_id`; `cache_control` aside). Null if none.
 */
export function serverResultsRefusal(
  messages: readonly Message[],
  sent: ReadonlyMap<string, string>,
): Refusal | null {
  for (const [index, message] of messages.entries()) {
    const blocks = blocksOf(message);
    for (const [position, block] of blocks.entries()) {
      const where = `messages.${index}.content.${position}`;
      if (block.type === "server_tool_use") {
        const answered = blocks
          .slice(position + 1)
          .some(
            (later) => later.type === "web_search_tool_result" && later.tool_use_id === block.id,
          );
        if (!answered) {
          return `${where}: \`server_tool_use\` block with id \`${String(block.id)}\` was found without a corresponding \`web_search_tool_result\` block`;
        }
      }
      if (block.type !== "web_search_tool_result") continue;
      const { cache_control: _mark, ...result } = block;
      if (sent.get(String(block.tool_use_id)) !== canonicalJson(result)) {
        return `${where}: the \`web_search_tool_result\` block is not the one the API returned (its content must be passed back unchanged)`;
      }
    }
  }
  return null;
}

/** JSON with every object's keys sorted: equal for equal values, whatever the key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a.localeCompare(b)))
      : inner,
  );
}

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const MAX_IMAGES = 100;

function mediaRule(messages: readonly Message[]): Refusal | null {
  let images = 0;
  for (const [index, message] of messages.entries()) {
    for (const [position, block] of blocksOf(message).entries()) {
      const where = `messages.${index}.content.${position}`;
      if (block.type === "image") {
        images += 1;
        const refused = imageRefusal(block.source as Block | undefined);
        if (refused) return `${where}.image.source.base64: ${refused}`;
      }
      if (block.type === "document") {
        const refused = documentRefusal(block.source as Block | undefined);
        if (refused) return `${where}.document.source.base64: ${refused}`;
      }
    }
  }
  return images > MAX_IMAGES ? `messages: Too many images: ${images} > ${MAX_IMAGES}` : null;
}

function imageRefusal(source: Block | undefined): string | null {
  if (source?.type !== "base64") return "the source must be base64";
  if (!IMAGE_TYPES.includes(String(source.media_type))) {
    return `Input should be ${IMAGE_TYPES.map((type) => `'${type}'`).join(", ")}`;
  }
  const bytes = Buffer.from(String(source.data), "base64");
  if (bytes.byteLength > 5 * 1024 * 1024) return "image exceeds 5 MB maximum";
  if (bytes.byteLength === 0) return "Could not process image";
  return null;
}

function documentRefusal(source: Block | undefined): string | null {
  if (source?.type !== "base64" || source.media_type !== "application/pdf") {
    return "Input should be 'application/pdf'";
  }
  const bytes = Buffer.from(String(source.data), "base64");
  if (bytes.byteLength > 32 * 1024 * 1024) return "PDF exceeds 32 MB maximum";
  if (!bytes.subarray(0, 5).equals(Buffer.from("%PDF-"))) return "The PDF specified was not valid.";
  return null;
}
