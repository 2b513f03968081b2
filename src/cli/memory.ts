/** `picklebot memory`: the agents' memory (docs/guides/memory.md). */
import { Command } from "commander";
import { UserError } from "../base/errors.js";
import { isPersonKey, PERSON_KEY_FORMS } from "../base/person-key.js";
import { withWorkspace } from "./context.js";
import { formatTime, printJson, printLine, printTable } from "./output.js";

/** The `memory` command group. */
export function memoryCommand(): Command {
  const memory = new Command("memory").description(
    "the agents' memory: memory link <person> <to> | unlink <person> | links",
  );
  memory
    .command("link")
    .description(
      "give PERSON the memory of TO (one person on two platforms); PERSON's memory is merged into TO's",
    )
    .argument("<person>", PERSON_KEY_FORMS)
    .argument("<to>", PERSON_KEY_FORMS)
    .action((person: string, to: string, _options: unknown, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const link = await storage.memory.link(personKey(person), personKey(to), {
          by: "cli",
          at: Date.now(),
        });
        printLine(
          `linked ${link.person} to ${link.linkedTo}: both now share ${link.linkedTo}'s memory and their conversations are searched together`,
        );
      }),
    );
  memory
    .command("unlink")
    .description("end PERSON's link; the memory stays with the key it was linked to")
    .argument("<person>", PERSON_KEY_FORMS)
    .action((person: string, _options: unknown, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        if (!(await storage.memory.unlink(personKey(person)))) {
          throw new UserError(
            `${person} is not linked to anyone; see the links with picklebot memory links`,
          );
        }
        printLine(`unlinked ${person}: from now on it has a memory of its own`);
      }),
    );
  memory
    .command("links")
    .description("the person keys linked to another's memory")
    .option("--json", "print JSON for scripts")
    .action((options: { json?: boolean }, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const links = await storage.memory.links();
        if (options.json) return printJson(links);
        if (links.length === 0) return printLine("no linked person keys");
        printTable(
          ["person", "shares the memory of", "since"],
          links.map((link) => [link.person, link.linkedTo, formatTime(link.at)]),
        );
      }),
    );
  return memory;
}

/** `text` when it is a person key; a UserError naming the forms otherwise. */
function personKey(text: string): string {
  if (isPersonKey(text)) return text;
  throw new UserError(`"${text}" is not a person key; write ${PERSON_KEY_FORMS}`);
}
