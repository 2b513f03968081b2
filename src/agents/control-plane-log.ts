/**
 * The record of writes to the agents' control plane (`agents/`, `crons/`, `skills/`) that
 * an approvals policy let through: one JSON line per write in
 * `<history.path>/control-plane-writes.jsonl`. A file in the history folder, because the
 * file tools can neither read nor write that folder, it works with every history and
 * queue backend without a migration, and `picklebot status` reads it without a server.
 */
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { toError } from "../base/errors.js";

/** The file name of the record, in the history folder. */
export const CONTROL_PLANE_LOG_FILE = "control-plane-writes.jsonl";

const controlPlaneWriteSchema = z.object({
  at: z.number(),
  agentId: z.string(),
  tool: z.string(),
  path: z.string(),
  jobId: z.string().optional(),
});

/** One write to the control plane that ran. */
export type ControlPlaneWrite = z.infer<typeof controlPlaneWriteSchema>;

/** Appends `write` to the record in `historyPath`, creating the folder if needed. */
export async function recordControlPlaneWrite(
  historyPath: string,
  write: ControlPlaneWrite,
): Promise<void> {
  await mkdir(historyPath, { recursive: true });
  await appendFile(join(historyPath, CONTROL_PLANE_LOG_FILE), `${JSON.stringify(write)}\n`);
}

/** The last `limit` writes of the record, newest first; lines that do not parse are skipped. */
export async function latestControlPlaneWrites(
  historyPath: string,
  limit: number,
): Promise<ControlPlaneWrite[]> {
  let text: string;
  try {
    text = await readFile(join(historyPath, CONTROL_PLANE_LOG_FILE), "utf8");
  } catch (thrown) {
    if ((toError(thrown) as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw thrown;
  }
  const writes = text.split("\n").flatMap((line) => {
    if (line.trim() === "") return [];
    try {
      const parsed = controlPlaneWriteSchema.safeParse(JSON.parse(line));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
  return writes.slice(-limit).reverse();
}
