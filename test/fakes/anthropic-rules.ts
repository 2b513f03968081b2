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
 *   - images: base64 of image/jpeg, png, gif or webp whose bytes are of that type, at most
 *     5 MB each; documents: base64 of application/pdf, at most 32 MB, starting with %PDF-,
 *     at most 100 pages; images plus PDF pages at most 100 in a request (a 200k-token
 *     model's limit), each with the API's error text
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
/** The most images plus PDF pages one request may hold (a 200k-token model's). */
const MAX_MEDIA = 100;
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** The first bytes of each image type the API reads, as it checks the declared type. */
const IMAGE_MAGIC: Record<string, (bytes: Buffer) => boolean> = {
  "image/jpeg": (bytes) => bytes.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])),
  "image/png": (bytes) => bytes.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])),
  "image/gif": (bytes) => bytes.subarray(0, 4).toString("latin1") === "GIF8",
  "image/webp": (bytes) =>
    bytes.subarray(0, 4).toString("latin1") === "RIFF" &&
    bytes.subarray(8, 12).toString("latin1") === "WEBP",
};

function mediaRule(messages: readonly Message[]): Refusal | null {
  let images = 0;
  let pages = 0;
  for (const [index, message] of messages.entries()) {
    for (const [position, block] of blocksOf(message).entries()) {
      const where = `messages.${index}.content.${position}`;
      if (block.type === "image") {
        images += 1;
        const refused = imageRefusal(block.source as Block | undefined, `${where}.image.source`);
        if (refused) return refused;
      }
      if (block.type === "document") {
        const checked = documentCheck(block.source as Block | undefined, where);
        if (typeof checked === "string") return checked;
        pages += checked;
      }
    }
  }
  return images + pages > MAX_MEDIA
    ? `Too much media: ${pages} document pages + ${images} images > ${MAX_MEDIA}`
    : null;
}

/** The API's refusal of an image source (`where`: its path in the request), or null. */
function imageRefusal(source: Block | undefined, where: string): string | null {
  if (source?.type !== "base64") return `${where}: the source must be base64`;
  const mediaType = String(source.media_type);
  const matches = IMAGE_MAGIC[mediaType];
  if (!matches) {
    const listed = IMAGE_TYPES.map((type) => `'${type}'`);
    return `${where}.base64.media_type: Input should be ${listed.slice(0, -1).join(", ")} or ${listed.at(-1)}`;
  }
  const bytes = Buffer.from(String(source.data), "base64");
  if (bytes.byteLength > MAX_IMAGE_BYTES) {
    return `${where}.base64: image exceeds 5 MB maximum: ${bytes.byteLength} bytes > ${MAX_IMAGE_BYTES} bytes`;
  }
  if (bytes.byteLength === 0) return `${where}.base64: Could not process image`;
  if (!matches(bytes)) {
    return `${where}.base64.data: Image does not match the provided media type ${mediaType}`;
  }
  return null;
}

/** The pages of a document block, or the API's refusal of it. */
function documentCheck(source: Block | undefined, where: string): number | string {
  const at = `${where}.document.source.base64`;
  if (source?.type !== "base64" || source.media_type !== "application/pdf") {
    return `${at}: Input should be 'application/pdf'`;
  }
  const bytes = Buffer.from(String(source.data), "base64");
  if (bytes.byteLength > 32 * 1024 * 1024) return `${at}: PDF exceeds 32 MB maximum`;
  if (!bytes.subarray(0, 5).equals(Buffer.from("%PDF-")))
    return `${at}: The PDF specified was not valid.`;
  const pages = Math.max(
    1,
    bytes.toString("latin1").match(/\/Type\s*\/Page(?![a-zA-Z])/g)?.length ?? 0,
  );
  if (pages > MAX_MEDIA)
    return `${where}.pdf.source.base64.data: A maximum of ${MAX_MEDIA} PDF pages may be provided.`;
  return pages;
}
