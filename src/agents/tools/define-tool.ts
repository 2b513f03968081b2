import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import type { Tool, ToolContext } from "../../ports/index.js";

/** What {@link defineTool} needs: the model-facing name and description, one zod schema. */
export interface ToolDefinition<Schema extends z.ZodObject> {
  name: string;
  description: string;
  /** Validates the input and, through `z.toJSONSchema`, is the spec's `input_schema`. */
  input: Schema;
  /** Runs with input that passed `input`. */
  run(input: z.output<Schema>, context: ToolContext): Promise<string>;
}

/**
 * Builds a {@link Tool} from a zod schema: the JSON schema the model sees is generated
 * from it, and input that does not match is refused with a {@link ToolError} naming
 * the field and what was expected (`write: "content" must be a string (got number)`).
 */
export function defineTool<Schema extends z.ZodObject>(definition: ToolDefinition<Schema>): Tool {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(definition.input, { io: "input" });
  return {
    spec: { name: definition.name, description: definition.description, input_schema: inputSchema },
    async run(input, context) {
      const parsed = definition.input.safeParse(input);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => describeIssue(issue, input));
        throw new ToolError(`${definition.name}: ${problems.join("; ")}`);
      }
      return definition.run(parsed.data, context);
    },
  };
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const field = issue.path.length === 0 ? "input" : `"${issue.path.join(".")}"`;
  switch (issue.code) {
    case "invalid_type": {
      const found = issue.path.length === 0 ? input : valueAt(input, issue.path);
      const got = found === undefined ? "it is missing" : `got ${kindOf(found)}`;
      const article = issue.expected === "object" ? "an" : "a";
      return `${field} must be ${article} ${issue.expected} (${got})`;
    }
    case "too_small":
      return issue.origin === "string" && issue.minimum === 1
        ? `${field} must not be empty`
        : `${field} is too small: ${issue.message}`;
    default:
      return `${field}: ${issue.message}`;
  }
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}
