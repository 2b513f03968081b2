/**
 * The young generation of V8's heap while the server starts. Loading and compiling the
 * modules is one burst of short-lived allocation that grows the new space from 2 to 16 MiB,
 * and V8 keeps it committed until its memory reducer runs, often minutes later: about
 * 10 MiB of an idle server's resident memory spent on a burst that is over. During start-up
 * the new space keeps its initial size; once the server runs, it grows under load as V8
 * chooses (measured in bench/footprint.js; docs/decisions/young-generation-at-start.md).
 */
import v8 from "node:v8";

/** V8's own factor (`node --v8-options`), restored once the server runs. */
const DEFAULT_GROWTH_FACTOR = 2;

let held = false;

/**
 * Keeps the new space at its initial size until {@link releaseYoungGeneration}. Does
 * nothing when the owner set V8's growth factor themselves (NODE_OPTIONS or a flag).
 */
export function holdYoungGeneration(): void {
  const ownSetting = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((arg) =>
    /semi-space/.test(arg),
  );
  if (ownSetting) return;
  v8.setFlagsFromString("--semi-space-growth-factor=1");
  held = true;
}

/** Lets the new space grow under load again, as V8 chooses. */
export function releaseYoungGeneration(): void {
  if (!held) return;
  v8.setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
  held = false;
}
