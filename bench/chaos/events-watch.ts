/**
 * An `/events` follower on each chaos server, as a dashboard left open would be: it makes
 * the server fork its fan-out process and keeps that process writing while the server is
 * killed. At the end of the run, no fan-out process may have outlived its server (each
 * exits when its IPC channel to the server closes, even on SIGKILL).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { readSse } from "../../src/base/sse.js";
import { fanoutProcesses, isFanoutRunning } from "../../test/helpers/cli.js";
import type { ServerProcess } from "../../test/helpers/server.js";

/** The log line after which a server answers HTTP. */
const STARTED = "picklebot server started";

/** Follows every server of a run; see the file header. */
export class EventsWatch {
  /** The fan-out processes seen, one per server that lived long enough to fork one. */
  readonly fanouts: number[] = [];
  /** Events the followers read, over the run. */
  events = 0;
  /**
   * Follower reads still pending 2 s after their abort: fetch's body has been seen to
   * hang, rarely, when the connection closes right after the response's head (node:http
   * did not, in the same race). Counted, and left behind.
   */
  hungReads = 0;

  /** Follows `server`'s `/events` from its start; the returned function stops following. */
  follow(server: ServerProcess): () => Promise<void> {
    const controller = new AbortController();
    const following = (async () => {
      await server.waitForLog(STARTED, 20_000);
      const response = await server.fetch("/events", { signal: controller.signal });
      const [fanout] = fanoutProcesses(server.pid);
      if (fanout) this.fanouts.push(fanout);
      for await (const _message of readSse(response.body ?? new ReadableStream())) {
        this.events += 1;
      }
    })();
    // The server is killed at any moment, starting up too: following just ends.
    following.catch(() => undefined);
    return async () => {
      controller.abort();
      const ended = following.then(
        () => true,
        () => true,
      );
      if (!(await Promise.race([ended, sleep(2_000).then(() => false)]))) this.hungReads += 1;
    };
  }

  /** The fan-out processes still running 10 s after the servers are gone (none, or a violation). */
  async outlived(): Promise<number[]> {
    const deadline = Date.now() + 10_000;
    const running = () => this.fanouts.filter(isFanoutRunning);
    while (running().length > 0 && Date.now() < deadline) await sleep(200);
    return running();
  }
}
