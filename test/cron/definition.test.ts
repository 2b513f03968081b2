import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import { loadCronDir, loadCronFile } from "../../src/cron/definition.js";

const defaults = { agentId: "pickle", timezone: "Europe/Berlin" };

let cronDir: string;

beforeEach(() => {
  cronDir = join(mkdtempSync(join(tmpdir(), "picklebot-cron-def-")), "crons");
  mkdirSync(cronDir);
});

afterEach(() => {
  rmSync(join(cronDir, ".."), { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const file = join(cronDir, name);
  writeFileSync(file, text);
  return file;
}

/** Loads `text` as crons/<name> and returns the error it raises. */
function errorOf(text: string, name = "daily.yaml"): UserError {
  const file = write(name, text);
  try {
    loadCronFile(file, defaults);
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
  throw new Error("expected the cron file to be rejected");
}

describe("loadCronFile", () => {
  it("reads the example of docs/design.md §2.3", () => {
    const file = write(
      "calendar.yaml",
      [
        'schedule: "0 8 * * *"',
        "agent: pickle",
        "prompt: |",
        "  Summarise my calendar for today.",
        "timezone: Europe/Berlin",
        "deliver_to: telegram:123456789",
        "enabled: true",
        "one_off: false",
        "catch_up: false",
        "",
      ].join("\n"),
    );
    expect(loadCronFile(file, defaults)).toMatchObject({
      id: "calendar",
      file,
      schedule: "0 8 * * *",
      agentId: "pickle",
      prompt: "Summarise my calendar for today.",
      timezone: "Europe/Berlin",
      deliverTo: { kind: "telegram", chatId: "123456789" },
      enabled: true,
      oneOff: false,
      catchUp: false,
    });
  });

  it("fills in the defaults: config agent and time zone, silent, enabled", () => {
    const file = write("min_1.yaml", 'schedule: "*/5 * * * *"\nprompt: ping\n');
    expect(loadCronFile(file, { agentId: "scout", timezone: "Asia/Tokyo" })).toMatchObject({
      id: "min_1",
      agentId: "scout",
      timezone: "Asia/Tokyo",
      deliverTo: { kind: "silent" },
      enabled: true,
      oneOff: false,
      catchUp: false,
      batch: false,
    });
  });

  it("reads batch: true, and names the key when it is not a boolean", () => {
    const file = write("nightly.yaml", 'schedule: "0 3 * * *"\nprompt: x\nbatch: true\n');
    expect(loadCronFile(file, defaults).batch).toBe(true);
    expect(errorOf('schedule: "0 3 * * *"\nprompt: x\nbatch: later\n').message).toMatch(/batch/);
  });

  it("reads discord targets and negative telegram chat ids", () => {
    const discord = write("a.yaml", 'schedule: "0 8 * * *"\nprompt: x\ndeliver_to: discord:987\n');
    const group = write(
      "b.yaml",
      'schedule: "0 8 * * *"\nprompt: x\ndeliver_to: telegram:-100123\n',
    );
    expect(loadCronFile(discord, defaults).deliverTo).toEqual({
      kind: "discord",
      chatId: "987",
    });
    expect(loadCronFile(group, defaults).deliverTo).toEqual({
      kind: "telegram",
      chatId: "-100123",
    });
  });

  it("names the file and the missing field", () => {
    const error = errorOf('schedule: "0 8 * * *"\n');
    expect(error.message).toBe(
      `${join(cronDir, "daily.yaml")}: prompt: missing (expected the non-empty message the agent receives); add it.`,
    );
    expect(error.context).toMatchObject({ file: join(cronDir, "daily.yaml"), field: "prompt" });
    expect(errorOf('schedule: "0 8 * * *"\nprompt: "   "\n').message).toContain(
      'prompt: expected the non-empty message the agent receives, found ""',
    );
    expect(errorOf("prompt: hi\n").message).toContain("schedule: missing (expected");
  });

  it("rejects a schedule that is not 5 fields, or not a cron expression", () => {
    const short = errorOf('schedule: "0 8 * *"\nprompt: hi\n');
    expect(short.message).toContain('"schedule" "0 8 * *" has 4 fields; write 5');
    expect(short.context.field).toBe("schedule");
    expect(errorOf('schedule: "0 0 8 * * *"\nprompt: hi\n').message).toContain("has 6 fields");
    const invalid = errorOf('schedule: "61 8 * * *"\nprompt: hi\n');
    expect(invalid.message).toContain('"schedule" "61 8 * * *" is not a valid cron expression');
    expect(invalid.message).toContain("0-59");
  });

  it("rejects an unknown time zone, naming the key", () => {
    const error = errorOf('schedule: "0 8 * * *"\nprompt: hi\ntimezone: Europe/Berlinn\n');
    expect(error.message).toContain('"timezone" "Europe/Berlinn" is not a known IANA time zone');
    expect(error.context.field).toBe("timezone");
  });

  it("with the workspace's agents, rejects a cron naming another agent, and keeps the default", () => {
    const withAgents = { ...defaults, agentIds: ["scribe"] };
    const file = write("digest.yaml", 'schedule: "0 7 * * *"\nagent: scrib\nprompt: "x"\n');
    const known = write("notes.yaml", 'schedule: "0 7 * * *"\nagent: scribe\nprompt: "x"\n');
    const fallback = write("plain.yaml", 'schedule: "0 7 * * *"\nprompt: "x"\n');

    expect(() => loadCronFile(file, withAgents)).toThrow(
      `${file}: "agent" "scrib" is not an agent of this workspace (did you mean "scribe"?); name one of pickle, scribe or create agents/scrib/AGENT.md.`,
    );
    expect(loadCronFile(known, withAgents).agentId).toBe("scribe");
    expect(loadCronFile(fallback, withAgents).agentId).toBe("pickle");
    expect(loadCronFile(file, defaults).agentId).toBe("scrib");
  });

  it("suggests the closest key for an unknown one", () => {
    const error = errorOf('schedule: "0 8 * * *"\nprompt: hi\ncatchup: true\n');
    expect(error.message).toContain('daily.yaml: catchup: unknown key; did you mean "catch_up"?');
    expect(error.context.field).toBe("catchup");
    expect(errorOf('schedul: "0 8 * * *"\nprompt: hi\n').message).toContain(
      'did you mean "schedule"?',
    );
  });

  it("rejects a bad deliver_to and non-boolean switches", () => {
    expect(errorOf('schedule: "0 8 * * *"\nprompt: hi\ndeliver_to: slack:42\n').message).toContain(
      '"deliver_to" is "slack:42"; expected telegram:<chat_id> or discord:<channel_id> or slack:<channel_id>',
    );
    const enabled = errorOf('schedule: "0 8 * * *"\nprompt: hi\nenabled: "sometimes"\n');
    expect(enabled.message).toContain('enabled: expected true or false, found "sometimes"');
    expect(enabled.context.field).toBe("enabled");
  });

  it("reports YAML syntax errors with their line, and file names that are not ids", () => {
    expect(errorOf('schedule: "0 8 * * *"\nprompt: [oops\n').message).toMatch(
      /daily\.yaml:\d+: YAML syntax error: .+; fix the syntax on line \d+\./,
    );
    expect(errorOf("- a\n- b\n").message).toContain("must be a YAML mapping");
    expect(errorOf('schedule: "0 8 * * *"\nprompt: hi\n', "my cron.yaml").message).toContain(
      'the file name "my cron" becomes the cron id',
    );
  });
});

describe("loadCronDir", () => {
  it("loads the good files and returns one error per bad file", () => {
    write("b-good.yaml", 'schedule: "0 8 * * *"\nprompt: hi\n');
    write("a-bad.yaml", 'schedule: "0 8 * * *"\n');
    write("c.yml", 'schedule: "0 8 * * *"\nprompt: hi\n');
    write(".d.yaml.swp", "junk");
    write("notes.txt", "not a cron");
    const { crons, errors } = loadCronDir(cronDir, defaults);
    expect(crons.map((cron) => cron.id)).toEqual(["b-good"]);
    expect(errors.map((error) => [error.context.file, error.context.field])).toEqual([
      [join(cronDir, "a-bad.yaml"), "prompt"],
      [join(cronDir, "c.yml"), "file name"],
    ]);
    expect(errors[1]?.message).toContain("rename it to c.yaml");
  });

  it("treats a missing folder as no crons", () => {
    expect(loadCronDir(join(cronDir, "nope"), defaults)).toEqual({ crons: [], errors: [] });
  });

  it("loads the example shipped in the repository, disabled", () => {
    const example = new URL("../../crons/example.yaml", import.meta.url).pathname;
    const cron = loadCronFile(example, defaults);
    expect(cron).toMatchObject({ id: "example", enabled: false, schedule: "0 8 * * *" });
  });
});
