/**
 * The pieces every dashboard page renders with, one set for the frame and the sections:
 * action forms (CSRF token, nothing in read-only mode), notices, state badges and list
 * tables. Markup uses only the classes the stylesheet (static/css.ts) styles: `.card`,
 * `.notice` (`.error`), `.badge.state-<state>`, `.actions`, `button.primary`,
 * `button.danger`, `.scroll-x` around a `table.list`.
 */
import type { Child } from "hono/jsx";
import { useRequestContext } from "hono/jsx-renderer";
import { describeJobState } from "../base/errors.js";
import { CSRF_FIELD, type DashboardEnv } from "../http/env.js";
import type { Job } from "../ports/index.js";

/**
 * A POST form to `action` with the CSRF field and the hidden `fields`; nothing at all in
 * read-only mode, so a read-only dashboard shows no action. `children` are its visible
 * fields and buttons.
 */
export function ActionForm(props: {
  action: string;
  fields?: Record<string, string>;
  children?: Child;
}) {
  const c = useRequestContext<DashboardEnv>();
  if (c.get("readOnly")) return null;
  return (
    <form method="post" action={props.action} class="actions">
      <input type="hidden" name={CSRF_FIELD} value={c.get("csrfToken")} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      {props.children}
    </form>
  );
}

/**
 * The column of Revoke buttons a list of grants or users ends with, posting `fields` of
 * the row to `action`; none in read-only mode.
 */
export function revokeColumn<Row>(
  c: { get(key: "readOnly"): boolean },
  action: string,
  fields: (row: Row) => Record<string, string>,
): Column<Row>[] {
  if (c.get("readOnly")) return [];
  return [
    {
      label: "Actions",
      cell: (row) => (
        <ActionForm action={action} fields={fields(row)}>
          <button type="submit" class="danger">
            Revoke
          </button>
        </ActionForm>
      ),
    },
  ];
}

/**
 * A card with a POST form, its title and the CSRF token; with `htmx`, it posts in place
 * and swaps `target` with the answer. Renders nothing in read-only mode.
 */
export function PostForm(props: {
  action: string;
  title: string;
  htmx?: { target: string };
  /** It sends files: posted as `multipart/form-data`. (Default: a plain form) */
  upload?: boolean;
  children?: Child;
}) {
  const c = useRequestContext<DashboardEnv>();
  if (c.get("readOnly")) return null;
  const htmx = props.htmx
    ? {
        "hx-post": props.action,
        "hx-target": props.htmx.target,
        "hx-swap": "outerHTML",
        "data-reset-on-success": "",
      }
    : {};
  const upload = props.upload
    ? { enctype: "multipart/form-data" as const, "hx-encoding": "multipart/form-data" }
    : {};
  return (
    <form class="card" method="post" action={props.action} {...htmx} {...upload}>
      <h2>{props.title}</h2>
      <input type="hidden" name={CSRF_FIELD} value={c.get("csrfToken")} />
      {props.children}
    </form>
  );
}

/**
 * A state as a badge the stylesheet colours: `<span class="badge state-done">done</span>`;
 * `label` shows more than the state (what a waiting job waits for).
 */
export function StateBadge(props: { state: string; label?: string }) {
  const slug = props.state.replace(/[^a-z]+/g, "-").replace(/-$/, "");
  return (
    <span class={`badge state-${slug}`} data-state={props.state}>
      {props.label ?? props.state}
    </span>
  );
}

/** A job's state, with what it waits for when it waits. */
export function JobStateBadge(props: { job: Job }) {
  return <StateBadge state={props.job.state} label={describeJobState(props.job)} />;
}

/** A column of a {@link ListTable}: its heading (also the label on a phone) and its cell. */
export interface Column<Row> {
  label: string;
  cell: (row: Row) => Child;
  /** A class of the column's cells (`bad` for errors). */
  class?: string;
  /** Numbers: heading and cells aligned right. */
  numeric?: boolean;
}

/**
 * A list as a table (`table.list` in `.scroll-x`), or `empty` when there are no rows; on a
 * phone each row becomes a card whose cells carry their column's label. `total` is a last
 * row set apart (a sum).
 */
export function ListTable<Row>(props: {
  columns: Column<Row>[];
  rows: readonly Row[];
  empty: string;
  total?: Row;
  rowAttributes?: (row: Row) => Record<string, string>;
}) {
  if (props.rows.length === 0) return <p class="muted">{props.empty}</p>;
  const cells = (row: Row) =>
    props.columns.map((column) => (
      <td data-label={column.label} class={cellClass(column)}>
        {column.cell(row)}
      </td>
    ));
  return (
    <div class="scroll-x">
      <table class="list">
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th class={column.numeric ? "number" : undefined}>{column.label}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr {...(props.rowAttributes?.(row) ?? {})}>{cells(row)}</tr>
          ))}
        </tbody>
        {props.total === undefined ? null : (
          <tfoot>
            <tr>{cells(props.total)}</tr>
          </tfoot>
        )}
      </table>
    </div>
  );
}

function cellClass(column: Pick<Column<never>, "class" | "numeric">): string | undefined {
  const classes = [column.class, column.numeric ? "number" : undefined].filter(Boolean);
  return classes.length > 0 ? classes.join(" ") : undefined;
}
