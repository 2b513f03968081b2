#!/usr/bin/env node
// What skills cost: the time to load (or reload) a workspace's agents and skills, and the
// size of the listing an agent's system prompt carries, for 10, 100 and 500 skills
// (descriptions of 150 characters, as typical ones run) and 20 agents, at the default
// budget (skills.max_listing_chars 8000). Run against dist/ on a temp workspace.
//
// Usage: npm run build && node bench/skills.js
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentCatalog } from "../dist/agents/catalog.js";
import { skillListing, skillsOfAgent } from "../dist/agents/skills.js";
import { markdownTable, percentile } from "./lib/stats.js";

const AGENTS = 20;
const LOADS = 30;
const BUDGET = 8000;

function write(dir, path, text) {
  mkdirSync(join(dir, path, ".."), { recursive: true });
  writeFileSync(join(dir, path), text);
}

function workspaceWith(skills) {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bench-skills-"));
  for (let i = 0; i < AGENTS; i += 1) {
    write(
      dir,
      `agents/agent-${i}/AGENT.md`,
      `---\nname: A${i}\ndescription: d\n---\nYou are A${i}.\n`,
    );
  }
  for (let i = 0; i < skills; i += 1) {
    const name = `skill-${String(i).padStart(3, "0")}`;
    const description =
      `Does task ${i} well. ${"Use it when the user asks about that task. ".repeat(3)}`.slice(
        0,
        150,
      );
    const body = "Step.\n".repeat(200);
    write(
      dir,
      `skills/${name}/SKILL.md`,
      `---\nname: ${name}\ndescription: ${description}\n---\n${body}`,
    );
  }
  return dir;
}

/** One row per skill count: load time, listing size, skills left out. */
export async function runSkillsBench({ counts = [10, 100, 500] } = {}) {
  const rows = [];
  for (const count of counts) {
    const dir = workspaceWith(count);
    try {
      const catalog = new AgentCatalog(dir);
      const times = [];
      for (let i = 0; i < LOADS; i += 1) {
        const start = performance.now();
        catalog.load();
        times.push(performance.now() - start);
      }
      const { skills } = skillsOfAgent(catalog.skills, { id: "agent-0" });
      const listing = skillListing(skills, dir, BUDGET);
      rows.push([
        String(count),
        `${percentile(times, 50).toFixed(1)} ms`,
        `${percentile(times, 95).toFixed(1)} ms`,
        String(listing.text.length),
        `≈${Math.round(listing.text.length / 4)}`,
        String(listing.leftOut.length),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const header = ["skills", "load p50", "load p95", "listing chars", "listing tokens", "left out"];
  return { markdown: markdownTable(header, rows) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log((await runSkillsBench()).markdown);
}
