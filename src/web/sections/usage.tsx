/**
 * The Usage section: tokens and cost from the usage ledger by agent and by day (the
 * reports of `picklebot usage`), every budget with what is spent and left in its current
 * period (the numbers the checks before each model call use), and the models the agents
 * call that have no price (docs/decisions/unpriced-models.md).
 *
 *   GET /?since=7d   `since`: 30m, 12h, 7d, 2w (Default: 7d); another value ─► 400
 */
import { Hono } from "hono";
import {
  BUDGET_WARNING_SHARE,
  type BudgetStanding,
  budgetStandings,
  PERIOD_NAMES,
} from "../../agents/budget.js";
import type { AgentDefinition } from "../../agents/definition.js";
import { unpricedFix } from "../../agents/prices.js";
import { type UnpricedModel, unpricedModels, unpricedProblem } from "../../agents/unpriced.js";
import {
  formatUsd,
  parseSince,
  summarizeUsage,
  type UsageLine,
  type UsageReport,
} from "../../agents/usage-report.js";
import { UsageError } from "../../base/errors.js";
import { type Config, workspacePrices } from "../../config/index.js";
import type { DashboardEnv, DashboardSection } from "../../http/env.js";
import { Notice } from "../../http/layout.js";
import type { Clock, UsageLedger } from "../../ports/index.js";
import { type Column, ListTable } from "../components.js";
import { formatInZone, type SectionContext } from "./ui.js";

/** What the Usage section reads. */
export interface UsageSectionDeps {
  ledger: UsageLedger;
  /** Prices, time zone and the workspace's budget. */
  config: Config;
  /** The agents, with their own budgets. */
  agents: ReadonlyMap<string, AgentDefinition>;
  clock: Clock;
}

/** The periods offered in the page's picker; any `since` duration is accepted. */
const SINCE_CHOICES = ["24h", "7d", "30d"];
const DEFAULT_SINCE = "7d";

/** The Usage section, mounted at `/usage`. */
export function usageSection(deps: UsageSectionDeps): DashboardSection {
  const app = new Hono<DashboardEnv>();
  app.get("/", async (c) => {
    const sinceText = c.req.query("since") ?? DEFAULT_SINCE;
    let since: number;
    try {
      since = parseSince(sinceText, deps.clock.now());
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      c.status(400);
      const message = error.message.replace(/^--since/, "since");
      return c.render(<Notice text={message} error />, { title: "Usage" });
    }
    const records = await deps.ledger.calls({ since });
    const options = { prices: workspacePrices(deps.config), timezone: deps.config.timezone };
    const byAgent = summarizeUsage(records, { ...options, by: "agent" });
    const byDay = summarizeUsage(records, { ...options, by: "day" });
    const budgets = await budgetStandings(deps);
    return c.render(
      <UsagePage
        c={c}
        sinceText={sinceText}
        byAgent={byAgent}
        byDay={byDay}
        budgets={budgets}
        unpriced={unpricedModels(deps.config, deps.agents)}
        timezone={deps.config.timezone}
      />,
      { title: "Usage" },
    );
  });
  return { path: "usage", label: "Usage", app };
}

function UsagePage(props: {
  c: SectionContext;
  sinceText: string;
  byAgent: UsageReport;
  byDay: UsageReport;
  budgets: BudgetStanding[];
  unpriced: UnpricedModel[];
  timezone: string;
}) {
  const { sinceText, byAgent, byDay, budgets, unpriced, timezone } = props;
  const choices = SINCE_CHOICES.includes(sinceText) ? SINCE_CHOICES : [sinceText, ...SINCE_CHOICES];
  return (
    <>
      <UnpricedModels unpriced={unpriced} />
      <section class="card">
        <h2>Budgets</h2>
        <BudgetTable budgets={budgets} timezone={timezone} />
      </section>
      <form method="get" class="actions">
        <label>
          Since{" "}
          <select name="since">
            {choices.map((choice) => (
              <option value={choice} selected={choice === sinceText}>
                {choice}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Show</button>
      </form>
      <section class="card">
        <h2>By agent, last {sinceText}</h2>
        <UsageTable report={byAgent} keyLabel="Agent" />
      </section>
      <section class="card">
        <h2>
          By day ({timezone}), last {sinceText}
        </h2>
        <UsageTable report={byDay} keyLabel="Day" />
      </section>
      {byAgent.unpriced.length === 0 ? null : (
        <p class="notice">
          Not priced (counted as $0; add them to llm.prices in picklebot.yaml):{" "}
          {byAgent.unpriced.join(", ")}
        </p>
      )}
    </>
  );
}

/** The models the agents call that have no price, each with its fix; nothing when none. */
function UnpricedModels(props: { unpriced: UnpricedModel[] }) {
  if (props.unpriced.length === 0) return null;
  const refused = props.unpriced.some((entry) => entry.refusedAgentIds.length > 0);
  return (
    <section class="card" role={refused ? "alert" : "status"}>
      <h2>Models without a price</h2>
      <ul>
        {props.unpriced.map((entry) => (
          <li>
            {unpricedProblem(entry)}. Fix: {unpricedFix(entry.model)}.
          </li>
        ))}
      </ul>
    </section>
  );
}

function UsageTable(props: { report: UsageReport; keyLabel: string }) {
  const count = (value: (line: UsageLine) => number) => (line: UsageLine) =>
    value(line).toLocaleString("en-US");
  const columns: Column<UsageLine>[] = [
    { label: props.keyLabel, cell: (line) => line.key },
    { label: "Calls", cell: count((line) => line.calls), numeric: true },
    { label: "Input", cell: count((line) => line.input), numeric: true },
    { label: "Output", cell: count((line) => line.output), numeric: true },
    { label: "Cache read", cell: count((line) => line.cacheRead), numeric: true },
    { label: "Cache write", cell: count((line) => line.cacheWrite), numeric: true },
    { label: "USD", cell: (line) => formatUsd(line.costUsd), numeric: true },
  ];
  return (
    <ListTable
      columns={columns}
      rows={props.report.lines}
      total={props.report.total}
      empty="No model calls in this period."
    />
  );
}

function BudgetTable(props: { budgets: BudgetStanding[]; timezone: string }) {
  const columns: Column<BudgetStanding>[] = [
    { label: "Scope", cell: (budget) => budget.scope },
    { label: "Period", cell: (budget) => PERIOD_NAMES[budget.period] },
    { label: "Limit", cell: (budget) => formatUsd(budget.limitUsd), numeric: true },
    { label: "Spent", cell: (budget) => formatUsd(budget.spentUsd), numeric: true },
    { label: "Left", cell: (budget) => formatUsd(budget.leftUsd), numeric: true },
    {
      label: "Used",
      cell: (budget) => (
        <meter
          min={0}
          max={budget.limitUsd}
          low={budget.limitUsd * BUDGET_WARNING_SHARE}
          high={budget.limitUsd * BUDGET_WARNING_SHARE}
          optimum={0}
          value={Math.min(budget.spentUsd, budget.limitUsd)}
        />
      ),
    },
    { label: "Resets", cell: (budget) => formatInZone(budget.resetsAt, props.timezone) },
  ];
  return (
    <ListTable
      columns={columns}
      rows={props.budgets}
      empty="No budgets set (budget in picklebot.yaml, or in an agent's AGENT.md)."
    />
  );
}
