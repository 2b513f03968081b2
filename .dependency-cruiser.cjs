/**
 * The layer rule (docs/development/architecture.md): imports point down, never up or
 * sideways between siblings, and no folder imports itself in a circle.
 *
 *   cli ─► server ─► chat │ web
 *   web ─► http ─► events
 *   chat, web ─► cron │ agents │ storage │ frontends ─► config ─► base ─► ports
 *
 * (docs/development/architecture.md draws it with the two main paths.)
 */
const layer = (name, mayImport) => ({
  name: `layer-${name}`,
  comment: `src/${name}/ may import only ${mayImport.join(", ") || "itself"} (docs/development/architecture.md)`,
  severity: "error",
  from: { path: `^src/${name}/` },
  to: { path: "^src/", pathNot: [`^src/${name}/`, ...mayImport.map((lower) => `^src/${lower}/`)] },
});

/** The floors the wings stand on: the domains and everything below them. */
const DOMAINS = ["cron", "agents", "storage", "frontends", "config", "base", "ports"];

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "modules import each other in a circle",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "no-folder-cycle",
      comment: "folders import each other in a circle",
      severity: "error",
      scope: "folder",
      from: { path: "^src/" },
      to: { circular: true },
    },
    layer("ports", []),
    layer("base", ["ports"]),
    layer("config", ["base", "ports"]),
    layer("storage", ["config", "base", "ports"]),
    layer("agents", ["config", "base", "ports"]),
    layer("cron", ["config", "base", "ports"]),
    layer("frontends", ["config", "base", "ports"]),
    layer("events", ["base", "ports"]),
    layer("http", ["events", "config", "base", "ports"]),
    layer("chat", ["agents", "storage", "frontends", "config", "base", "ports"]),
    layer("web", ["http", "events", ...DOMAINS]),
    layer("server", ["chat", "web", "http", "events", ...DOMAINS]),
    {
      name: "not-to-unresolvable",
      comment: "an import that resolves to nothing",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    parser: "tsc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
    },
  },
};
