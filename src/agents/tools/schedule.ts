import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import type { ChatSchedules, Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";

const text = (what: string) => z.string().trim().min(1).optional().describe(what);

const scheduleInput = z.object({
  action: z.enum(["create", "list", "cancel"]).describe("What to do."),
  when: text(
    'create, one-shot: when, in the person\'s words or ISO 8601 ("in 20 minutes", "next Tuesday at 9:00", "2026-12-01T09:00").',
  ),
  repeat: text(
    'create, recurring: a cron expression ("0 8 * * 1-5") or words ("every weekday at 8:00", "every monday and thursday at 18:00", "every 2 hours").',
  ),
  message: text("create: a message sent to this chat verbatim when due (a reminder)."),
  task: text(
    "create: a prompt you run when due, in a fresh conversation, your answer sent to this chat (a check, a summary).",
  ),
  timezone: text(
    'create: an IANA zone ("America/New_York") when the person names one; otherwise theirs.',
  ),
  id: text("cancel: the id of the schedule (list shows them)."),
});

/** `schedule {action, …}`: reminders and recurring tasks of the chat the turn runs in. */
export function createScheduleTool(schedules: ChatSchedules): Tool {
  return defineTool({
    name: "schedule",
    description:
      "Create, list or cancel reminders and recurring tasks for this chat. A reminder " +
      "delivers `message` verbatim; a task runs `task` as a prompt then. Give `when` for " +
      "once or `repeat` for recurring. Always tell the person the date, time and zone the " +
      "answer confirms.",
    input: scheduleInput,
    run: (input) => {
      switch (input.action) {
        case "create":
          return schedules.create(input);
        case "list":
          return schedules.list();
        case "cancel":
          if (input.id === undefined) {
            throw new ToolError(
              'schedule: "id" is required to cancel (action "list" shows the ids)',
            );
          }
          return schedules.cancel(input.id);
        default:
          return input.action satisfies never;
      }
    },
  });
}
