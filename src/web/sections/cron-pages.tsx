/** The markup of the Crons section: the list and one cron's page. */

import { basePath } from "hono/route";
import { formatReplyTarget } from "../../base/chat-address.js";
import type { UserError } from "../../base/errors.js";
import { isManualCronKey } from "../../base/session-key.js";
import type { CronDefinition } from "../../cron/definition.js";
import { nextOccurrence } from "../../cron/schedule.js";
import { describeSchedule } from "../../cron/words.js";
import type { CronRow } from "../../cron/worker.js";
import { Notice } from "../../http/layout.js";
import type { Job } from "../../ports/index.js";
import { ActionForm, type Column, ListTable, StateBadge } from "../components.js";
import { formatInZone, noticeOf, type SectionContext } from "./ui.js";

/** A run of a cron as the pages show it: the job and what it answered. */
export interface CronRun {
  job: Job;
  /** The run's last reply, cut for display; null when it has none (yet). */
  reply: string | null;
}

/** Next runs listed on a cron's page. */
const NEXT_RUNS_SHOWN = 5;

/** Every cron, one row each, then the files that failed to load. */
export function CronList(props: {
  c: SectionContext;
  crons: { row: CronRow; last: CronRun | null }[];
  broken: UserError[];
}) {
  const { c, crons, broken } = props;
  const base = basePath(c);
  const columns: Column<{ row: CronRow; last: CronRun | null }>[] = [
    { label: "Cron", cell: ({ row }) => <a href={`${base}/${row.id}`}>{row.id}</a> },
    {
      label: "Schedule",
      cell: ({ row }) => <Schedule id={row.id} schedule={row.schedule} timezone={row.timezone} />,
    },
    { label: "Agent", cell: ({ row }) => row.agent },
    { label: "Next run", cell: ({ row }) => formatInZone(row.nextRunAt, row.timezone) },
    {
      label: "Last run",
      cell: ({ row, last }) =>
        last ? (
          <>
            {formatInZone(last.job.createdAt, row.timezone)} <StateBadge state={last.job.state} />
          </>
        ) : (
          "never"
        ),
    },
    { label: "Status", cell: ({ row }) => <StateBadge state={row.status} /> },
  ];
  if (!c.get("readOnly")) {
    columns.push({
      label: "Actions",
      cell: ({ row }) => <CronActions base={base} id={row.id} enabled={row.enabled} />,
    });
  }
  return (
    <>
      <Notice text={noticeOf(c)} />
      <ListTable
        columns={columns}
        rows={crons}
        empty="No crons: drop a YAML file into crons/ (see crons/example.yaml)."
      />
      {broken.length === 0 ? null : (
        <section class="card">
          <h2>Files that did not load</h2>
          <ul>
            {broken.map((error) => (
              <li class="error">{error.message}</li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}

/** One cron: its definition, next runs and last runs with their results. */
export function CronDetail(props: {
  c: SectionContext;
  cron: CronDefinition;
  row: CronRow;
  runs: CronRun[];
  now: number;
}) {
  const { c, cron, row, runs, now } = props;
  return (
    <>
      <Notice text={noticeOf(c)} />
      <section class="card">
        <h2>
          {cron.id} <StateBadge state={row.status} />
        </h2>
        <dl>
          <dt>Schedule</dt>
          <dd>
            <Schedule id={cron.id} schedule={cron.schedule} timezone={cron.timezone} />
          </dd>
          <dt>Agent</dt>
          <dd>{cron.agentId}</dd>
          <dt>Replies to</dt>
          <dd>{formatReplyTarget(cron.deliverTo)}</dd>
          <dt>Prompt</dt>
          <dd>
            <pre>{cron.prompt}</pre>
          </dd>
          <dt>File</dt>
          <dd>
            <code>{cron.file}</code>
          </dd>
        </dl>
        <CronActions base={basePath(c)} id={cron.id} enabled={cron.enabled} />
      </section>
      <section class="card">
        <h2>Next runs</h2>
        {row.status === "scheduled" ? (
          <ol>
            {nextRuns(cron, now).map((at) => (
              <li>{formatInZone(at, cron.timezone)}</li>
            ))}
          </ol>
        ) : (
          <p>None: the cron is {row.status}.</p>
        )}
      </section>
      <section class="card">
        <h2>Last runs</h2>
        <RunTable runs={runs} timezone={cron.timezone} />
      </section>
    </>
  );
}

function RunTable(props: { runs: CronRun[]; timezone: string }) {
  const columns: Column<CronRun>[] = [
    { label: "Enqueued", cell: ({ job }) => formatInZone(job.createdAt, props.timezone) },
    {
      label: "Job",
      cell: ({ job }) => (
        <>
          <a href={`../jobs/${job.id}`}>{job.id}</a>
          {isManualCronKey(job.sessionKey) ? " (run now)" : ""}
        </>
      ),
    },
    { label: "State", cell: ({ job }) => <StateBadge state={job.state} /> },
    { label: "Result", cell: ({ job, reply }) => reply ?? job.lastError ?? "", class: "reply" },
  ];
  return <ListTable columns={columns} rows={props.runs} empty="No run yet." />;
}

/** The schedule in words (when they are exact), the expression, and the zone. */
function Schedule(props: { id: string; schedule: string; timezone: string }) {
  const words = describeSchedule(props);
  return (
    <>
      {words ? <span class="schedule-words">{words} </span> : null}
      <code>{props.schedule}</code> <span class="zone">({props.timezone})</span>
    </>
  );
}

function CronActions(props: { base: string; id: string; enabled: boolean }) {
  const { base, id, enabled } = props;
  return (
    <div class="actions">
      <ActionForm action={`${base}/${id}/run`}>
        <button type="submit" class="primary">
          Run now
        </button>
      </ActionForm>
      <ActionForm action={`${base}/${id}/${enabled ? "disable" : "enable"}`}>
        <button type="submit" class={enabled ? "danger" : undefined}>
          {enabled ? "Disable" : "Enable"}
        </button>
      </ActionForm>
    </div>
  );
}

function nextRuns(cron: CronDefinition, now: number): number[] {
  const runs: number[] = [];
  let after = now;
  for (let i = 0; i < NEXT_RUNS_SHOWN; i++) {
    after = nextOccurrence(cron, after);
    runs.push(after);
  }
  return runs;
}
