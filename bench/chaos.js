#!/usr/bin/env node
// `npm run chaos -- --cycles N`: SIGKILLs a loaded `picklebot server` N times, then checks
// that nothing was lost or done twice. See bench/chaos/main.ts.
// `npm run chaos -- --chat`: the same for replies in Telegram chats. See bench/chaos/chat.ts.
//
// The run is written in TypeScript so that it uses the test suite's fake Anthropic server
// and server helpers as they are, without a second copy or a build step of its own: this
// launcher loads it through Vite's module runner, the same transformer vitest runs the
// tests with. The server under test is the built CLI (dist/, built by `npm run chaos`).
import { runnerImport } from "vite";

const argv = process.argv.slice(2);
const run = argv.includes("--chat") ? "./chaos/chat.ts" : "./chaos/main.ts";
const entry = new URL(run, import.meta.url).pathname;
const { module } = await runnerImport(entry, { configFile: false, logLevel: "error" });
process.exit(await module.main(argv));
