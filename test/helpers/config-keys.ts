/**
 * Every key of picklebot.yaml, read from the schema itself (src/config/schema.ts), so the
 * template and the reference page can be checked against it: a key added to the schema
 * and forgotten in either fails their tests. A path is dotted (`llm.model`); a list's
 * entries are `[i]` (`bindings[i].chat`) and a map's names `<name>`
 * (`mcp_servers.<name>.command`).
 */
import type { z } from "zod";
import { buildConfigSchema } from "../../src/config/schema.js";

/** The parts of zod's definition the walk reads. */
interface Definition {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
}

function definitionOf(schema: z.ZodType): Definition {
  return (schema as unknown as { _zod: { def: Definition } })._zod.def;
}

/** Every key path of picklebot.yaml, in schema order. */
export function configKeyPaths(): string[] {
  const paths: string[] = [];
  walk(buildConfigSchema({ env: {}, workspace: "/" }), "", paths);
  return paths;
}

function walk(schema: z.ZodType, prefix: string, paths: string[]): void {
  const def = definitionOf(schema);
  switch (def.type) {
    case "object":
      for (const [key, value] of Object.entries(def.shape ?? {})) {
        const path = prefix ? `${prefix}.${key}` : key;
        paths.push(path);
        walk(value, path, paths);
      }
      return;
    case "array":
      if (def.element) walk(def.element, `${prefix}[i]`, paths);
      return;
    case "record":
      if (def.valueType) walk(def.valueType, `${prefix}.<name>`, paths);
      return;
    case "pipe":
      // A preprocess or a transform: the object, if any, is on one side.
      if (def.in) walk(def.in, prefix, paths);
      if (def.out) walk(def.out, prefix, paths);
      return;
    default:
      if (def.innerType) walk(def.innerType, prefix, paths);
  }
}
