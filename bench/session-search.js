#!/usr/bin/env node
// How fast `session_search` answers on SQLite (issue 28): 100,000 stored messages (2,000
// sessions of 50 messages, the person's words and the agent's answers alternating, of one
// agent), written through the history store so the FTS5 index fills as it does in a
// server; then queries scoped to one person, as the tool makes them: a rare word, a common
// one, the most common, three words, and a word nobody said. Twice: the messages spread
// over 20 people (one person's share is 5,000), and all of them one person's (the owner
// of a personal assistant). Text is drawn from a
// vocabulary of 5,000 words with a Zipf distribution (a few words very common, most rare),
// 8 to 60 words a message. Times are of `SqliteRecallStore.search` in-process (the tool
// adds only formatting), on a temp file with `synchronous = NORMAL` for the load.
//
// Usage: npm run build && node bench/session-search.js [--messages 100000] [--queries 200]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../dist/storage/sqlite/database.js";
import { SqliteHistoryStore } from "../dist/storage/sqlite/history.js";
import { SqliteRecallStore } from "../dist/storage/sqlite/memory.js";
import { markdownTable, percentile } from "./lib/stats.js";

const PER_SESSION = 50;
const VOCABULARY = 5_000;
const TARGET_MS = 50;

/** A seeded random number generator (mulberry32): the same text on every run. */
function random(seed) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Words `w0` … `w4999`, drawn with probability ∝ 1/rank. */
function zipfWords(next) {
  const weights = Array.from({ length: VOCABULARY }, (_, rank) => 1 / (rank + 1));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const cumulative = [];
  let sum = 0;
  for (const weight of weights) {
    sum += weight / total;
    cumulative.push(sum);
  }
  return () => {
    const x = next();
    let low = 0;
    let high = VOCABULARY - 1;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (cumulative[mid] < x) low = mid + 1;
      else high = mid;
    }
    return `w${low}`;
  };
}

/** Loads `messages` messages of `people` people; resolves the stores. */
function load(dir, messages, people) {
  const db = openDatabase(join(dir, "picklebot.db"), { synchronous: "normal" });
  const history = new SqliteHistoryStore({ db });
  const recall = new SqliteRecallStore({ db });
  const next = random(28);
  const word = zipfWords(next);
  const text = () => Array.from({ length: 8 + Math.floor(next() * 52) }, word).join(" ");
  const started = performance.now();
  const sessions = Math.ceil(messages / PER_SESSION);
  for (let s = 0; s < sessions; s++) {
    db.transaction(() => {
      const person = `telegram:${1000 + (s % people)}`;
      const session = history.createSessionSync({ key: person, agentId: "pickle" });
      db.prepare(
        "INSERT INTO session_memory (session_id, session_key, agent_id, person, snapshot, taken_at) VALUES (?, ?, 'pickle', ?, '', 0)",
      ).run(session.id, person, person);
      for (let m = 0; m < PER_SESSION; m++) {
        const role = m % 2 === 0 ? "user" : "assistant";
        history.appendSync(session.id, { role, content: [{ type: "text", text: text() }] });
      }
    })();
  }
  return { db, recall, loadMs: performance.now() - started };
}

/** Times `runs` searches of `text` for one person; the hits of the last. */
async function time(recall, text, runs) {
  const scope = { agentId: "pickle", persons: ["telegram:1000"] };
  const times = [];
  let hits = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    hits = await recall.search({ scope, text, limit: 5 });
    times.push(performance.now() - started);
  }
  return { times, hits };
}

/** Searches `messages` messages of `people` people; resolves one row per query. */
async function measureLayout(messages, people, queries) {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bench-search-"));
  const { db, recall, loadMs } = load(dir, messages, people);
  const kinds = {
    "a rare word (w4000)": "w4000",
    "a common word (w3)": "w3",
    "the most common word (w0)": "w0",
    "three words (w20 w300 w2000)": "what did we say about w20 w300 w2000?",
    "a word nobody said": "pickleball",
  };
  const rows = [];
  try {
    await time(recall, "w1", 20); // warm the page cache
    for (const [kind, text] of Object.entries(kinds)) {
      const { times, hits } = await time(recall, text, queries);
      rows.push({
        layout: people === 1 ? "one person" : `${people} people`,
        kind,
        hits: hits.length,
        median: percentile(times, 50),
        p95: percentile(times, 95),
        max: Math.max(...times),
        loadMs,
      });
    }
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** Loads and searches both layouts; resolves the rows and a markdown table. */
export async function runSessionSearchBench({ messages = 100_000, queries = 200 } = {}) {
  const rows = [
    ...(await measureLayout(messages, 20, queries)),
    ...(await measureLayout(messages, 1, queries)),
  ];
  const ms = (value) => `${value.toFixed(2)} ms`;
  const markdown = markdownTable(
    [
      "messages of",
      "query (one person's sessions)",
      "hits",
      "median",
      "p95",
      "max",
      `p95 under ${TARGET_MS} ms`,
    ],
    rows.map((row) => [
      row.layout,
      row.kind,
      String(row.hits),
      ms(row.median),
      ms(row.p95),
      ms(row.max),
      row.p95 < TARGET_MS ? "yes" : "**no**",
    ]),
  );
  const loads = rows
    .filter((_, i) => i % 5 === 0)
    .map((row) => `${(row.loadMs / 1000).toFixed(1)} s (${row.layout})`)
    .join(", ");
  const summary = `${messages.toLocaleString("en-US")} messages stored and indexed in ${loads}; ${queries} searches of each query.`;
  return { rows, markdown: `${summary}\n\n${markdown}` };
}

function option(name, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { markdown } = await runSessionSearchBench({
    messages: option("messages", 100_000),
    queries: option("queries", 200),
  });
  console.log(markdown);
}
