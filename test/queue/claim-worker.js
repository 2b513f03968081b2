// A second process's view of the queue, for test/queue/sqlite.test.ts: its own connection
// to the database file, claiming and completing until nothing is left.
import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../../dist/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../dist/storage/sqlite/queue.js";

const db = openDatabase(workerData.path);
const queue = new SqliteJobQueue({ db });
const claimed = [];
for (;;) {
  const jobs = await queue.claim(workerData.workerId, 4);
  for (const job of jobs) {
    claimed.push(job.id);
    await queue.complete(job);
  }
  if (jobs.length > 0) continue;
  const counts = await queue.counts();
  if (counts.queued === 0 && counts.running === 0) break;
  await new Promise((resolve) => setTimeout(resolve, 1));
}
await queue.close();
db.close();
parentPort?.postMessage(claimed);
