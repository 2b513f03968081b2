/** Small pieces every dashboard page uses: action buttons, notes, job states. */
import type { Child } from "hono/jsx";
import { useRequestContext } from "hono/jsx-renderer";
import { describeJobState } from "../../base/errors.js";
import type { Job } from "../../ports/index.js";
import { CSRF_FIELD, type DashboardEnv } from "./env.js";

/**
 * A POST form with one button and the CSRF token; renders nothing in read-only mode, so
 * a read-only dashboard shows no action at all.
 */
export function ActionButton(props: { action: string; label: string; danger?: boolean }) {
  const c = useRequestContext<DashboardEnv>();
  if (c.get("readOnly")) return null;
  return (
    <form class="inline" method="post" action={props.action}>
      <input type="hidden" name={CSRF_FIELD} value={c.get("csrfToken")} />
      <button type="submit" class={props.danger ? "danger" : undefined}>
        {props.label}
      </button>{" "}
    </form>
  );
}

/** A note at the top of a page: what an action did, or why it was refused. */
export function Flash(props: { kind: "good" | "bad"; text: string; back?: string }) {
  return (
    <p class={`card ${props.kind}`} role={props.kind === "bad" ? "alert" : "status"}>
      {props.text} {props.back ? <a href={props.back}>Back</a> : null}
    </p>
  );
}

/** A job's state, with what it waits for when it waits. */
export function JobStateBadge(props: { job: Job }) {
  const { job } = props;
  return (
    <span class={`state-${job.state}`} data-state={job.state}>
      {describeJobState(job)}
    </span>
  );
}

/**
 * A card with a POST form, its title and the CSRF token; with `htmx`, it posts in place
 * and swaps `target` with the answer. Renders nothing in read-only mode.
 */
export function PostForm(props: {
  action: string;
  title: string;
  htmx?: { target: string };
  children?: Child;
}) {
  const c = useRequestContext<DashboardEnv>();
  if (c.get("readOnly")) return null;
  const htmx = props.htmx
    ? {
        "hx-post": props.action,
        "hx-target": props.htmx.target,
        "hx-swap": "outerHTML",
        "hx-on::after-request": "if (event.detail.successful) this.reset()",
      }
    : {};
  return (
    <form class="card" method="post" action={props.action} {...htmx}>
      <h2>{props.title}</h2>
      <input type="hidden" name={CSRF_FIELD} value={c.get("csrfToken")} />
      {props.children}
    </form>
  );
}
