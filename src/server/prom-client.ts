/**
 * The four prom-client classes the metrics use, each loaded from its own file: the
 * package's index also loads its default-metrics collectors and, through them,
 * OpenTelemetry's API, about 2 MiB of an idle server's heap that picklebot never uses.
 * The package has no `exports` map, so its files are its public layout (pinned by the
 * lockfile; `test/server/metrics.test.ts` reads the exposition).
 */
import { createRequire } from "node:module";
import type * as PromClient from "prom-client";

const require = createRequire(import.meta.url);

export const Counter: typeof PromClient.Counter = require("prom-client/lib/counter");
export const Gauge: typeof PromClient.Gauge = require("prom-client/lib/gauge");
export const Histogram: typeof PromClient.Histogram = require("prom-client/lib/histogram");
export const Registry: typeof PromClient.Registry = require("prom-client/lib/registry");
export type Registry = PromClient.Registry;
