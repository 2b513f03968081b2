#!/usr/bin/env node
// `npm run chaos -- --cycles N`: SIGKILLs a loaded `picklebot server` N times, then checks
// that nothing was lost or done twice. See bench/chaos/main.ts.
//
// The run is written in TypeScript so that it uses the test suite's fake Anthropic server
// and server helpers as they are, without a second copy or a build step of its own: this
// launcher loads it through Vite's module runner, the same transformer vitest runs the
// tests with. The server under test is the built CLI (dist/, built by `npm run chaos`).
import { runnerImport } from "vite";

const entry = new URL("./chaos/main.ts", import.meta.url).pathname;
const { module } = await runnerImport(entry, { configFile: false, logLevel: "error" });
process.exit(await module.main(process.argv.slice(2)));
