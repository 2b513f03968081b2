/** The `skill` tool on the real file system: instructions, files, and what it refuses. */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadSkills } from "../../src/agents/skills.js";
import { createSkillTool } from "../../src/agents/tools/skill.js";
import type { Tool } from "../../src/ports/index.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

let temp: TempWorkspace;
let skill: Tool;

function write(path: string, content: string): void {
  const full = join(temp.workspace, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, content);
}

beforeEach(() => {
  temp = createTempWorkspace();
  write(
    "skills/pdf-forms/SKILL.md",
    "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# PDF forms\nRun scripts/fill.py.\n",
  );
  write("skills/pdf-forms/scripts/fill.py", "print('filled')\n");
  write("skills/pdf-forms/references/fields.md", "Field names are case-sensitive.\n");
  write("skills/other/SKILL.md", "---\nname: other\ndescription: Other.\n---\nOther body.\n");
  write("picklebot.yaml", "llm:\n  api_key: sk-secret\n");
  skill = createSkillTool([...loadSkills(temp.workspace).shared.values()]);
});
afterEach(() => temp.remove());

describe("skill", () => {
  it("returns the instructions of SKILL.md without its front matter, and lists its files", async () => {
    expect(await skill.run({ name: "pdf-forms" }, temp.context())).toBe(
      "# PDF forms\nRun scripts/fill.py.\n\n" +
        '[Files of skill "pdf-forms" (read one with skill {name: "pdf-forms", file: "<path>"}): ' +
        "references/fields.md, scripts/fill.py]",
    );
  });

  it("reads the instructions as they are now, so an edit counts at once", async () => {
    write("skills/other/SKILL.md", "---\nname: other\ndescription: Other.\n---\nNew body.\n");
    expect(await skill.run({ name: "other" }, temp.context())).toBe("New body.");
  });

  it("reads a file of the skill, relative to its folder", async () => {
    expect(
      await skill.run({ name: "pdf-forms", file: "references/fields.md" }, temp.context()),
    ).toBe("Field names are case-sensitive.\n");
  });

  it("refuses a file outside the skill's folder: another skill, the workspace, outside it", async () => {
    for (const file of ["../other/SKILL.md", "../../picklebot.yaml", "/etc/passwd"]) {
      await expect(skill.run({ name: "pdf-forms", file }, temp.context())).rejects.toThrow(
        /is outside (the folder of skill "pdf-forms"|the workspace)/,
      );
    }
  });

  it("refuses a symlink in the skill that leads out of its folder", async () => {
    writeFileSync(join(temp.outside, "secret.txt"), "outside secret");
    symlinkSync(join(temp.outside, "secret.txt"), join(temp.workspace, "skills/pdf-forms/link"));
    symlinkSync(
      join(temp.workspace, "picklebot.yaml"),
      join(temp.workspace, "skills/pdf-forms/config"),
    );
    await expect(skill.run({ name: "pdf-forms", file: "link" }, temp.context())).rejects.toThrow(
      "is outside the workspace",
    );
    await expect(skill.run({ name: "pdf-forms", file: "config" }, temp.context())).rejects.toThrow(
      'skill: "config" is outside the folder of skill "pdf-forms"',
    );
  });

  it("names the agent's skills when asked for an unknown one", async () => {
    await expect(skill.run({ name: "pdf-form" }, temp.context())).rejects.toThrow(
      'skill: no skill "pdf-form"; did you mean "pdf-forms"? (this agent\'s skills: other, pdf-forms)',
    );
    await expect(createSkillTool([]).run({ name: "x" }, temp.context())).rejects.toThrow(
      "skill: this agent has no skills",
    );
  });
});
