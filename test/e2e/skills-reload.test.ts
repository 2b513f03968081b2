/**
 * `picklebot server` as a child process with skills and agents: what the model is sent
 * (the skill listing, never a body), the `skill` tool, and agents and skills picked up
 * while the server runs.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Job, NewJob } from "../../src/ports/index.js";
import {
  type FakeAnthropic,
  lastUserText,
  type RecordedRequest,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import { EDITOR_SAVES } from "../helpers/editors.js";
import {
  type ClusterDatabase,
  clusterYaml,
  openClusterDatabase,
  postgresSkipReason,
} from "../helpers/postgres.js";
import {
  enqueueJob,
  killAllServers,
  type LogLine,
  type ServerProcess,
  startServer,
} from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const RELOADED = "agents and skills reloaded";

const postgresSkip = await postgresSkipReason();

let fake: FakeAnthropic;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({ "picklebot.yaml": fakeModelConfig(fake.url) });
});

afterEach(async () => {
  await killAllServers();
  await fake.close();
  ws.remove();
});

function skillFile(name: string, description: string, body: string): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;
}

function agentFile(name: string, prompt: string): string {
  return `---\nname: ${name}\ndescription: test agent\ntools: [read]\n---\n${prompt}\n`;
}

/** The system prompt of a request, as one string (the runner may send it as blocks). */
function systemOf(request: RecordedRequest): string {
  const { system } = request.body;
  if (system === undefined) return "";
  if (typeof system === "string") return system;
  return system.map((block) => String(block.text ?? "")).join("");
}

function toolNamesOf(request: RecordedRequest): string[] {
  return (request.body.tools ?? []).map((tool) => String(tool.name));
}

let jobs = 0;
async function runJob(server: ServerProcess, agentId: string): Promise<LogLine> {
  jobs += 1;
  const job: NewJob = {
    agentId,
    sessionKey: `console:skills-${jobs}`,
    message: `question ${jobs}`,
    mode: "job",
    replyTo: { kind: "silent" },
    maxAttempts: 1,
  };
  const enqueued: Job = await enqueueJob(ws.dir, job);
  const [outcome] = await server.jobOutcomes(enqueued.id);
  if (!outcome) throw new Error(`no outcome for ${enqueued.id}`);
  return outcome;
}

async function jobsFromCli(): Promise<Job[]> {
  const result = await runCli(["jobs", "--json", "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot jobs: ${result.stderr}`);
  return JSON.parse(result.stdout) as Job[];
}

/** Waits for the reload whose log line passes `test`. */
function reloaded(server: ServerProcess, test: (line: LogLine) => boolean): Promise<LogLine> {
  return server.waitForLog((line) => line.msg === RELOADED && test(line));
}

describe("skills in the server", () => {
  it("lists only name and description, loads the body on use, and picks up a change while running", async () => {
    ws.write(
      "skills/pickling/SKILL.md",
      skillFile("pickling", "Brine recipes. Use for any pickling question.", "BODY-V1: 5% salt."),
    );
    const server = await startServer(ws.dir);
    expect(server.linesMatching("picklebot server started")[0]?.skills).toBe("pickling");
    fake.script({ toolUses: [{ name: "skill", input: { name: "pickling" } }] }, { text: "5%" });
    expect(await runJob(server, "pickle")).toMatchObject({ outcome: "done" });

    const first = requestAt(fake, 0);
    expect(systemOf(first)).toContain(
      "- pickling: Brine recipes. Use for any pickling question. (skills/pickling/SKILL.md)",
    );
    expect(JSON.stringify(first.body)).not.toContain("BODY-V1");
    expect(toolNamesOf(first)).toContain("skill");
    expect(lastUserText(requestAt(fake, 1))).toBe("BODY-V1: 5% salt.");

    ws.write(
      "skills/pickling/SKILL.md",
      skillFile("pickling", "Fermentation guide.", "BODY-V2: 3% salt."),
    );
    ws.write("skills/canning/SKILL.md", skillFile("canning", "Jars and lids.", "Boil them."));
    await reloaded(server, (line) => (line.skills as string[]).includes("canning"));
    fake.script({ text: "noted" });
    await runJob(server, "pickle");
    const after = systemOf(requestAt(fake, 2));
    expect(after).toContain("- canning: Jars and lids. (skills/canning/SKILL.md)");
    expect(after).toContain("- pickling: Fermentation guide.");
    expect(after).not.toContain("Brine recipes");
  });

  it("reports an invalid skill once, with its file and the fix, and the others still work", async () => {
    ws.write("skills/good/SKILL.md", skillFile("good", "Works.", "ok"));
    const server = await startServer(ws.dir);
    const file = ws.write("skills/Bad/SKILL.md", skillFile("Bad", "Broken name.", "x"));
    const reported = await server.waitForLog((line) => line.file === file);
    expect(reported.msg).toContain(`${file}: name: expected a skill name`);
    expect(reported.level).toBe(50);
    // Another change elsewhere reloads again without repeating the report.
    ws.write("skills/other/SKILL.md", skillFile("other", "Other.", "x"));
    await reloaded(server, (line) => (line.skills as string[]).includes("other"));
    expect(server.linesMatching((line) => line.file === file)).toHaveLength(1);

    fake.script({ text: "fine" });
    await runJob(server, "pickle");
    const system = systemOf(requestAt(fake, 0));
    expect(system).toContain("- good: Works.");
    expect(system).not.toContain("Bad");
  });

  it("warns when the listing passes skills.max_listing_chars, naming what was left out", async () => {
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, "skills:\n  max_listing_chars: 600\n"));
    ws.write("skills/alpha/SKILL.md", skillFile("alpha", "a".repeat(200), "x"));
    const server = await startServer(ws.dir);
    ws.write("skills/beta/SKILL.md", skillFile("beta", "b".repeat(200), "x"));
    const warning = await server.waitForLog(
      (line) => line.level === 40 && /left out/.test(line.msg),
    );
    expect(warning.msg).toContain('agent "pickle": 1 skill(s) left out of the system prompt');
    expect(warning.msg).toContain("(600): beta; raise skills.max_listing_chars");
  });
});

describe("skills in the commands", () => {
  it("prints a broken skill, an unknown skill of AGENT.md and a listing over budget as warnings", async () => {
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, "skills:\n  max_listing_chars: 600\n"));
    const file = ws.write("skills/no-description/SKILL.md", "---\nname: no-description\n---\nx\n");
    ws.write("skills/alpha/SKILL.md", skillFile("alpha", "a".repeat(150), "x"));
    ws.write("skills/beta/SKILL.md", skillFile("beta", "b".repeat(150), "x"));
    const agent = ws.write(
      "agents/pickle/AGENT.md",
      "---\nname: Pickle\ndescription: d\nskills: [alpha, beta, gamma]\n---\nYou are Pickle.\n",
    );
    const result = await runCli(["jobs", "--workspace", ws.dir]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `picklebot: warning: ${file}: description: missing (expected text of 1 to 1024 characters`,
    );
    expect(result.stderr).toContain(
      `picklebot: warning: ${agent}: skills: no skill "gamma" in skills/ or agents/pickle/skills/; add skills/gamma/SKILL.md or remove it from the list`,
    );
    expect(result.stderr).toContain(
      'picklebot: warning: agent "pickle": 1 skill(s) left out of the system prompt because the listing would pass skills.max_listing_chars (600): beta;',
    );
  });
});

describe("agents reloaded while the server runs", () => {
  it("runs an agent added, then changed, and fails closed when its AGENT.md breaks", async () => {
    const server = await startServer(ws.dir);
    ws.write("agents/chef/AGENT.md", agentFile("Chef", "You are Chef, version one."));
    await reloaded(server, (line) => (line.added as string[]).includes("chef"));
    fake.script({ text: "hi" });
    expect(await runJob(server, "chef")).toMatchObject({ outcome: "done", agent: "chef" });
    expect(systemOf(requestAt(fake, 0))).toContain("You are Chef, version one.");

    ws.write("agents/chef/AGENT.md", agentFile("Chef", "You are Chef, version two."));
    await reloaded(server, (line) => (line.changed as string[]).includes("chef"));
    fake.script({ text: "hi again" });
    await runJob(server, "chef");
    expect(systemOf(requestAt(fake, 1))).toContain("You are Chef, version two.");

    const file = ws.write("agents/chef/AGENT.md", "---\nname: Chef\n---\nno description\n");
    await server.waitForLog((line) => line.file === file && line.level === 50);
    const outcome = await runJob(server, "chef");
    expect(outcome.outcome).toBe("failed");
    const failed = (await jobsFromCli()).find((job) => job.id === outcome.job);
    expect(failed?.lastError).toMatch(/agent "chef" is broken .*description: missing/);
    expect(fake.requests).toHaveLength(2);
    const health = (await (await server.fetch("/healthz")).json()) as {
      brokenAgents: { id: string }[];
    };
    expect(health.brokenAgents.map((agent) => agent.id)).toEqual(["chef"]);
  });

  it("sees every save of an AGENT.md and a SKILL.md, by every editor, again and again", async () => {
    const agent = ws.write("agents/chef/AGENT.md", agentFile("Chef", "You are Chef, version 0."));
    const skill = ws.write("skills/brine/SKILL.md", skillFile("brine", "Brine, version 0.", "x"));
    const server = await startServer(ws.dir);
    // A reload after the save that names the file (a slow save may show a half-saved
    // state first: the agent broken, the skill gone; then it is added back).
    const namedAfter = (seenBefore: number, keys: string[], name: string) => () =>
      server
        .linesMatching(RELOADED)
        .slice(seenBefore)
        .some((line) => keys.some((key) => (line[key] as string[]).includes(name)));
    let version = 0;
    for (const [editor, save] of Object.entries(EDITOR_SAVES)) {
      for (let round = 1; round <= 3; round += 1) {
        version += 1;
        const seenBefore = server.linesMatching(RELOADED).length;
        save(agent, agentFile("Chef", `You are Chef, version ${version}.`));
        save(skill, skillFile("brine", `Brine, version ${version}.`, "x"));
        await waitFor(
          namedAfter(seenBefore, ["changed", "added"], "chef"),
          `${editor} ${round}: chef`,
        );
        await waitFor(namedAfter(seenBefore, ["skills"], "brine"), `${editor} ${round}: brine`);
      }
    }
    fake.script({ text: "hi" });
    await runJob(server, "chef");
    const system = systemOf(requestAt(fake, 0));
    expect(system).toContain(`You are Chef, version ${version}.`);
    expect(system).toContain(`- brine: Brine, version ${version}.`);
  });

  it("lets a running turn finish with the definition it started with", async () => {
    ws.write("agents/chef/AGENT.md", agentFile("Chef", "OLD PROMPT"));
    ws.write("notes.md", "salt");
    const server = await startServer(ws.dir);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    fake.script(
      {
        text: "Let me look.",
        pauseAfterChunks: 1,
        resume: held,
        toolUses: [{ name: "read", input: { path: "notes.md" } }],
      },
      { text: "salt it is" },
    );
    const running = runJob(server, "chef");
    await waitFor(() => fake.requests.length === 1, "the turn's first model call");
    ws.write("agents/chef/AGENT.md", agentFile("Chef", "NEW PROMPT"));
    await reloaded(server, (line) => (line.changed as string[]).includes("chef"));
    release();
    expect(await running).toMatchObject({ outcome: "done" });
    expect(systemOf(requestAt(fake, 1))).toContain("OLD PROMPT");

    fake.script({ text: "next" });
    await runJob(server, "chef");
    expect(systemOf(requestAt(fake, 2))).toContain("NEW PROMPT");
  });
});

describe.skipIf(postgresSkip !== null)("an agent added to a server in distributed mode", () => {
  let cluster: ClusterDatabase;
  beforeAll(async () => {
    cluster = await openClusterDatabase("skills_reload");
  });
  afterAll(() => cluster?.close());

  it("has its jobs claimed by the server without a restart", async () => {
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, clusterYaml(cluster.database.url)));
    const server = await startServer(ws.dir);
    ws.write("agents/chef/AGENT.md", agentFile("Chef", "You are Chef in a cluster."));
    await reloaded(server, (line) => (line.added as string[]).includes("chef"));
    fake.script({ text: "claimed" });
    const job = await cluster.producer.enqueue({
      agentId: "chef",
      sessionKey: "console:cluster-chef",
      message: "hello",
      mode: "job",
      replyTo: { kind: "silent" },
      maxAttempts: 1,
    });
    expect(await server.jobOutcomes(job.id)).toMatchObject([{ outcome: "done", agent: "chef" }]);
    expect(systemOf(requestAt(fake, 0))).toContain("You are Chef in a cluster.");
  });
});
