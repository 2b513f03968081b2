import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Writes `<cronDir>/<id>.yaml` in one step (temp file + rename), as editors do. */
export function writeCron(cronDir: string, id: string, yaml: string): string {
  const file = join(cronDir, `${id}.yaml`);
  const temporary = join(cronDir, `.${id}.tmp`);
  writeFileSync(temporary, yaml);
  renameSync(temporary, file);
  return file;
}
