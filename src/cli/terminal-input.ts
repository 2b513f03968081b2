/**
 * What `picklebot chat` reads, as messages. Scripted (stdin not a terminal), every line
 * is one message. At a terminal, a paste of several lines is one message
 * (docs/decisions/terminal-paste.md):
 *
 *   a line read ─► gathered with the lines of the same read (a paste arrives in one read;
 *      │           each Enter typed is a read of its own), or of one bracketed paste
 *      │           (ESC[200~ … ESC[201~, which the terminal sends once ESC[?2004h asked it to)
 *   the read is processed (setImmediate), and no bracketed paste is open
 *      ├─ text left at the prompt (the paste did not end with a newline) ─► held: the Enter
 *      │                                                that ends that line sends it all
 *      └─ otherwise ─► one message: the lines joined by "\n"
 *   end of input (Ctrl+D) ─► what is gathered is the last message, then none
 *
 * Nothing here depends on timing: lines are one message because they came in one read.
 */
import type { Interface } from "node:readline";

/** Turns bracketed paste on at a terminal: it then marks what is pasted. */
const BRACKETED_PASTE_ON = "\x1b[?2004h";
const BRACKETED_PASTE_OFF = "\x1b[?2004l";

/** A terminal's side of a {@link TerminalInput}. */
export interface TerminalSide {
  /** The input stream readline reads: its `keypress` events mark pastes. */
  input: NodeJS.EventEmitter;
  /** Where the bracketed-paste switch is written. */
  output: { write(text: string): unknown };
}

/** The chat's input as messages (see the file header). */
export class TerminalInput {
  readonly #lines: Interface;
  readonly #terminal: TerminalSide | null;
  readonly #messages: string[] = [];
  readonly #waiting: Array<(message: string | null) => void> = [];
  #gathered: string[] = [];
  #gathering = false;
  #pasting = false;
  #ended = false;
  /** Bracketed paste is on: to turn off when the chat ends, or the process exits. */
  #pasteMode = false;
  readonly #pasteModeOff = () => {
    if (!this.#pasteMode) return;
    this.#pasteMode = false;
    this.#terminal?.output.write(BRACKETED_PASTE_OFF);
    process.off("exit", this.#pasteModeOff);
  };

  /** `terminal`: the terminal the lines come from; null when they are piped (scripted). */
  constructor(lines: Interface, terminal: TerminalSide | null) {
    this.#lines = lines;
    this.#terminal = terminal;
    lines.on("line", (line: string) => (terminal ? this.#gather(line) : this.#push(line)));
    lines.on("close", () => this.#end());
    if (!terminal) return;
    terminal.input.on("keypress", (_text: unknown, key: { name?: string } | undefined) =>
      this.#keypress(key?.name),
    );
    terminal.output.write(BRACKETED_PASTE_ON);
    this.#pasteMode = true;
    process.once("exit", this.#pasteModeOff);
  }

  /** The next message, or null once the input ended and every message was read. */
  next(): Promise<string | null> {
    const message = this.#messages.shift();
    if (message !== undefined) return Promise.resolve(message);
    if (this.#ended) return Promise.resolve(null);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Stops reading; the terminal gets its usual paste behaviour back. */
  close(): void {
    this.#lines.close();
    this.#pasteModeOff();
  }

  #keypress(name: string | undefined): void {
    if (name === "paste-start") this.#pasting = true;
    if (name !== "paste-end") return;
    this.#pasting = false;
    this.#scheduleFlush();
  }

  #gather(line: string): void {
    this.#gathered.push(line);
    this.#scheduleFlush();
  }

  /** Flushes once every line of the current read has come (readline emits them at once). */
  #scheduleFlush(): void {
    if (this.#gathering) return;
    this.#gathering = true;
    setImmediate(() => {
      this.#gathering = false;
      if (this.#pasting || this.#lines.line !== "") return;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#gathered.length === 0) return;
    this.#push(this.#gathered.join("\n"));
    this.#gathered = [];
  }

  #push(message: string): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(message);
    else this.#messages.push(message);
  }

  #end(): void {
    this.#flush();
    this.#ended = true;
    for (const waiter of this.#waiting.splice(0)) waiter(null);
    this.#pasteModeOff();
  }
}
