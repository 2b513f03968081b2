/** The markup of the Agents section. */

import { basePath } from "hono/route";
import type { AgentDefinition } from "../../agents/definition.js";
import type { UserError } from "../../base/errors.js";
import type { ApprovalPolicy, ToolApproval } from "../../config/approvals.js";
import type { BudgetLimits } from "../../config/budget.js";
import { type Column, ListTable, StateBadge } from "../components.js";
import type { SectionContext } from "./ui.js";

/** One skill, MCP server or the like, and its state (`loaded`, `connected`, `failed: …`). */
export interface AgentExtraItem {
  name: string;
  state: string;
  /** A line on what it is or why it failed. (Default: none) */
  detail?: string;
}

/** A group of an agent's extras, shown under its own heading ("Skills", "MCP servers"). */
export interface AgentExtraGroup {
  heading: string;
  items: AgentExtraItem[];
}

/** Every agent, one row each, then the definitions that failed to load. */
export function AgentList(props: {
  c: SectionContext;
  agents: AgentDefinition[];
  broken: UserError[];
  defaultModel: string;
}) {
  const base = basePath(props.c);
  const columns: Column<AgentDefinition>[] = [
    {
      label: "Agent",
      cell: (agent) => (
        <>
          <a href={`${base}/${agent.id}`}>{agent.id}</a> ({agent.name})
        </>
      ),
    },
    { label: "Description", cell: (agent) => agent.description },
    { label: "Model", cell: (agent) => agent.model ?? props.defaultModel },
    { label: "Tools", cell: (agent) => agent.tools.join(", ") },
    { label: "Budget", cell: (agent) => budgetWords(agent.budget) },
  ];
  return (
    <>
      <ListTable columns={columns} rows={props.agents} empty="No agents." />
      {props.broken.length === 0 ? null : (
        <section class="card">
          <h2>Definitions that did not load (these agents do not run)</h2>
          <ul>
            {props.broken.map((error) => (
              <li class="error">{error.message}</li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}

/** One agent: its settings, tools with their approval, extras and system prompt. */
export function AgentDetail(props: {
  agent: AgentDefinition;
  policy: ApprovalPolicy;
  defaultModel: string;
  extras: AgentExtraGroup[];
}) {
  const { agent, policy } = props;
  return (
    <>
      <section class="card">
        <h2>
          {agent.name} <small>({agent.id})</small>
        </h2>
        <p>{agent.description}</p>
        <dl>
          <dt>Model</dt>
          <dd>{agent.model ?? `${props.defaultModel} (llm.model)`}</dd>
          <dt>Subagents</dt>
          <dd>{agent.subagents ? agent.subagents.join(", ") || "none" : "every other agent"}</dd>
          <dt>Budget</dt>
          <dd>{budgetWords(agent.budget)}</dd>
          <dt>Defined in</dt>
          <dd>
            <code>{agent.source}</code>
          </dd>
        </dl>
      </section>
      <section class="card">
        <h2>Tools</h2>
        <ListTable columns={toolColumns(agent, policy)} rows={agent.tools} empty="No tools." />
      </section>
      {props.extras.map((group) => (
        <section class="card">
          <h2>{group.heading}</h2>
          {group.items.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ul>
              {group.items.map((item) => (
                <li>
                  <code>{item.name}</code> <StateBadge state={item.state} />
                  {item.detail ? ` ${item.detail}` : ""}
                </li>
              ))}
            </ul>
          )}
        </section>
      ))}
      <section class="card">
        <h2>System prompt</h2>
        <pre>{agent.prompt}</pre>
      </section>
    </>
  );
}

function toolColumns(agent: AgentDefinition, policy: ApprovalPolicy): Column<string>[] {
  return [
    { label: "Tool", cell: (tool) => <code>{tool}</code> },
    { label: "Calls", cell: (tool) => approvalWords(policy[tool]) },
    { label: "Limits", cell: (tool) => toolLimits(agent, tool) },
  ];
}

function approvalWords(entry: ToolApproval | undefined): string {
  if (entry === undefined || entry === "allow") return "run without asking";
  if (entry === "ask") return "ask the owner first";
  if (entry === "deny") return "refused";
  const rules = entry.map((rule) => `${rule.pattern}: ${rule.action}`).join("; ");
  return `by path: ${rules}; other paths run without asking`;
}

function toolLimits(agent: AgentDefinition, tool: string): string {
  if (tool === "bash" && agent.bashNetwork !== undefined) {
    return agent.bashNetwork ? "network allowed" : "no network";
  }
  if (tool === "web_fetch" && agent.webFetch) {
    return `only ${agent.webFetch.allowDomains.join(", ")}`;
  }
  return "";
}

function budgetWords(budget: BudgetLimits | undefined): string {
  const parts = [
    budget?.daily_usd === undefined ? null : `$${budget.daily_usd} a day`,
    budget?.monthly_usd === undefined ? null : `$${budget.monthly_usd} a month`,
  ].filter((part) => part !== null);
  return parts.length > 0 ? parts.join(", ") : "workspace's only";
}
