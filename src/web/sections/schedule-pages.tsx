/** The reminders and recurring tasks agents set up in chats, on the Crons page. */

import { basePath } from "hono/route";
import type { ScheduleRow } from "../../cron/describe.js";
import { describeSchedule } from "../../cron/words.js";
import { ActionForm, type Column, ListTable } from "../components.js";
import { formatInZone, type SectionContext } from "./ui.js";

/** Every chat's active schedules, with chat, creator, next run and a Cancel button. */
export function ScheduleList(props: { c: SectionContext; schedules: ScheduleRow[] }) {
  const { c, schedules } = props;
  const base = basePath(c);
  const columns: Column<ScheduleRow>[] = [
    { label: "Reminder", cell: (row) => <code>{row.id}</code> },
    { label: "Chat", cell: (row) => row.chat },
    { label: "Created by", cell: (row) => row.createdBy },
    { label: "What", cell: (row) => `${row.kind}: ${row.text}`, class: "reply" },
    { label: "Repeat", cell: (row) => <Repeat row={row} /> },
    { label: "Next run", cell: (row) => formatInZone(row.nextRunAt, row.timezone) },
  ];
  if (!c.get("readOnly")) {
    columns.push({
      label: "Actions",
      cell: (row) => (
        <ActionForm action={`${base}/schedules/${row.id}/cancel`}>
          <button type="submit" class="danger">
            Cancel
          </button>
        </ActionForm>
      ),
    });
  }
  return (
    <section class="card">
      <h2>Reminders set in chats</h2>
      <ListTable
        columns={columns}
        rows={schedules}
        empty="None: agents with the schedule tool set them up when a chat asks."
      />
    </section>
  );
}

function Repeat(props: { row: ScheduleRow }) {
  const { row } = props;
  if (row.repeat === null) return <>once</>;
  const words = describeSchedule({ id: row.id, schedule: row.repeat });
  return (
    <>
      {words ? `${words} ` : null}
      <code>{row.repeat}</code> <span class="zone">({row.timezone})</span>
    </>
  );
}
