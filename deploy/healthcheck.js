#!/usr/bin/env node
/**
 * Docker HEALTHCHECK (the slim image has no curl): exits 0 when `/healthz` answers 200,
 * 1 otherwise, printing why. The URL is the first argument, else $PICKLEBOT_HEALTHZ_URL,
 * else the address the running server announced in <workspace>/history/server.json.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

const TIMEOUT_MS = 5000;

function healthzUrl() {
  const given = process.argv[2] || process.env.PICKLEBOT_HEALTHZ_URL;
  if (given) return given;
  const workspace = process.env.PICKLEBOT_WORKSPACE || process.cwd();
  const announcement = join(workspace, "history", "server.json");
  try {
    const { http } = JSON.parse(readFileSync(announcement, "utf8"));
    if (http) return `http://${http}/healthz`;
  } catch {
    // Reported below.
  }
  throw new Error(`no server is announced in ${announcement} (is it running, with http enabled?)`);
}

try {
  const url = healthzUrl();
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  const body = await response.text();
  if (response.status !== 200) {
    process.stdout.write(`unhealthy: ${url} answered ${response.status}: ${body}`);
    process.exit(1);
  }
  process.stdout.write(`healthy: ${url}\n`);
} catch (error) {
  process.stdout.write(`unhealthy: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
