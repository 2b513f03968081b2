/**
 * Turns zod validation issues into one-sentence messages a person can act on:
 * `<file>: <key.path>: expected …, found …; how to fix.` Shared by picklebot.yaml,
 * AGENT.md front matter and cron files.
 */
import type { z } from "zod";
import { UserError } from "../base/errors.js";
import { SECRET_KEYS } from "../base/redact.js";
import { didYouMean } from "./suggest.js";

type Issue = z.core.$ZodIssue;
type Schema = z.core.$ZodType;
type Path = readonly PropertyKey[];

/** Keys whose values are never repeated in an error message (`url` may hold a password). */
const SECRET_VALUE_KEYS = new Set([...SECRET_KEYS, "url"]);

/** Wrappers that only add a default or allow "absent": the key may be left out. */
const DEFAULTING_WRAPPERS = new Set(["default", "prefault", "optional"]);

/** Parameters a schema can attach to a custom issue. */
export interface CustomIssueParams {
  /** The message is a complete explanation, not an "expected …" phrase. */
  standalone?: boolean;
}

/**
 * One UserError for all the issues of a failed parse, one sentence per issue (one per
 * line). `context` carries the file and the first offending key.
 */
export function userErrorFromIssues(
  file: string,
  issues: readonly Issue[],
  schema: Schema,
): UserError {
  const lines = issues.flatMap((issue) => describeIssue(file, issue, schema));
  const first = issues[0];
  return new UserError(lines.join("\n"), {
    context: { file, key: first ? formatKeyPath(offendingPath(first)) : undefined },
  });
}

/** The key an issue is about: for unknown keys, the first unknown one, not its parent. */
function offendingPath(issue: Issue): Path {
  const unknown = issue.code === "unrecognized_keys" ? issue.keys[0] : undefined;
  return unknown === undefined ? issue.path : [...issue.path, unknown];
}

/** `telegram.allowed_user_ids[1]` for `["telegram", "allowed_user_ids", 1]`. */
export function formatKeyPath(path: Path): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else text += text === "" ? String(segment) : `.${String(segment)}`;
  }
  return text;
}

function describeIssue(file: string, issue: Issue, schema: Schema): string[] {
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => describeUnknownKey(file, issue.path, key, schema));
  }
  const where = issue.path.length === 0 ? file : `${file}: ${formatKeyPath(issue.path)}`;
  const params = (issue as { params?: CustomIssueParams }).params;
  if (issue.code === "custom" && params?.standalone) return [`${where}: ${issue.message}.`];
  const leaf = schemaAt(schema, issue.path);
  if (issue.input === undefined) {
    return [`${where}: missing (expected ${expectedPhrase(issue, leaf)}); add it.`];
  }
  const found = describeValue(issue.input, isSecretPath(issue.path));
  const fix =
    leaf && canBeLeftOut(leaf) ? "correct it or remove it to use the default" : "correct it";
  return [`${where}: expected ${expectedPhrase(issue, leaf)}, found ${found}; ${fix}.`];
}

function describeUnknownKey(file: string, parentPath: Path, key: string, schema: Schema): string {
  const known = Object.keys(objectShape(schemaAt(schema, parentPath)) ?? {});
  const keyPath = formatKeyPath([...parentPath, key]);
  const section =
    parentPath.length === 0 ? "at the top level" : `under ${formatKeyPath(parentPath)}`;
  const knownKeys = `known keys ${section}: ${known.join(", ")}`;
  const suggestion = didYouMean(key, known);
  return suggestion
    ? `${file}: ${keyPath}: unknown key; ${suggestion} (${knownKeys}).`
    : `${file}: ${keyPath}: unknown key; rename or remove it (${knownKeys}).`;
}

function expectedPhrase(issue: Issue, leaf: Schema | undefined): string {
  const described = leaf ? descriptionOf(leaf) : undefined;
  if (described) return described;
  const numberNoun = leaf && isWholeNumber(leaf) ? "a whole number" : "a number";
  switch (issue.code) {
    case "invalid_type":
      return issue.expected === "number" ? numberNoun : typeName(issue.expected);
    case "invalid_value":
      return `one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`;
    case "too_small":
      return boundPhrase(issue, numberNoun, issue.minimum, ["at least", "greater than"]);
    case "too_big":
      return boundPhrase(issue, numberNoun, issue.maximum, ["at most", "less than"]);
    default:
      return issue.message;
  }
}

function boundPhrase(
  issue: { origin: string; inclusive?: boolean },
  numberNoun: string,
  bound: number | bigint,
  [inclusiveWord, exclusiveWord]: [string, string],
): string {
  const relation = issue.inclusive === false ? exclusiveWord : inclusiveWord;
  if (issue.origin === "string") return `text of ${relation} ${bound} characters`;
  if (issue.origin === "array" || issue.origin === "set") {
    return `a list of ${relation} ${bound} items`;
  }
  return issue.inclusive === false
    ? `${numberNoun} ${relation} ${bound}`
    : `${numberNoun} of ${relation} ${bound}`;
}

function isWholeNumber(schema: Schema): boolean {
  const def = unwrap(schema)._zod.def as { type: string; format?: string };
  return def.type === "number" && (def.format === "safeint" || def.format === "int32");
}

function typeName(expected: string): string {
  const names: Record<string, string> = {
    string: "text",
    number: "a number",
    int: "a whole number",
    boolean: "true or false",
    array: "a list",
    object: "a mapping of keys to values",
  };
  return names[expected] ?? expected;
}

/** How a found value is shown: short, and never the value of a secret. */
function describeValue(value: unknown, secret: boolean): string {
  if (value === null) return "an empty value";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (secret) return `a ${typeof value} (value hidden)`;
  if (typeof value === "string") {
    const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return JSON.stringify(shown);
  }
  return String(value);
}

function isSecretPath(path: Path): boolean {
  const last = path.at(-1);
  return typeof last === "string" && SECRET_VALUE_KEYS.has(last);
}

/** The schema that validates the value at `path`, if the schema tree says. */
function schemaAt(schema: Schema, path: Path): Schema | undefined {
  let current: Schema | undefined = schema;
  for (const segment of path) {
    if (current === undefined) return undefined;
    const inner = unwrap(current);
    const def = inner._zod.def as { type: string; element?: Schema; valueType?: Schema };
    if (def.type === "array") current = def.element;
    else if (def.type === "record") current = def.valueType;
    else current = objectShape(inner)?.[String(segment)];
  }
  return current;
}

/** The keys of an object schema, or of the object among a union's options (`false | {…}`). */
function objectShape(schema: Schema | undefined): Record<string, Schema> | undefined {
  if (schema === undefined) return undefined;
  const def = unwrap(schema)._zod.def as {
    type: string;
    shape?: Record<string, Schema>;
    options?: Schema[];
  };
  if (def.type === "union") return def.options?.map(objectShape).find(Boolean);
  return def.type === "object" ? def.shape : undefined;
}

/** Strips defaults, optionals and pipes down to the schema that checks the value. */
function unwrap(schema: Schema): Schema {
  let current = schema;
  for (let next = unwrapOnce(current); next !== current; next = unwrapOnce(current)) {
    current = next;
  }
  return current;
}

function canBeLeftOut(schema: Schema): boolean {
  return DEFAULTING_WRAPPERS.has(schema._zod.def.type);
}

/** The first `.describe()` text met while unwrapping the leaf schema. */
function descriptionOf(schema: Schema): string | undefined {
  let current: Schema | undefined = schema;
  while (current) {
    const description = (current as { description?: string }).description;
    if (description) return description;
    const next = unwrapOnce(current);
    current = next === current ? undefined : next;
  }
  return undefined;
}

function unwrapOnce(schema: Schema): Schema {
  // A preprocess is a pipe whose input side is a transform; the check is its output side.
  const def = schema._zod.def as { type: string; innerType?: Schema; in?: Schema; out?: Schema };
  if (def.innerType) return def.innerType;
  if (def.type === "pipe" && def.in && def.out) {
    return def.in._zod.def.type === "transform" ? def.out : def.in;
  }
  return schema;
}
