import type { Frontend, ReplyContext, ReplyStream, ReplyTarget } from "../ports/index.js";
import { SilentFrontend } from "./silent.js";

/**
 * Resolves a job's plain {@link ReplyTarget} to the live frontend that serves its kind.
 * A target whose frontend is not running (a disabled bus on a single server) falls back
 * to silent, so the job still runs and its reply is kept in history. (In a cluster, the
 * chat wing registers a deferred frontend for every platform not enabled here.)
 */
export class FrontendRegistry {
  readonly #byKind = new Map<ReplyTarget["kind"], Frontend>();
  readonly #fallback = new SilentFrontend();

  /** Registers a frontend for its kind, replacing any earlier one. */
  register(frontend: Frontend): void {
    this.#byKind.set(frontend.kind, frontend);
  }

  /** Removes the frontend of a kind (its bus stopped). */
  unregister(kind: ReplyTarget["kind"]): void {
    this.#byKind.delete(kind);
  }

  /** Whether a live frontend serves this kind. */
  has(kind: ReplyTarget["kind"]): boolean {
    return this.#byKind.has(kind);
  }

  /** Opens a reply on the frontend serving `target`. */
  openReply(target: ReplyTarget, context?: ReplyContext): ReplyStream {
    return (this.#byKind.get(target.kind) ?? this.#fallback).openReply(target, context);
  }
}
