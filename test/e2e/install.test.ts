/**
 * The `picklebot` command as `npm install -g .` (or `npm link`) installs it: a symlink to
 * bin/picklebot.js in a folder on PATH, run from anywhere. And the package name npx
 * would look up is one we own, not the bare `picklebot`.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { CLI, childEnv } from "../helpers/cli.js";

interface PackageJson {
  name: string;
  version: string;
  bin: Record<string, string>;
}

const packageJson = JSON.parse(fs.readFileSync("package.json", "utf8")) as PackageJson;
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(tmpdir(), "picklebot-install-"));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

it("is published under a scope, so npx never fetches a stranger's `picklebot`", () => {
  expect(packageJson.name).toMatch(/^@[a-z0-9-]+\/picklebot$/);
  expect(packageJson.bin).toEqual({ picklebot: "./bin/picklebot.js" });
});

it("runs through a linked bin from another folder, as after npm install -g .", () => {
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin);
  fs.symlinkSync(CLI, path.join(bin, "picklebot"));
  const env = childEnv({ PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin` });

  const version = spawnSync("picklebot", ["--version"], { cwd: dir, env, encoding: "utf8" });
  const init = spawnSync("picklebot", ["init", "ws"], { cwd: dir, env, encoding: "utf8" });

  expect(version).toMatchObject({ status: 0, stdout: `${packageJson.version}\n` });
  expect(init.status).toBe(0);
  expect(init.stdout).toContain(`picklebot chat --workspace ${path.join(dir, "ws")}`);
  expect(fs.existsSync(path.join(dir, "ws", "picklebot.yaml"))).toBe(true);
});

it("installs globally as the README says, without npm's warning about our own scripts", () => {
  const readme = fs.readFileSync("README.md", "utf8");
  const line = readme.split("\n").find((text) => text.startsWith("npm install -g ."));
  expect(line, "the README's global install command").toBeDefined();
  const args = (line ?? "").replace(/#.*$/, "").trim().split(/\s+/).slice(1);
  const prefix = path.join(dir, "global");
  const install = spawnSync("npm", [...args, "--prefix", prefix, "--no-audit", "--no-fund"], {
    env: childEnv(),
    encoding: "utf8",
  });
  expect(install.status, install.stderr).toBe(0);
  expect(install.stderr).not.toContain("install-scripts");
  const version = spawnSync(path.join(prefix, "bin", "picklebot"), ["--version"], {
    env: childEnv(),
    encoding: "utf8",
  });
  expect(version).toMatchObject({ status: 0, stdout: `${packageJson.version}\n` });
});
