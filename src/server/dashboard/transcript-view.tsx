/** A transcript as HTML: Markdown text, tool calls as cards that expand, compactions marked. */
import { raw } from "hono/html";
import type { Job } from "../../ports/index.js";
import { truncate } from "./components.js";
import { renderMarkdown } from "./markdown.js";
import type { TranscriptEntry } from "./transcript.js";

/** Characters of a tool result shown in its card (the rest is cut, with a note). */
const RESULT_SHOWN = 4000;
/** Characters of a tool's input in the card's one-line summary. */
const INPUT_SUMMARY = 80;

/** Every entry, then the jobs of the session's key that have not reached its history yet. */
export function TranscriptView(props: { entries: TranscriptEntry[]; pending: Job[] }) {
  return (
    <>
      {props.entries.length === 0 && props.pending.length === 0 ? (
        <p class="muted">no messages yet</p>
      ) : null}
      {props.entries.map((entry) => (
        <Entry entry={entry} />
      ))}
      {props.pending.map((job) => (
        <div class="msg user pending" data-job={job.id}>
          <div class="who">
            you, {job.state === "running" ? "the agent is working on it…" : "queued…"}
          </div>
          {job.checkpointed ? null : raw(renderMarkdown(job.message))}
        </div>
      ))}
    </>
  );
}

function Entry(props: { entry: TranscriptEntry }) {
  const { entry } = props;
  switch (entry.kind) {
    case "text":
      return (
        <div class={`msg ${entry.role}`}>
          <div class="who">{entry.role === "user" ? "user" : "assistant"}</div>
          {raw(renderMarkdown(entry.text))}
        </div>
      );
    case "tool":
      return <ToolCard entry={entry} />;
    case "compaction":
      return (
        <div class="compaction">
          <div class="who">
            Compacted: this summary stands for the {entry.replaces} messages above
          </div>
          {raw(renderMarkdown(entry.summary))}
        </div>
      );
    case "job_end":
      return (
        <p class={entry.outcome === "cancel" ? "bad" : "muted"}>
          job ended by a tool ({entry.outcome}): {entry.message}
        </p>
      );
    default:
      return assertNever(entry);
  }
}

function ToolCard(props: { entry: Extract<TranscriptEntry, { kind: "tool" }> }) {
  const { entry } = props;
  const input = JSON.stringify(entry.input, null, 2) ?? "";
  const result = entry.result;
  return (
    <details class={`tool${entry.isError ? " error" : ""}`}>
      <summary>
        {entry.name} {truncate(JSON.stringify(entry.input) ?? "", INPUT_SUMMARY)}
        {result === null ? " (running…)" : entry.isError ? " (error)" : ""}
      </summary>
      <div class="muted">input</div>
      <pre>{input}</pre>
      <div class="muted">result</div>
      {result === null ? (
        <p class="muted">no result yet</p>
      ) : (
        <pre>
          {truncate(result, RESULT_SHOWN)}
          {result.length > RESULT_SHOWN
            ? `\n[${result.length - RESULT_SHOWN} more characters]`
            : ""}
        </pre>
      )}
    </details>
  );
}

function assertNever(value: never): never {
  throw new Error(`unknown transcript entry ${JSON.stringify(value)}`);
}
