/**
 * `picklebot chat`: a conversation in the terminal.
 *
 * On a TTY the reply streams as it is generated, tool calls show as one dim line each,
 * Ctrl+C stops the reply in progress and Ctrl+D (or /exit) leaves; a paste of several
 * lines is one message (terminal-input.ts). When stdin is not a TTY every line is one
 * message and only the plain replies go to stdout (tool lines and errors go to stderr),
 * so the command can be scripted; it exits 1 if a message failed.
 *
 * The chat commands are the chats' own (src/chat/commands.ts, on this chat as their
 * ChatContext), those that make sense here, with `/sessions` and `/exit`; any other
 * `/word` is refused with the list, never sent to the model. Known secrets typed in a
 * message are replaced by [redacted] before it is stored or sent.
 */
import { userInfo } from "node:os";
import { createInterface, type Interface } from "node:readline";
import { Command } from "commander";
import type { ApprovalQuestion } from "../agents/approval-gate.js";
import { approvalIdFor } from "../agents/approval-policy.js";
import { describeCompaction } from "../agents/compaction.js";
import type { AgentRunner } from "../agents/runner.js";
import { newTurnProgress, TurnDriver, turnEndingOf } from "../agents/turn.js";
import { systemClock } from "../base/clock.js";
import { CancelledError, JobEnded, ToolError, toError, UserError } from "../base/errors.js";
import { OWNER_PERSON } from "../base/person-key.js";
import { printable } from "../base/printable.js";
import { secretRedactor } from "../base/redact.js";
import { consoleSessionKey } from "../base/session-key.js";
import { chatAgentDirectory } from "../chat/agents.js";
import {
  ChatCommandSet,
  type ChatContext,
  commonCommands,
  describeChatCommand,
  parseChatCommand,
} from "../chat/commands.js";
import { modelEntryNames, secretValues, workspacePrices } from "../config/index.js";
import type { JobAdmin, Session } from "../ports/index.js";
import { openWorkspace, runnerFor, type WorkspaceContext } from "./context.js";
import { BOLD, DIM, RESET, ReplyPrinter } from "./reply-printer.js";
import { TerminalInput } from "./terminal-input.js";

/** The `chat` command. */
export function chatCommand(): Command {
  return new Command("chat")
    .description("chat with an agent in the terminal (shares the history store with the server)")
    .option("-a, --agent <id>", "agent to talk to (default: default_agent)")
    .option("-s, --session <id>", "resume a stored session")
    .action(async (options: { agent?: string; session?: string }, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const chat = new TerminalChat(context, process.stdin.isTTY === true);
        await chat.open(options);
        await chat.loop();
        if (chat.failures > 0) process.exitCode = 1;
      } finally {
        await context.close();
      }
    });
}

/**
 * `--session` on a chat whose job is queued, running or waiting (for an approval, say)
 * would close that job's turn under it, voiding the owner's later answer: refused, naming
 * the jobs.
 */
async function refuseBusySession(queue: JobAdmin, session: Session): Promise<void> {
  const states = ["queued", "running", "waiting"] as const;
  const lists = await Promise.all(
    states.map((state) => queue.list({ sessionKey: session.key, state })),
  );
  const busy = lists.flat();
  if (busy.length === 0) return;
  const jobs = busy.map((job) => `${job.id} (${job.state})`).join(", ");
  throw new UserError(
    `session ${session.id} (${session.key}) has work in progress: job ${jobs}; wait for it to end, or cancel a queued or waiting one with picklebot jobs cancel <id>, then resume the session`,
  );
}

class TerminalChat {
  failures = 0;
  #session: Session | null = null;
  #agentId = "";
  #reply: AbortController | null = null;
  /** The reply being printed, where `post_message` posts show up. */
  #printer: ReplyPrinter | null = null;
  readonly #context: WorkspaceContext;
  readonly #runner: AgentRunner;
  /** Drives each message's turn as the server's worker does (agents/turn.ts). */
  readonly #turns: TurnDriver;
  readonly #tty: boolean;
  readonly #lines: Interface;
  /** The chat's messages, and the answers to approval questions. */
  readonly #input: TerminalInput;
  readonly #commands: ChatCommandSet<ChatContext>;
  /** This chat, as the chat commands see it. */
  readonly #chat: ChatContext;
  /** Takes the configured secrets out of a message before it is stored or sent. */
  readonly #redact: (text: string) => string;
  /** `/exit` was typed. */
  #leaving = false;

  constructor(context: WorkspaceContext, tty: boolean) {
    this.#context = context;
    this.#runner = runnerFor(
      context,
      () => (text) => this.#postToTerminal(text),
      () => (question) => this.#approve(question),
    );
    this.#turns = new TurnDriver({ runner: this.#runner, history: context.storage.history });
    this.#tty = tty;
    this.#lines = createInterface({ input: process.stdin, output: process.stdout, terminal: tty });
    const terminal = tty ? { input: process.stdin, output: process.stdout } : null;
    this.#input = new TerminalInput(this.#lines, terminal);
    this.#redact = secretRedactor(secretValues(context.config));
    this.#chat = this.#chatContext();
    this.#commands = this.#commandSet();
  }

  /** The commands of the terminal: the chats' that make sense here, and its own. */
  #commandSet(): ChatCommandSet<ChatContext> {
    const { config, agents, brokenAgents, storage } = this.#context;
    const common = commonCommands({
      agents: chatAgentDirectory(config, agents, brokenAgents),
      contextUsage: (agentId, sessionId) => this.#runner.contextUsage(agentId, sessionId),
      usage: storage.usage,
      models: {
        names: modelEntryNames(config),
        chainOf: (agentId, model) => this.#runner.modelsShown(agentId, model),
      },
      pricing: { prices: workspacePrices(config), timezone: config.timezone },
      clock: systemClock,
      memory: storage.memory,
      recall: storage.recall,
    });
    return new ChatCommandSet(
      {
        new: common.new,
        status: common.status,
        usage: common.usage,
        compact: { description: describeChatCommand("compact"), run: () => this.#compact() },
        agent: common.agent,
        model: common.model,
        memory: common.memory,
        forget: common.forget,
        sessions: {
          description: "List recent sessions (resume one with picklebot chat --session ID)",
          run: () => this.#listSessions(),
        },
        exit: {
          description: "Leave (or Ctrl+D)",
          run: async () => {
            this.#leaving = true;
          },
        },
      },
      {
        intro: "Type a message for the agent, or a command:",
        aliases: { quit: "exit" },
        notes: ["Ctrl+C stops a reply in progress."],
      },
    );
  }

  /** This chat as a {@link ChatContext}: one session at a time, nothing queued. */
  #chatContext(): ChatContext {
    return {
      agent: async () => ({ agentId: this.#agentId, pinnedBy: null }),
      // As stored now: its message count and usage have grown since it was opened.
      session: async () =>
        this.#session && this.#context.storage.history.getSession(this.#session.id),
      startSession: (agentId) => this.#createSession(agentId),
      owner: () => true,
      chooseModel: (sessionId, model) =>
        this.#context.storage.history.setSessionModel(sessionId, model),
      reply: async (text) => this.#say(`${printable(text, { multiline: true })}\n`),
      queue: async () => null,
      sender: () => ({ person: OWNER_PERSON, direct: true }),
    };
  }

  /** Picks the agent and, with `--session`, the stored session to resume. */
  async open(options: { agent?: string; session?: string }): Promise<void> {
    const { config, storage } = this.#context;
    const runner = this.#runner;
    if (options.session) {
      const session = await storage.history.getSession(options.session);
      if (!session) {
        throw new UserError(
          `no session "${options.session}" in ${config.history.path}; run /sessions in picklebot chat to list them`,
        );
      }
      await refuseBusySession(storage.queue, session);
      this.#session = session;
      this.#agentId = session.agentId;
    } else {
      this.#agentId = options.agent ?? config.default_agent;
    }
    const agent = runner.agent(this.#agentId);
    if (!this.#tty) return;
    const resumed = this.#session
      ? ` — resuming "${printable(this.#session.title ?? this.#session.id)}" (${this.#session.messageCount} messages)`
      : "";
    this.#say(`${BOLD}${agent.name}${RESET}${resumed}\n${DIM}/help for commands${RESET}\n`);
  }

  /** Reads messages until /exit or end of input. */
  async loop(): Promise<void> {
    this.#lines.on("SIGINT", () => this.#interrupt());
    this.#prompt();
    for (let line = await this.#input.next(); line !== null; line = await this.#input.next()) {
      const text = line.trim();
      if (text) await this.#handle(text);
      if (this.#leaving) break;
      this.#prompt();
    }
    this.#input.close();
    if (this.#tty) this.#say("\n");
  }

  /** A chat command (or the refusal of an unknown one), else a message for the agent. */
  async #handle(text: string): Promise<void> {
    const typed = parseChatCommand(text);
    if (!typed) return this.#send(this.#redact(text));
    const command = this.#commands.find(typed.name);
    if (!command) return this.#complain(this.#commands.refusal(typed.name));
    try {
      await command.run(this.#chat, typed.argument);
    } catch (thrown) {
      this.#complain(`error: ${toError(thrown).message}`);
    }
  }

  /** What went wrong with a command: on stderr when scripted, where it counts as a failure. */
  #complain(text: string): void {
    const line = `${printable(text, { multiline: true })}\n`;
    if (this.#tty) {
      this.#say(line);
      return;
    }
    process.stderr.write(line);
    this.failures += 1;
  }

  /** `/compact`: summarises the session now (Ctrl+C stops it), and says what it did. */
  async #compact(): Promise<void> {
    const session = this.#session;
    if (!session) return this.#chat.reply("Nothing to compact yet; this conversation is empty.");
    this.#reply = new AbortController();
    try {
      const request = { agentId: session.agentId, sessionId: session.id };
      const { report } = await this.#runner.compactNow({ ...request, signal: this.#reply.signal });
      await this.#chat.reply(report);
    } finally {
      this.#reply = null;
    }
  }

  async #send(text: string): Promise<void> {
    const runner = this.#runner;
    const session = this.#session ?? (await this.#createSession());
    this.#reply = new AbortController();
    const { signal } = this.#reply;
    const stream = new ReplyPrinter(this.#tty, runner.agent(this.#agentId).name);
    this.#printer = stream;
    const progress = newTurnProgress();
    try {
      const turn = await this.#turns.drive({
        agentId: this.#agentId,
        sessionId: session.id,
        sessionKey: session.key,
        signal,
        progress,
        events: stream.events(),
        message: { role: "user", content: [{ type: "text", text }] },
        onCompacted: (compacted) =>
          this.#note(`conversation compacted: ${describeCompaction(compacted)}`),
        onCompactionFailed: (error) =>
          this.#note(
            `could not summarise the conversation: ${printable(error.message)}; its oldest turns are left out instead`,
          ),
      });
      if (turn.status === "answered") {
        const { text: reply, usage, notice } = turn.result;
        stream.finish(reply, usage, notice);
      }
    } catch (thrown) {
      if (thrown instanceof JobEnded) return this.#ended(stream, thrown);
      const ending = turnEndingOf(signal.aborted ? signal.reason : undefined);
      await this.#turns.close(session.id, ending, progress);
      stream.fail(signal.aborted ? "stopped" : toError(thrown).message);
      if (!signal.aborted) this.failures += 1;
    } finally {
      this.#reply = null;
      this.#printer = null;
    }
  }

  /** A note between the replies, dim on a terminal: "(what happened)". */
  #note(text: string): void {
    this.#say(`${this.#tty ? DIM : ""}(${text})${this.#tty ? RESET : ""}\n`);
  }

  /** A tool ended the turn: a cancel is a failure with its message, a discard says why. */
  #ended(stream: ReplyPrinter, ended: JobEnded): void {
    if (ended.ending.outcome === "cancel") {
      stream.fail(ended.message);
      this.failures += 1;
    } else {
      stream.fail(`discarded: ${ended.message}`);
    }
  }

  /** `post_message` in the terminal: the post is printed in the reply as its own block. */
  async #postToTerminal(text: string): Promise<string> {
    (this.#printer ?? new ReplyPrinter(this.#tty, this.#agentId)).post(text);
    return "posted to the terminal";
  }

  /** A new session of this terminal with `agentId` (refused for an unknown or broken agent). */
  async #createSession(agentId = this.#agentId): Promise<Session> {
    this.#runner.agent(agentId);
    const key = consoleSessionKey(userInfo().username);
    this.#session = await this.#context.storage.history.createSession({ key, agentId });
    this.#agentId = agentId;
    return this.#session;
  }

  async #listSessions(): Promise<void> {
    const sessions = await this.#context.storage.history.listSessions({ limit: 20 });
    if (sessions.length === 0) return this.#say("no sessions yet\n");
    for (const session of sessions) {
      const when = new Date(session.updatedAt).toISOString().slice(0, 16).replace("T", " ");
      const current = session.id === this.#session?.id ? " *" : "";
      this.#say(
        `${printable(`${session.id}  ${when}  ${session.agentId}  ${session.key}  ${session.messageCount} msgs  ${session.title ?? ""}${current}`)}\n`,
      );
    }
    this.#say(`resume one with: picklebot chat --session <id>\n`);
  }

  #interrupt(): void {
    if (this.#reply) {
      this.#reply.abort(new CancelledError("stopped with Ctrl+C"));
      return;
    }
    this.#say(`\n${DIM}(Ctrl+D or /exit to leave)${RESET}\n`);
    this.#prompt();
  }

  #prompt(): void {
    if (this.#tty) this.#lines.setPrompt(`${BOLD}you ›${RESET} `);
    if (this.#tty) this.#lines.prompt();
  }

  #say(text: string): void {
    process.stdout.write(text);
  }

  /**
   * Asks at the terminal about a call the approval policy marks `ask`: y (once), a
   * (always: stored, as a chat's "Always allow" is), anything else or the end of input
   * denies. Scripted, the answer is the next input line and the question goes to stderr.
   */
  async #approve(question: ApprovalQuestion): Promise<void> {
    const { approvals } = this.#context.storage;
    if (await approvals.isGranted(question.agentId, question.tool, question.pattern)) return;
    const ask = `${question.agentId} wants to run ${printable(question.summary)}\nAllow? [y] once, [a] always, [n] no: `;
    (this.#tty ? process.stdout : process.stderr).write(
      this.#tty ? `\n${BOLD}${ask}${RESET}` : ask,
    );
    const answer = (await this.#input.next())?.trim().toLowerCase() ?? "";
    if (answer === "a" || answer === "always") {
      await this.#grant(question);
      return;
    }
    if (answer === "y" || answer === "yes") return;
    throw new ToolError(
      `${question.tool}: the owner denied this call; do not try again unless asked`,
    );
  }

  /** Stores the "always allow" of a question answered at the terminal. */
  async #grant(question: ApprovalQuestion): Promise<void> {
    const { approvals } = this.#context.storage;
    const now = Date.now();
    const id = approvalIdFor(`console:${this.#session?.id ?? ""}`, `${now}`);
    await approvals.open({
      id,
      jobId: "-",
      agentId: question.agentId,
      tool: question.tool,
      input: JSON.stringify(question.input) ?? "null",
      pattern: question.pattern,
      replyTo: { kind: "console" },
      createdAt: now,
      expiresAt: now + 60_000,
    });
    await approvals.answer(id, "always", `console (${userInfo().username})`, now);
  }
}
