/**
 * A full garbage collection on demand, for the few places that have just let go of many
 * megabytes of buffers: a file downloaded chunk by chunk, an image and its encodings.
 * V8 collects buffers only once about 64 MiB more of them than after its last collection
 * have piled up, so without this, twenty photos arriving at once leave 60–100 MiB of dead
 * chunks resident until V8 gets round to them (bench/media.js; docs/decisions/
 * media-memory.md). The collection takes milliseconds on the server's small heap.
 *
 * `gc` is V8's own, exposed for this one function (as jest's leak detector does) and not
 * to any other code: the flag is set back once the function is taken.
 */
import v8 from "node:v8";
import { runInNewContext } from "node:vm";

let collect: (() => void) | undefined;

/** Collects the garbage of the whole heap now. */
export function collectGarbage(): void {
  collect ??= exposedGc();
  collect();
}

function exposedGc(): () => void {
  const own: unknown = Reflect.get(globalThis, "gc");
  if (typeof own === "function") return own as () => void;
  v8.setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  v8.setFlagsFromString("--no-expose-gc");
  return gc;
}
