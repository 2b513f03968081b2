#!/usr/bin/env node
// `npm run bench`: every benchmark in one run, printed as markdown tables for
// bench/RESULTS.md. Each script also runs on its own (node bench/<name>.js).
import { cpus, totalmem } from "node:os";
import { runBusBench } from "./bus.js";
import { runConversationBench } from "./conversation.js";
import { runCostBench, runHeartbeatCostBench, runMemoryCostBench } from "./cost.js";
import { runFootprintBench } from "./footprint.js";
import { runMediaBench } from "./media.js";
import { runOrphanBench } from "./orphans.js";
import { runPostgresBench } from "./postgres.js";
import { runProvidersBench } from "./providers.js";
import { runQueueBench } from "./queue.js";
import { runSessionSearchBench } from "./session-search.js";
import { runSkillsBench } from "./skills.js";

const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
console.log(`# picklebot benchmarks — ${new Date().toISOString().slice(0, 10)} — ${machine}\n`);
const footprint = await runFootprintBench();
console.log(
  "## Footprint: start-up against bare node, and the server's idle memory (`bench/footprint.js`)\n",
);
console.log(footprint.markdown);
const queue = await runQueueBench({});
console.log(`\n${queue.markdown}`);
for (const platform of ["telegram", "discord"]) {
  const bus = await runBusBench({ platform });
  console.log(`\n## Chat bus, messages on ${platform}, both buses connected (\`bench/bus.js\`)\n`);
  console.log(bus.markdown);
}
const media = await runMediaBench();
console.log("\n## Photos into the model (`bench/media.js`)\n");
console.log(media);
const conversation = await runConversationBench({ turns: 300 });
console.log("\n## A 300-turn conversation in a 200k window (`bench/conversation.js`)\n");
console.log(conversation.markdown);
const cost = await runCostBench();
console.log(
  "\n## Cost and prompt-cache share, before and after the cache placement (`bench/cost.js`)\n",
);
console.log(cost.markdown);
const memoryCost = await runMemoryCostBench();
console.log("\n## Cost and prompt-cache share, memory off and on (`bench/cost.js`)\n");
console.log(memoryCost.markdown);
const heartbeatCost = await runHeartbeatCostBench();
console.log("\n## A day of a heartbeat every 30 minutes that finds nothing (`bench/cost.js`)\n");
console.log(heartbeatCost.markdown);
const orphans = await runOrphanBench({ runs: 20 });
console.log(
  "\n## Orphan recovery after kill -9: spawn to the first orphan's model call (`bench/orphans.js`)\n",
);
console.log(orphans.markdown);
const postgres = await runPostgresBench({});
console.log(`\n${postgres.markdown}`);
const providers = await runProvidersBench();
console.log(
  "\n## Model adapters: own time per request and time to first token (`bench/providers.js`)\n",
);
console.log(providers.markdown);
const search = await runSessionSearchBench();
console.log("\n## session_search over 100,000 messages on SQLite (`bench/session-search.js`)\n");
console.log(search.markdown);
const skills = await runSkillsBench();
console.log("\n## Skills: loading agents and skills, and the listing's size (`bench/skills.js`)\n");
console.log(skills.markdown);
