/**
 * The shape of a spending budget, shared by picklebot.yaml (`budget`, the whole workspace)
 * and AGENT.md (`budget`, one agent). Checking spend against it is `src/agents/budget.ts`.
 *
 * ```yaml
 * budget:
 *   daily_usd: 2          # per calendar day in `timezone`
 *   monthly_usd: 30       # per calendar month
 *   on_exceeded: park     # picklebot.yaml only: park (wait for the next period) | refuse
 * ```
 */
import { z } from "zod";

/** USD limits per calendar day and month; either may be absent. */
export interface BudgetLimits {
  daily_usd?: number;
  monthly_usd?: number;
}

const usd = () =>
  z.number().positive().describe("an amount in US dollars greater than 0, such as 2.5").optional();

/** `daily_usd` and `monthly_usd`, each a positive amount. */
export function budgetLimitsSchema() {
  return z.strictObject({ daily_usd: usd(), monthly_usd: usd() });
}

/** picklebot.yaml's `budget`: the workspace's limits, and what a job past one does. */
export function workspaceBudgetSchema() {
  return budgetLimitsSchema()
    .extend({
      /** `park`: the job waits until the period resets; `refuse`: it fails, saying why. */
      on_exceeded: z.enum(["park", "refuse"]).describe('"park" or "refuse"').default("park"),
    })
    .prefault({});
}
