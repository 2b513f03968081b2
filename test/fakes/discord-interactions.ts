/**
 * Message components and interactions for the fake Discord: the checks Discord makes on
 * buttons, and the interactions a press creates, each answerable once.
 *
 * An interaction must get its first response within {@link RESPONSE_WINDOW_MS} (by the
 * fake's clock): later, or for an unknown id or token, Discord answers 404 10062 "Unknown
 * interaction"; a second response gets 400 40060.
 */

/** An error response of the REST API: status, JSON body and extra headers. */
export class RestFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: object,
    readonly headers: Record<string, string> = {},
  ) {
    super(JSON.stringify(body));
  }
}

/** How long after its creation an interaction can be responded to. */
export const RESPONSE_WINDOW_MS = 3000;
const MAX_CUSTOM_ID_LENGTH = 100;
const MAX_ROW_BUTTONS = 5;
const ACTION_ROW = 1;
const BUTTON = 2;

/** A button as a message carries it. */
export interface ButtonComponent {
  type: typeof BUTTON;
  style: number;
  label: string;
  custom_id: string;
}

/** One row of components. */
export interface ActionRow {
  type: typeof ACTION_ROW;
  components: ButtonComponent[];
}

/** One interaction response the bot made, refused ones included. */
export interface InteractionResponse {
  interactionId: string;
  /** The response type: 4 a message, 6 a deferred update… */
  type: unknown;
  /** Its `data` (content, flags), if any. */
  data?: unknown;
  /** 204, or the refusal's status. */
  status: number;
  /** Discord's error code of a refusal (10062, 40060). */
  code?: number;
}

/** The 400 Discord gives for a malformed body: 50035 with the field's errors. */
export function invalidFormBody(path: string[], code: string, message: string): RestFailure {
  const errors = path.reduceRight<object>((inner, key) => ({ [key]: inner }), {
    _errors: [{ code, message }],
  });
  return new RestFailure(400, { message: "Invalid Form Body", code: 50035, errors });
}

/**
 * The components of a message body, checked as Discord does (rows of at most 5 buttons,
 * each with a label and a unique custom_id of at most 100 characters).
 */
export function checkComponents(components: unknown): ActionRow[] {
  if (!Array.isArray(components)) {
    throw invalidFormBody(["components"], "BASE_TYPE_ARRAY", "Must be an array.");
  }
  const seen = new Set<string>();
  components.forEach((row: Partial<ActionRow>, r) => {
    const at = ["components", String(r), "components"];
    const buttons = row.components ?? [];
    if (row.type !== ACTION_ROW || buttons.length === 0 || buttons.length > MAX_ROW_BUTTONS) {
      throw invalidFormBody(at, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.");
    }
    buttons.forEach((button, b) => {
      checkButton(button, [...at, String(b)], seen);
    });
  });
  return components as ActionRow[];
}

function checkButton(button: Partial<ButtonComponent>, at: string[], seen: Set<string>): void {
  const customId = button.custom_id ?? "";
  if (button.type !== BUTTON) {
    throw invalidFormBody([...at, "type"], "COMPONENT_TYPE_INVALID", "Invalid component type");
  }
  if (typeof button.label !== "string" || button.label === "") {
    throw invalidFormBody([...at, "label"], "BASE_TYPE_REQUIRED", "This field is required");
  }
  if (customId === "" || customId.length > MAX_CUSTOM_ID_LENGTH) {
    const message = `Must be between 1 and ${MAX_CUSTOM_ID_LENGTH} in length.`;
    throw invalidFormBody([...at, "custom_id"], "BASE_TYPE_BAD_LENGTH", message);
  }
  if (seen.has(customId)) {
    const message = "Component custom id cannot be duplicated";
    throw invalidFormBody([...at, "custom_id"], "COMPONENT_CUSTOM_ID_DUPLICATED", message);
  }
  seen.add(customId);
}

/** The interactions created by presses, and their responses. */
export class Interactions {
  /** Every interaction response, in order, refused ones included. */
  readonly responses: InteractionResponse[] = [];
  readonly #made = new Map<string, { token: string; at: number; answered: boolean }>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Records an interaction created now. */
  create(id: string, token: string): void {
    this.#made.set(id, { token, at: this.#now(), answered: false });
  }

  /** `POST /interactions/:id/:token/callback`: undefined (204), or a {@link RestFailure}. */
  respond(id: string, token: string, body: Record<string, unknown>): undefined {
    const response = { interactionId: id, type: body.type, data: body.data };
    try {
      this.#accept(id, token);
    } catch (error) {
      const { status, body: refusal } = error as RestFailure;
      this.responses.push({ ...response, status, code: (refusal as { code: number }).code });
      throw error;
    }
    this.responses.push({ ...response, status: 204 });
    return undefined;
  }

  #accept(id: string, token: string): void {
    const made = this.#made.get(id);
    if (!made || made.token !== token) throw unknownInteraction();
    if (made.answered) {
      throw new RestFailure(400, {
        message: "Interaction has already been acknowledged.",
        code: 40060,
      });
    }
    if (this.#now() - made.at > RESPONSE_WINDOW_MS) throw unknownInteraction();
    made.answered = true;
  }
}

function unknownInteraction(): RestFailure {
  return new RestFailure(404, { message: "Unknown interaction", code: 10062 });
}
