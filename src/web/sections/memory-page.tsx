/** The markup of the Memory section. */

import { basePath } from "hono/route";
import {
  type AgentsOfMemory,
  agentOfMemory,
  memoryBudget,
  memoryLabel,
  type OwnedMemory,
  whatChanged,
  whoChanged,
} from "../../agents/memory/owner.js";
import { memoryChars, memoryEntries } from "../../base/memory-text.js";
import { Notice } from "../../http/layout.js";
import type { Memory, MemoryChange } from "../../ports/index.js";
import { ActionForm, type Column, ListTable } from "../components.js";
import { formatInZone, noticeOf, type SectionContext } from "./ui.js";

/** Share of its budget from which a memory's bar shows as nearly full. */
const NEARLY_FULL = 0.9;

/** Every memory with its budget bar, then the latest changes of all. */
export function MemoryListPage(props: {
  c: SectionContext;
  memories: Memory[];
  changes: MemoryChange[];
  agents: AgentsOfMemory;
  timezone: string;
}) {
  const { c, agents, timezone } = props;
  const base = basePath(c);
  const columns: Column<Memory>[] = [
    { label: "Agent", cell: (memory) => memory.agentId },
    {
      label: "Memory",
      cell: (memory) => (
        <a href={`${base}/${memoryPath(memory)}`}>{memoryLabel(memory.agentId, memory.scope)}</a>
      ),
    },
    { label: "Entries", cell: (memory) => String(memoryEntries(memory.text).length) },
    {
      label: "Size",
      cell: (memory) => {
        const agent = agentOfMemory(agents, memory.agentId);
        return <BudgetBar text={memory.text} budget={agent && memoryBudget(agent, memory.scope)} />;
      },
    },
    { label: "Changed", cell: (memory) => formatInZone(memory.updatedAt, timezone) },
  ];
  return (
    <>
      <section class="card">
        <h2>Memories</h2>
        <ListTable
          columns={columns}
          rows={props.memories}
          empty="No memory saved yet: the agents save what they learn with their memory tool."
        />
      </section>
      <ChangesCard changes={props.changes} timezone={timezone} withMemory />
    </>
  );
}

/** One memory: its text and bar, the edit and clear forms (none when read-only), its changes. */
export function MemoryPage(props: {
  c: SectionContext;
  owned: OwnedMemory;
  text: string;
  /** The text the owner typed and saw refused, shown again in the form. */
  typed: string | null;
  error: string | undefined;
  changes: MemoryChange[];
  timezone: string;
}) {
  const { c, owned, text } = props;
  const action = `${basePath(c)}/${memoryPath(owned)}`;
  return (
    <>
      <Notice text={props.error ?? noticeOf(c)} error={props.error !== undefined} />
      <section class="card">
        <h2>{owned.label}</h2>
        <p>
          <BudgetBar text={text} budget={owned.budget} />
        </p>
        {text === "" ? <p>Empty.</p> : <pre>{text}</pre>}
        <ActionForm action={`${action}/edit`} fields={{ expected: text }}>
          <label>
            Entries, one after the other, with a line holding only § between two{" "}
            <textarea name="text" rows={12}>
              {props.typed ?? text}
            </textarea>
          </label>
          <button type="submit" class="primary">
            Save
          </button>
        </ActionForm>
        {text === "" ? null : (
          <ActionForm action={`${action}/clear`}>
            <button type="submit" class="danger">
              Clear
            </button>
          </ActionForm>
        )}
      </section>
      <ChangesCard changes={props.changes} timezone={props.timezone} withMemory={false} />
    </>
  );
}

/** `<meter>` and `N of B characters`; the size alone when the agent has no budget for it. */
function BudgetBar(props: { text: string; budget: number | null | undefined }) {
  const used = memoryChars(props.text);
  const { budget } = props;
  if (!budget) return <span>{used} characters</span>;
  return (
    <span>
      <meter
        min={0}
        max={budget}
        low={budget * NEARLY_FULL}
        high={budget * NEARLY_FULL}
        optimum={0}
        value={Math.min(used, budget)}
      />{" "}
      {used} of {budget} characters
    </span>
  );
}

/** Who wrote what when: the recorded changes, newest first. */
function ChangesCard(props: { changes: MemoryChange[]; timezone: string; withMemory: boolean }) {
  const columns: Column<MemoryChange>[] = [
    { label: "When", cell: (change) => formatInZone(change.at, props.timezone) },
    ...(props.withMemory
      ? [
          {
            label: "Memory",
            cell: (change: MemoryChange) => memoryLabel(change.agentId, change.scope),
          },
        ]
      : []),
    { label: "Change", cell: (change) => change.action },
    { label: "By", cell: (change) => whoChanged(change) },
    { label: "What", cell: (change) => whatChanged(change) },
  ];
  return (
    <section class="card">
      <h2>Changes</h2>
      <ListTable columns={columns} rows={props.changes} empty="No changes recorded." />
    </section>
  );
}

/** `pickle/telegram%3A1001`: a memory's path under the section. */
export function memoryPath(memory: { agentId: string; scope: string }): string {
  return `${encodeURIComponent(memory.agentId)}/${encodeURIComponent(memory.scope)}`;
}
