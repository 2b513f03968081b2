/** `picklebot usage`: model calls and their cost from the usage ledger, summed by group. */
import { Command, InvalidArgumentError, Option } from "commander";
import {
  formatUsd,
  parseSince,
  summarizeUsage,
  USAGE_GROUPINGS,
  type UsageGrouping,
  type UsageLine,
} from "../agents/usage-report.js";
import { workspacePrices } from "../config/index.js";
import { openWorkspace } from "./context.js";
import { printJson, printLine, printTable } from "./output.js";

interface UsageOptions {
  since: string;
  by: UsageGrouping;
  json?: boolean;
}

/** The `usage` command. */
export function usageCommand(): Command {
  return new Command("usage")
    .description("show model calls, tokens and their cost in USD, from the usage ledger")
    .option("--since <duration>", "how far back: 30m, 12h, 7d, 2w", checkSince, "7d")
    .addOption(
      new Option(
        "--by <group>",
        "sum by agent, day, session, cron, or heartbeat (each heartbeat's calls per day)",
      )
        .choices(USAGE_GROUPINGS)
        .default("agent"),
    )
    .option("--json", "print JSON for scripts")
    .action(async (options: UsageOptions, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const { config, storage } = context;
        const since = parseSince(options.since, Date.now());
        const records = await storage.usage.calls({ since });
        const report = summarizeUsage(records, {
          by: options.by,
          prices: workspacePrices(config),
          timezone: config.timezone,
        });
        if (options.json) return printJson({ since, by: options.by, ...report });
        const searched = (report.total.webSearches ?? 0) > 0;
        const counts = ["calls", "input", "output", "cache read", "cache write"];
        printTable(
          [options.by, ...counts, ...(searched ? ["web searches"] : []), "usd"],
          [...report.lines, report.total].map((line) => cellsOf(line, searched)),
        );
        if (report.unpriced.length > 0) {
          printLine(
            `not priced (counted as $0; add them to llm.prices): ${report.unpriced.join(", ")}`,
          );
        }
      } finally {
        await context.close();
      }
    });
}

/** Fails on a bad `--since` before the workspace is opened (a usage error, exit 2). */
function checkSince(value: string): string {
  try {
    parseSince(value, 0);
    return value;
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** A line's cells; its web searches too when the report has any (a column of its own). */
function cellsOf(line: UsageLine, searched: boolean): string[] {
  const counts = [line.calls, line.input, line.output, line.cacheRead, line.cacheWrite];
  if (searched) counts.push(line.webSearches ?? 0);
  return [line.key, ...counts.map(String), formatUsd(line.costUsd)];
}
