import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import { findCron, loadWorkspaceCrons, setCronEnabled } from "../../src/cron/admin.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const NEWS = `# Morning news
schedule: "0 8 * * *"
enabled: true   # switched from the dashboard
prompt: Summarize the news
`;

let ws: TempWorkspace;
const load = () => loadWorkspaceCrons(ws.dir, testConfig(ws.dir, { default_agent: "scout" }));

beforeEach(() => {
  ws = makeWorkspace({ "crons/news.yaml": NEWS });
});
afterEach(() => ws.remove());

describe("cron admin", () => {
  it("loads crons with the workspace's default agent and zone", () => {
    expect(findCron(load(), "news")).toMatchObject({ agentId: "scout", timezone: "UTC" });
  });

  it("switches enabled: in place, keeping comments and key order (a comment may be re-spaced)", () => {
    setCronEnabled(findCron(load(), "news"), false);
    expect(readFileSync(`${ws.dir}/crons/news.yaml`, "utf8")).toBe(
      NEWS.replace("enabled: true   #", "enabled: false #"),
    );
    expect(findCron(load(), "news").enabled).toBe(false);
  });

  it("refuses to switch a file edited since it was loaded, leaving the edit", () => {
    const cron = findCron(load(), "news");
    ws.write("crons/news.yaml", `${NEWS}batch: true\n`);
    expect(() => setCronEnabled(cron, false)).toThrow(
      /news\.yaml: the file changed while you were looking at it; reload the page and try again/,
    );
    expect(readFileSync(`${ws.dir}/crons/news.yaml`, "utf8")).toContain("enabled: true");
  });

  it("names the known ids for an unknown one", () => {
    expect(() => findCron(load(), "nws")).toThrow(UserError);
    expect(() => findCron(load(), "nws")).toThrow('no cron "nws" in crons/ (known: news)');
  });
});
