/** `picklebot mcp`: the MCP servers of picklebot.yaml, their state and their tools. */
import { Command } from "commander";
import { mcpServersOf, workspaceToolReferences } from "../agents/mcp/servers.js";
import { loadWorkspace, warnAboutBrokenAgents } from "./context.js";
import { printable, printJson, printLine, printTable } from "./output.js";

/** The `mcp` command group. */
export function mcpCommand(): Command {
  const mcp = new Command("mcp").description("MCP servers of picklebot.yaml: mcp list");
  mcp
    .command("list")
    .description("connect to each MCP server and show its state and tools")
    .option("--json", "print JSON for scripts")
    .action(async (options: { json?: boolean }, command: Command) => {
      const loaded = loadWorkspace(command);
      warnAboutBrokenAgents(loaded);
      const { workspace, config, agents } = loaded;
      const references = workspaceToolReferences(workspace, config, agents.values());
      const servers = mcpServersOf(workspace, config, { toolReferences: () => references });
      try {
        const reports = await servers.report();
        if (options.json) return printJson(reports);
        if (reports.length === 0) {
          printLine(
            "no MCP servers: add them under mcp_servers: in picklebot.yaml (docs/guides/mcp.md)",
          );
          return;
        }
        printTable(
          ["SERVER", "TRANSPORT", "STATE", "TOOLS"],
          reports.map((report) => [
            report.name,
            report.transport,
            report.state,
            report.error ?? (report.tools.join(", ") || "(none)"),
          ]),
        );
        for (const warning of reports.flatMap((report) => report.warnings ?? [])) {
          process.stderr.write(`picklebot: warning: ${printable(warning)}\n`);
        }
      } finally {
        await servers.stop();
      }
    });
  return mcp;
}
