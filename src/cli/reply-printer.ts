/**
 * How `picklebot chat` prints a reply: streamed with decorations on a TTY (the agent's
 * name, tool calls as dim lines, the tokens used), plain text otherwise (tool lines and
 * errors on stderr), so a script reads only the replies on stdout.
 */
import { printable } from "../base/printable.js";
import type { TokenUsage } from "../ports/index.js";

export const DIM = "\x1b[2m";
export const BOLD = "\x1b[1m";
const RED = "\x1b[31m";
export const RESET = "\x1b[0m";

/** Prints one reply: streamed with decorations on a TTY, plain text otherwise. */
export class ReplyPrinter {
  #streamed = "";
  #atLineStart = true;
  readonly #tty: boolean;
  readonly #name: string;

  constructor(tty: boolean, agentName: string) {
    this.#tty = tty;
    this.#name = agentName;
  }

  events() {
    return {
      onModelCall: () => {
        if (this.#tty && this.#atLineStart)
          this.#write(`${BOLD}${this.#name.toLowerCase()} ›${RESET} `);
      },
      onText: (delta: string) => {
        this.#streamed += delta;
        if (this.#tty) this.#write(printable(delta, { multiline: true }));
      },
      onToolCall: (_call: unknown, summary: string) => {
        if (!this.#tty) {
          process.stderr.write(`· ${printable(summary)}\n`);
          return;
        }
        if (!this.#atLineStart) this.#write("\n");
        this.#write(`${DIM}  ↳ ${printable(summary)}${RESET}\n`);
      },
    };
  }

  /** A message the agent posted with `post_message`, apart from the reply. */
  post(posted: string): void {
    const text = printable(posted, { multiline: true });
    if (!this.#tty) {
      this.#write(`post: ${text}\n`);
      return;
    }
    if (!this.#atLineStart) this.#write("\n");
    this.#write(`${BOLD}${this.#name.toLowerCase()} posted:${RESET} ${text}\n`);
  }

  /**
   * The reply is complete: printed whole unless it streamed, then the tokens on a TTY.
   * `notice` (a fallback answered; `reply` starts with it) streamed with nothing, so on a
   * TTY it is printed after the streamed text, dim, on its own line.
   */
  finish(reply: string, usage: TokenUsage, notice?: string): void {
    const text = printable(reply, { multiline: true });
    if (!this.#tty) {
      this.#write(`${text}\n`);
      return;
    }
    // A reply found finished in history (a resumed turn) streamed nothing: print it whole.
    if (!this.#streamed.trim()) this.#write(text);
    else if (notice !== undefined) this.#write(`\n${DIM}${printable(notice)}${RESET}`);
    this.#write(`\n${DIM}${formatUsage(usage)}${RESET}\n`);
  }

  fail(message: string): void {
    if (this.#tty && !this.#atLineStart) this.#write("\n");
    const line = `error: ${printable(message, { multiline: true })}\n`;
    if (this.#tty) this.#write(`${RED}${line}${RESET}`);
    else process.stderr.write(line);
  }

  #write(text: string): void {
    if (text.length === 0) return;
    process.stdout.write(text);
    this.#atLineStart = text.endsWith("\n");
  }
}

function formatUsage(usage: TokenUsage): string {
  const k = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));
  const cached = usage.cacheRead > 0 ? `, ${k(usage.cacheRead)} cached` : "";
  return `(${k(usage.input)} in / ${k(usage.output)} out${cached})`;
}
