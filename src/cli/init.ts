/**
 * `picklebot init [DIR]`: scaffolds a workspace from the templates shipped with the
 * package. Existing files are never overwritten.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { UserError } from "../base/errors.js";

/** Where `init` writes its report. */
export interface InitCommandOptions {
  /** (Default: process.stdout) */
  output?: { write(text: string): unknown };
}

/** One file of a new workspace and where its content comes from. */
interface ScaffoldFile {
  /** Path inside the workspace. */
  target: string;
  /** Template shipped with the package, or undefined for an empty file. */
  template: URL | undefined;
}

// Relative to this module, so it works from src/cli (tests) and dist/cli (installed).
const SCAFFOLD: readonly ScaffoldFile[] = [
  {
    target: "picklebot.yaml",
    template: new URL("../../templates/picklebot.yaml", import.meta.url),
  },
  {
    target: "agents/pickle/AGENT.md",
    template: new URL("../../agents/pickle/AGENT.md", import.meta.url),
  },
  {
    target: "crons/example.yaml",
    template: new URL("../../templates/crons/example.yaml", import.meta.url),
  },
  { target: "history/.gitkeep", template: undefined },
];

/** The `init` sub-command. */
export function initCommand(options: InitCommandOptions = {}): Command {
  const output = options.output ?? process.stdout;
  return new Command("init")
    .description(
      "create a workspace: picklebot.yaml with comments, agents/pickle, crons/example.yaml " +
        "and history/ (existing files are kept)",
    )
    .argument(
      "[dir]",
      "folder to set up, created if missing (default: --workspace or the current directory)",
    )
    .action((dir: string | undefined, _options: unknown, command: Command) => {
      const workspaceOption = command.optsWithGlobals<{ workspace?: string }>().workspace;
      const workspace = path.resolve(dir ?? workspaceOption ?? ".");
      const lines = scaffoldWorkspace(workspace);
      output.write(`${[...lines, "", ...nextSteps(workspace)].join("\n")}\n`);
    });
}

/** Writes the missing files of a workspace; returns one report line per file. */
export function scaffoldWorkspace(workspace: string): string[] {
  ensureFolder(workspace);
  return SCAFFOLD.map(({ target, template }) => {
    const file = path.join(workspace, target);
    if (fs.existsSync(file)) return `kept existing ${target}`;
    ensureFolder(path.dirname(file));
    fs.writeFileSync(file, template ? readTemplate(template) : "", { flag: "wx" });
    return `created ${target}`;
  });
}

function nextSteps(workspace: string): string[] {
  const shown = workspace === process.cwd() ? "." : workspace;
  return [
    `Workspace ready in ${workspace}. Next steps:`,
    `  1. Put your Anthropic API key in ${path.join(shown, ".env")} (ANTHROPIC_API_KEY=...) or export ANTHROPIC_API_KEY.`,
    `  2. Chat in the terminal: picklebot chat --workspace ${shown}`,
    `  3. Review ${path.join(shown, "picklebot.yaml")} to enable Telegram, Discord or Slack, then run: picklebot server --workspace ${shown}`,
  ];
}

function ensureFolder(folder: string): void {
  try {
    fs.mkdirSync(folder, { recursive: true });
  } catch (thrown) {
    throw new UserError(
      `cannot create the folder ${folder}: ${(thrown as Error).message}; choose another location.`,
      { cause: thrown, context: { file: folder } },
    );
  }
}

function readTemplate(template: URL): string {
  try {
    return fs.readFileSync(template, "utf8");
  } catch (thrown) {
    throw new UserError(
      `the template ${fileURLToPath(template)} is missing from the picklebot installation; ` +
        "reinstall picklebot.",
      { cause: thrown, context: { file: fileURLToPath(template) } },
    );
  }
}
