/**
 * The check of the media jobs (`send_file` into the media chat): every media job that ended
 * done sent its file exactly once, with the bytes of the workspace file, or left it waiting
 * in the outbox (never lost). A second copy of a job's file counts as the window
 * docs/guides/chat-platforms.md states ("Delivery you can trust": Telegram accepted the
 * upload and the process was killed before it stored the message id) only when a SIGKILL
 * came between the two copies; any other second copy is a violation.
 */
import { createHash } from "node:crypto";
import type { FakeTelegram } from "../../test/fakes/telegram.js";
import { openWorkspaceDb } from "../../test/helpers/server.js";
import { type EnqueuedJob, MEDIA_CHAT_ID, MEDIA_CONTENT } from "./workload.js";

/** What the check found. */
export interface MediaVerdict {
  violations: string[];
  /** Media jobs done whose file arrived. */
  sent: number;
  /** Media jobs done whose file still waits in the outbox. */
  waiting: number;
  /** Copies sent again in the window after a kill. */
  windowCopies: number;
}

/** `killedAt`: epoch ms of each SIGKILL, as the fake's call times count. */
export function verifyMedia(
  workspace: string,
  jobs: EnqueuedJob[],
  telegram: FakeTelegram,
  killedAt: readonly number[],
): MediaVerdict {
  const verdict: MediaVerdict = { violations: [], sent: 0, waiting: 0, windowCopies: 0 };
  const expected = createHash("sha256").update(MEDIA_CONTENT).digest("hex");
  const accepted = telegram
    .callsOf("sendDocument")
    .filter((call) => call.status === 200 && String(call.params.chat_id) === String(MEDIA_CHAT_ID));
  const db = openWorkspaceDb(workspace);
  try {
    const state = db.prepare<[string], { state: string }>("SELECT state FROM jobs WHERE id = ?");
    const waiting = db.prepare<[string], { n: number }>(
      "SELECT COUNT(*) AS n FROM outbox WHERE dedupe_key LIKE ? AND state = 'pending'",
    );
    for (const job of jobs.filter((candidate) => candidate.kind === "media")) {
      if (state.get(job.id)?.state !== "done") continue;
      const copies = accepted.filter((call) => call.params.caption === job.tag);
      for (const copy of copies) {
        const sha = (copy.params.document as { sha256?: string } | undefined)?.sha256;
        if (sha !== expected)
          verdict.violations.push(`${job.tag}: its file arrived with other bytes`);
      }
      if (copies.length === 0) {
        if ((waiting.get(`file:${job.id}:%`)?.n ?? 0) > 0) verdict.waiting += 1;
        else verdict.violations.push(`${job.tag}: done, but its file was never sent nor kept`);
        continue;
      }
      verdict.sent += 1;
      for (const [index, copy] of copies.slice(1).entries()) {
        const previous = copies[index]?.time ?? 0;
        if (killedAt.some((at) => at > previous && at < copy.time)) verdict.windowCopies += 1;
        else verdict.violations.push(`${job.tag}: its file was sent twice without a kill between`);
      }
    }
  } finally {
    db.close();
  }
  return verdict;
}
