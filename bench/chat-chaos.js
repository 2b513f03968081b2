#!/usr/bin/env node
// `node bench/chat-chaos.js [--messages N] [--kills N]`: `npm run chaos -- --chat` without
// the build step (build first). See bench/chaos/chat.ts.
import { runnerImport } from "vite";

const entry = new URL("./chaos/chat.ts", import.meta.url).pathname;
const { module } = await runnerImport(entry, { configFile: false, logLevel: "error" });
process.exit(await module.main(process.argv.slice(2)));
