/**
 * The contracts of picklebot, in one place: every port, and the constants the adapters
 * share. An adapter implements its port; what a composition needs beyond one port (the
 * checkpoint that spans history and queue, a cluster's rescue) is itself a port here.
 *
 * Glossary
 * - **Agent**: a system prompt plus a tool list, defined in `agents/<id>/AGENT.md`.
 * - **Session**: one conversation with an agent, stored durably in the history store.
 *   Its **session key** names the conversation it belongs to (`telegram:<chat_id>`,
 *   `discord:<channel_id>`, `cron:<id>:<occurrence>`, `console:<name>`, `web:…`,
 *   `subagent:…`: every form is built and read in `src/base/session-key.ts`); a key may
 *   have had several sessions over time (`/new`), the newest one is its current session.
 * - **Turn**: a user message and everything the agent did to answer it (tool calls,
 *   tool results, the final reply).
 * - **Job**: a request to run one turn, stored in the job queue as plain data.
 * - **Worker**: a long-running part of the server (AgentWorker, CronWorker,
 *   MessageBusWorker) that the supervisor starts, watches and restarts.
 * - **Frontend**: where a person sees an agent's work (console, Telegram, Discord, or
 *   nowhere: silent). A job names its frontend by a plain {@link ReplyTarget}.
 * - **Chat platform**: the bot connection to Telegram, Discord or Slack that a chat frontend
 *   sends through and the message bus receives from.
 * - **Checkpoint**: the moment a job's user message is written to history; from then on
 *   the job's message is {@link RESUME_MARKER} and a retry resumes from history instead of
 *   starting over.
 * - **Instance**: one picklebot process of a cluster (distributed mode); one of them, the
 *   **leader**, runs the crons and the chat bus's receiving side.
 * - **Approval**: the owner's consent to one tool call an agent's policy asks about.
 * - **Usage ledger**: every model call's tokens, model and job, stored with its message.
 * - **Memory**: what an agent keeps between sessions: its notes, and what it knows about
 *   each person it talks to (a **person key**: `telegram:<user id>`, `discord:<user id>`,
 *   `slack:<member id>`, `owner`); see `memory.ts`.
 *
 * Files: `messages` (conversation content), `history`, `queue`, `storage` (a backend's
 * stores and the checkpoint), `model`, `tool`, `frontend`, `chat` (platforms, outbox,
 * pairing), `approval` (tool-call approvals), `cron`, `schedule` (reminders the agent sets), `cluster`, `runtime` (clock, worker), `usage` (the ledger), `events` (the
 * stream of state changes), `memory` (memories, and the search over past sessions).
 */
export * from "./approval.js";
export * from "./chat.js";
export * from "./cluster.js";
export * from "./cron.js";
export * from "./events.js";
export * from "./frontend.js";
export * from "./history.js";
export * from "./memory.js";
export * from "./messages.js";
export * from "./model.js";
export * from "./queue.js";
export * from "./runtime.js";
export * from "./schedule.js";
export * from "./storage.js";
export * from "./tool.js";
export * from "./usage.js";
