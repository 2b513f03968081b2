/**
 * The replies of web chats as they are written: the frontend of `silent` replies, which
 * shows nothing anywhere else, also hands each reply's text so far to the browsers
 * watching that job (`GET /sessions/:id/stream?job=<id>`). Only jobs that run in this
 * process stream; elsewhere (another instance) the page shows the reply once stored.
 */
import type { Frontend, ReplyContext, ReplyStream, ReplyTarget } from "../ports/index.js";

/** What a watcher of a reply hears. */
export type ReplyNews =
  | { kind: "text"; text: string }
  | { kind: "tool"; name: string; summary: string }
  | { kind: "end" };

type Watcher = (news: ReplyNews) => void;

/** The `silent` frontend, with watchers per job. */
export class WebReplies implements Frontend {
  readonly kind = "silent";
  readonly #watchers = new Map<string, Set<Watcher>>();
  /** The text so far of replies in progress, for a watcher that comes late. */
  readonly #latest = new Map<string, string>();

  openReply(_target: ReplyTarget, context: ReplyContext = {}): ReplyStream {
    const jobId = context.jobId;
    const tell = (news: ReplyNews) => {
      if (jobId === undefined) return;
      if (news.kind === "text") this.#latest.set(jobId, news.text);
      if (news.kind === "end") this.#latest.delete(jobId);
      for (const watcher of this.#watchers.get(jobId) ?? []) watcher(news);
    };
    return {
      typing() {},
      update: (text) => tell({ kind: "text", text }),
      toolCall: (name, summary) => tell({ kind: "tool", name, summary }),
      finish: async () => tell({ kind: "end" }),
      fail: async () => tell({ kind: "end" }),
      close: () => tell({ kind: "end" }),
    };
  }

  /** Calls `watcher` with the reply's text so far (if any) and then every change. */
  watch(jobId: string, watcher: Watcher): () => void {
    const latest = this.#latest.get(jobId);
    if (latest !== undefined) watcher({ kind: "text", text: latest });
    let set = this.#watchers.get(jobId);
    if (!set) {
      set = new Set();
      this.#watchers.set(jobId, set);
    }
    set.add(watcher);
    return () => {
      set.delete(watcher);
      if (set.size === 0) this.#watchers.delete(jobId);
    };
  }
}
