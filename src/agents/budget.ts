/**
 * Budgets (docs/guides/cost.md, "Budgets"): before each model call of a turn, what the
 * workspace and the turn's agent spent today and this month (the usage ledger, priced)
 * is compared with their limits. Past a limit the turn stops there (BudgetExceeded: the
 * worker parks the job until the period resets, or refuses it); at 80% the owner is
 * warned. Each notice
 * goes once per period to the chat the job replies to (the outbox's dedupe key makes it
 * once, across restarts and processes), or to the log for a job without a chat. In
 * distributed mode the ledger is PostgreSQL's, so the budget is the cluster's.
 *
 * A budget fails closed on a model no price knows (docs/decisions/unpriced-models.md):
 * its calls would count as $0 and never reach the limit, so the turn's model calls are
 * refused (a UserError: the job fails, saying how to price the model) until it has one.
 */

import { BudgetExceeded, UserError } from "../base/errors.js";
import { formatOutboxKey } from "../base/outbox-key.js";
import type { BudgetLimits } from "../config/budget.js";
import { type Config, workspacePrices } from "../config/index.js";
import type {
  Clock,
  ReachedBudget,
  ReplyTarget,
  UsageLedger,
  UsageRecord,
} from "../ports/index.js";
import { type AgentDefinition, modelOf } from "./definition.js";
import { priceOf, unpricedFix } from "./prices.js";
import type { RunRequest } from "./runner.js";
import { callCost, formatUsd, periodStart } from "./usage-report.js";

/** The share of a limit at which the owner is warned. */
export const BUDGET_WARNING_SHARE = 0.8;

/** Sends a notice once per key: to the target's chat, or to the log. */
export type BudgetNotifier = (
  target: ReplyTarget | undefined,
  text: string,
  key: string,
) => Promise<void>;

/** What a {@link BudgetGuard} needs. */
export interface BudgetGuardOptions {
  ledger: UsageLedger;
  config: Config;
  agents: ReadonlyMap<string, AgentDefinition>;
  clock: Clock;
  notify: BudgetNotifier;
}

/** One limit that applies to a turn. */
interface Limit {
  /** `the workspace`, `agent pickle`. */
  scope: string;
  period: "day" | "month";
  usd: number;
  /** Which calls count against it. */
  counts: (record: UsageRecord) => boolean;
}

/** Checks a turn's budgets before each of its model calls. */
export class BudgetGuard {
  readonly #options: BudgetGuardOptions;

  constructor(options: BudgetGuardOptions) {
    this.#options = options;
  }

  /**
   * The check for a turn's model calls; undefined when no budget applies to it. An agent
   * whose model has no price fails every check.
   */
  checker(request: Pick<RunRequest, "agentId" | "replyTo">): (() => Promise<void>) | undefined {
    const limits = this.#limitsOf(request.agentId);
    if (limits.length === 0) return undefined;
    const unpriced = unpricedBudgetedModel(this.#options, request.agentId);
    if (unpriced !== null) {
      return async () => {
        throw unpricedModelRefusal(request.agentId, unpriced);
      };
    }
    return () => this.#check(limits, request.replyTo);
  }

  #limitsOf(agentId: string): Limit[] {
    const { config, agents } = this.#options;
    return turnLimits(config, agentId, agents.get(agentId));
  }

  async #check(limits: Limit[], target: ReplyTarget | undefined): Promise<void> {
    const { ledger, config, clock } = this.#options;
    for (const standing of await standingsOf(limits, ledger, config, clock.now())) {
      const { limit, spentUsd: spent } = standing;
      const { scope, period } = limit;
      const key = (level: "reached" | "warning") =>
        formatOutboxKey({
          kind: "budget",
          scope,
          period,
          periodStart: standing.periodStart,
          level,
        });
      if (spent >= limit.usd) {
        const text = reachedNotice(limit, spent, standing.resetsAt, config);
        await this.#options.notify(target, text, key("reached"));
        throw new BudgetExceeded(text, standing.resetsAt);
      }
      if (spent >= limit.usd * BUDGET_WARNING_SHARE) {
        await this.#options.notify(target, warningNotice(limit, spent), key("warning"));
      }
    }
  }
}

/**
 * The model of `agentId`'s turns when a budget applies to them and no price knows it (its
 * calls are refused, see the file header), else null: a heartbeat checks it before a tick.
 */
export function unpricedBudgetedModel(
  options: Pick<BudgetGuardOptions, "config" | "agents">,
  agentId: string,
): string | null {
  const { config, agents } = options;
  const agent = agents.get(agentId);
  if (turnLimits(config, agentId, agent).length === 0) return null;
  const model = modelOf(agent, config);
  return priceOf(model, workspacePrices(config)) ? null : model;
}

/** Whether a budget (the workspace's, or the agent's own) limits an agent's calls. */
export function budgetApplies(config: Config, agent: AgentDefinition): boolean {
  return turnLimits(config, agent.id, agent).length > 0;
}

/** The limits of a turn of `agentId` (`agent`: its definition, if it has one). */
function turnLimits(config: Config, agentId: string, agent: AgentDefinition | undefined): Limit[] {
  return [...workspaceLimits(config), ...agentLimits(agentId, agent?.budget)];
}

/** Why a budgeted agent's model call is refused when its model has no price. */
function unpricedModelRefusal(agentId: string, model: string): UserError {
  return new UserError(
    `agent "${agentId}" calls model "${model}", which has no price, so its budget cannot ` +
      `hold it: its model calls are refused until it has one; ${unpricedFix(model)}`,
    {
      context: { agent: agentId, model },
      chatNotice:
        `agent "${agentId}" uses a model without a price, so its budget cannot be kept; ` +
        "the owner can see how to fix it with `picklebot doctor`.",
    },
  );
}

/** The workspace's own budgets (`budget:` in picklebot.yaml), over every call. */
function workspaceLimits(config: Config): Limit[] {
  return limitsOf("the workspace", config.budget, () => true);
}

/** An agent's budgets (`budget:` in its AGENT.md), over its own calls. */
function agentLimits(agentId: string, budget: BudgetLimits | undefined): Limit[] {
  return limitsOf(`agent ${agentId}`, budget, (record) => record.agentId === agentId);
}

/** A budget and what was spent against it in its current period. */
export interface BudgetStanding {
  /** `the workspace`, `agent pickle`. */
  scope: string;
  period: "day" | "month";
  limitUsd: number;
  spentUsd: number;
  /** What can still be spent this period (0 once the limit is reached). */
  leftUsd: number;
  /** When the period starts again from zero (epoch ms). */
  resetsAt: number;
}

/**
 * Every budget of the workspace (its own, then each agent's) with what was spent and is
 * left in the current period, as the checks before a model call see it.
 */
export async function budgetStandings(
  options: Pick<BudgetGuardOptions, "ledger" | "config" | "agents" | "clock">,
): Promise<BudgetStanding[]> {
  const { ledger, config, agents, clock } = options;
  const limits = [
    ...workspaceLimits(config),
    ...[...agents.values()].flatMap((agent) => agentLimits(agent.id, agent.budget)),
  ];
  const standings = await standingsOf(limits, ledger, config, clock.now());
  return standings.map(({ limit, spentUsd, resetsAt }) => ({
    scope: limit.scope,
    period: limit.period,
    limitUsd: limit.usd,
    spentUsd,
    leftUsd: Math.max(0, limit.usd - spentUsd),
    resetsAt,
  }));
}

/**
 * The first budget of a turn of `agentId` (the workspace's, then the agent's own) that is
 * reached now, or null when none is: a heartbeat checks it before it runs a tick.
 */
export async function reachedBudget(
  options: Pick<BudgetGuardOptions, "ledger" | "config" | "agents" | "clock">,
  agentId: string,
): Promise<ReachedBudget | null> {
  const { ledger, config, agents, clock } = options;
  const limits = turnLimits(config, agentId, agents.get(agentId));
  const standings = await standingsOf(limits, ledger, config, clock.now());
  const reached = standings.find(({ limit, spentUsd }) => spentUsd >= limit.usd);
  if (reached === undefined) return null;
  const { limit, spentUsd, periodStart: start, resetsAt } = reached;
  return {
    summary: `${limit.scope} spent ${formatUsd(spentUsd)} of its ${formatUsd(limit.usd)} ${PERIOD_NAMES[limit.period]} budget`,
    periodStart: start,
    resetsAt,
  };
}

interface LimitStanding {
  limit: Limit;
  spentUsd: number;
  periodStart: number;
  resetsAt: number;
}

/** What each limit's calls cost since its period started, read from the ledger once. */
async function standingsOf(
  limits: Limit[],
  ledger: UsageLedger,
  config: Config,
  now: number,
): Promise<LimitStanding[]> {
  if (limits.length === 0) return [];
  const starts = {
    day: periodStart(now, "day", config.timezone),
    month: periodStart(now, "month", config.timezone),
  };
  // Only as far back as the longest period a limit has.
  const since = Math.min(...limits.map((limit) => starts[limit.period]));
  const calls = await ledger.calls({ since });
  return limits.map((limit) => ({
    limit,
    spentUsd: calls
      .filter((record) => record.at >= starts[limit.period] && limit.counts(record))
      .reduce((sum, record) => sum + callCost(record, workspacePrices(config)), 0),
    periodStart: starts[limit.period],
    resetsAt: nextPeriod(starts[limit.period], limit.period, config.timezone),
  }));
}

/** The start of the period after the one starting at `start`. */
function nextPeriod(start: number, period: "day" | "month", timezone: string): number {
  const ahead = period === "day" ? 36 * 3_600_000 : 32 * 86_400_000;
  return periodStart(start + ahead, period, timezone);
}

function limitsOf(
  scope: string,
  budget: BudgetLimits | undefined,
  counts: Limit["counts"],
): Limit[] {
  const limits: Limit[] = [];
  if (budget?.daily_usd !== undefined) {
    limits.push({ scope, period: "day", usd: budget.daily_usd, counts });
  }
  if (budget?.monthly_usd !== undefined) {
    limits.push({ scope, period: "month", usd: budget.monthly_usd, counts });
  }
  return limits;
}

/** How a budget's period reads in a sentence or a table. */
export const PERIOD_NAMES = { day: "daily", month: "monthly" } as const;

function reachedNotice(limit: Limit, spent: number, resetsAt: number, config: Config): string {
  const action = config.budget.on_exceeded === "park" ? "jobs wait" : "jobs are refused";
  const when = new Date(resetsAt).toLocaleString("en-GB", { timeZone: config.timezone });
  return (
    `Budget reached: ${limit.scope} spent ${formatUsd(spent)} of its ` +
    `${formatUsd(limit.usd)} ${PERIOD_NAMES[limit.period]} budget; ${action} until ${when} ` +
    `(${config.timezone}). Raise it with budget in picklebot.yaml or the agent's AGENT.md.`
  );
}

function warningNotice(limit: Limit, spent: number): string {
  const share = Math.round((spent / limit.usd) * 100);
  return (
    `Budget warning: ${limit.scope} has spent ${formatUsd(spent)} of its ` +
    `${formatUsd(limit.usd)} ${PERIOD_NAMES[limit.period]} budget (${share}%).`
  );
}
