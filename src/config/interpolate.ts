/**
 * `${NAME}` in string values of a parsed YAML tree, replaced from the environment.
 * `$${NAME}` stays as the literal text `${NAME}`.
 */
import { UserError } from "../base/errors.js";
import { formatKeyPath } from "./issues.js";
import type { Environment } from "./schema.js";

const REFERENCE = /\$(\$)?\{([^}]*)\}/g;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A copy of `tree` with every `${NAME}` replaced and every empty (null) value dropped, so
 * that `key:` with nothing after it means "use the default". Throws a UserError naming
 * the file, the key and the variable when a variable is not set.
 */
export function interpolateEnv(tree: unknown, env: Environment, file: string): unknown {
  return visit(tree, [], { env, file });
}

interface VisitContext {
  env: Environment;
  file: string;
}

function visit(value: unknown, path: PropertyKey[], context: VisitContext): unknown {
  if (typeof value === "string") return substitute(value, path, context);
  if (Array.isArray(value)) {
    return value.map((item, index) => visit(item, [...path, index], context));
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, item]) => item !== null)
      .map(([key, item]) => [key, visit(item, [...path, key], context)]);
    return Object.fromEntries(entries);
  }
  return value;
}

function substitute(text: string, path: PropertyKey[], context: VisitContext): string {
  return text.replace(REFERENCE, (whole, escaped: string | undefined, name: string) => {
    if (escaped) return whole.slice(1);
    const where = `${context.file}: ${formatKeyPath(path)}`;
    if (!VARIABLE_NAME.test(name)) {
      throw new UserError(
        `${where}: "\${${name}}" is not a valid variable reference; use \${NAME} with ` +
          `letters, digits and _, or write $\${…} for a literal \${…}.`,
        { context: { file: context.file, key: formatKeyPath(path) } },
      );
    }
    const replacement = context.env[name];
    if (replacement === undefined) {
      throw new UserError(
        `${where}: environment variable ${name} is not set; set it in the environment or ` +
          "in the workspace .env file, or remove the reference.",
        { context: { file: context.file, key: formatKeyPath(path), variable: name } },
      );
    }
    return replacement;
  });
}
