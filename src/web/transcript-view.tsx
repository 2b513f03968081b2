/**
 * A transcript (agents/transcript.ts) as HTML: Markdown text, tool calls as cards that
 * expand, compaction summaries marked, each turn with its time and model call; images as
 * thumbnails and other files as links (name, type, size), and the files `send_file` sent
 * into a web chat as links under their call.
 */
import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import type { SentFile } from "../agents/media/store.js";
import type {
  TranscriptCall,
  TranscriptEntry,
  TranscriptFile,
  TranscriptToolCall,
} from "../agents/transcript.js";
import { assertNever } from "../base/assert-never.js";
import { formatBytes } from "../base/content.js";
import { truncate } from "../base/printable.js";
import { formatTime } from "../base/time-zone.js";
import type { Job } from "../ports/index.js";
import { renderMarkdown } from "./markdown.js";
import { showsInline } from "./session-files.js";

/** Characters of a tool's input in the card's one-line summary. */
const INPUT_SUMMARY = 80;

/** Where the files of the session are served, and what `send_file` sent, by call id. */
export interface TranscriptFiles {
  url: (sha256: string) => string;
  sent: ReadonlyMap<string, SentFile>;
}

/**
 * Every entry, then the jobs of the session's key not finished yet; `streamOf` names where
 * a job's reply streams while it is written (the live script fills it in), `controlsOf`
 * what a pending job offers (the Stop of a reply being written).
 */
export function TranscriptView(props: {
  entries: TranscriptEntry[];
  pending: Job[];
  streamOf?: ((job: Job) => string) | undefined;
  controlsOf?: ((job: Job) => Child) | undefined;
  files: TranscriptFiles;
}) {
  return (
    <>
      {props.entries.length === 0 && props.pending.length === 0 ? (
        <p class="muted">no messages yet</p>
      ) : null}
      {props.entries.map((entry) => (
        <Entry entry={entry} files={props.files} />
      ))}
      {props.pending.map((job) => (
        <div class="msg user pending" data-job={job.id}>
          <div class="who">
            {job.state === "running" ? "the agent is working on it…" : `${job.state}…`}
          </div>
          {job.checkpointed ? null : raw(renderMarkdown(job.message))}
          {job.checkpointed || job.attachments.length === 0 ? null : (
            <p class="muted">
              with {job.attachments.map((file) => file.name ?? file.kind).join(", ")}
            </p>
          )}
          {props.streamOf ? <div class="reply" data-stream={props.streamOf(job)} /> : null}
          {props.controlsOf?.(job) ?? null}
        </div>
      ))}
    </>
  );
}

function Entry(props: { entry: TranscriptEntry; files: TranscriptFiles }) {
  const { entry, files } = props;
  switch (entry.kind) {
    case "user":
      return (
        <div class="msg user">
          <Who text="user" at={entry.at} />
          {entry.files.map((file) => (
            <MediaFile file={file} url={files.url(file.media.sha256)} />
          ))}
          {raw(renderMarkdown(entry.text))}
        </div>
      );
    case "assistant":
      return (
        <div class="msg assistant">
          <Who text="assistant" at={entry.at} call={entry.call} />
          {entry.files.map((file) => (
            <MediaFile file={file} url={files.url(file.media.sha256)} />
          ))}
          {raw(renderMarkdown(entry.text))}
          {entry.toolCalls.map((call) => {
            const sent = files.sent.get(call.id);
            return (
              <>
                <ToolCard call={call} />
                {sent ? <SentFileLink file={sent} url={files.url(sent.sha256)} /> : null}
              </>
            );
          })}
        </div>
      );
    case "compaction":
      return (
        <div class="compaction">
          <Who
            text={`Compacted: this summary stands for the ${entry.replaces} messages above`}
            at={entry.at}
            call={entry.call}
          />
          {raw(renderMarkdown(entry.summary))}
        </div>
      );
    case "prune":
      return (
        <p class="muted">
          {formatTime(entry.at)}: older tool outputs pruned (the last {entry.keepTurns} turns keep
          theirs)
        </p>
      );
    case "job_end":
      return (
        <p class={entry.outcome === "cancel" ? "bad" : "muted"}>
          {formatTime(entry.at)}: job ended by a tool ({entry.outcome}): {entry.message}
        </p>
      );
    case "memory_save":
      return (
        <div class="compaction">
          <Who
            text={`Before the summary: ${entry.inputs.length} memory calls`}
            at={entry.at}
            call={entry.call}
          />
          {entry.inputs.map((input) => (
            <p class="muted">memory {truncate(JSON.stringify(input), INPUT_SUMMARY)}</p>
          ))}
        </div>
      );
    case "call":
      return (
        <p class="muted">
          {formatTime(entry.at)}: model call without a stored message (
          <CallText call={entry.call} />)
        </p>
      );
    default:
      return assertNever(entry, "transcript entry");
  }
}

/** An image as a thumbnail that opens it; a PDF as a link; each with name, type and size. */
function MediaFile(props: { file: TranscriptFile; url: string }) {
  const { file, url } = props;
  const { name, bytes } = file.media;
  const about = file.type === "image" ? `${file.width}×${file.height} px` : `${file.pages} pages`;
  return (
    <FileCard
      url={url}
      name={name}
      about={`${file.mediaType}, ${formatBytes(bytes)}, ${about}`}
      thumbnail={file.type === "image"}
    />
  );
}

/** A file `send_file` sent into the web chat: its link (a thumbnail for an image), and caption. */
function SentFileLink(props: { file: SentFile; url: string }) {
  const { file, url } = props;
  return (
    <div class="sent-file">
      <FileCard
        url={url}
        name={file.name}
        about={`${file.mediaType}, ${formatBytes(file.bytes)}`}
        thumbnail={showsInline(file.mediaType)}
      />
      {file.caption ? <p>{file.caption}</p> : null}
    </div>
  );
}

function FileCard(props: { url: string; name: string; about: string; thumbnail: boolean }) {
  const { url, name, about } = props;
  return (
    <figure class="file">
      {props.thumbnail ? (
        <a href={url} target="_blank" rel="noopener">
          <img class="thumbnail" src={url} alt={name} loading="lazy" />
        </a>
      ) : null}
      <figcaption>
        <a href={url} target="_blank" rel="noopener" download={props.thumbnail ? undefined : name}>
          {name}
        </a>{" "}
        <span class="muted">({about})</span>
      </figcaption>
    </figure>
  );
}

function Who(props: { text: string; at: number; call?: TranscriptCall | null }) {
  return (
    <div class="who">
      {props.text} · {formatTime(props.at)}
      {props.call ? (
        <>
          {" "}
          · <CallText call={props.call} />
        </>
      ) : null}
    </div>
  );
}

function CallText(props: { call: TranscriptCall }) {
  const { model, usage, batch } = props.call;
  return (
    <>
      {model}, {usage.input + usage.cacheRead + usage.cacheWrite} in / {usage.output} out tokens
      {batch ? ", batch" : ""}
    </>
  );
}

function ToolCard(props: { call: TranscriptToolCall }) {
  const { call } = props;
  const state = call.result === null ? " (running…)" : call.isError ? " (error)" : "";
  return (
    <details class={`tool${call.isError ? " error" : ""}`}>
      <summary>
        {call.name} {truncate(JSON.stringify(call.input) ?? "", INPUT_SUMMARY)}
        {state}
      </summary>
      <div class="muted">input</div>
      <pre>{JSON.stringify(call.input, null, 2)}</pre>
      <div class="muted">result</div>
      {call.result === null ? (
        <p class="muted">no result yet</p>
      ) : (
        <pre>
          {call.result}
          {call.resultChars > call.result.length
            ? `\n[${call.resultChars - call.result.length} more characters; picklebot sessions show prints them]`
            : ""}
        </pre>
      )}
    </details>
  );
}
