/**
 * What every section of the dashboard handles with: the guard that answers 403 to a POST
 * in read-only mode, the not-found page, the notice after an action (signed, so only the
 * dashboard can write one), form fields and times in a named zone. The markup pieces are
 * the frame's, in ../components.tsx.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { basePath } from "hono/route";
import { zoneFormatter } from "../../base/time-zone.js";
import type { DashboardEnv } from "../../http/env.js";

/** The request's context, as every section handler gets it. */
export type SectionContext = Context<DashboardEnv>;

/** Answers 403 to any request but GET/HEAD in read-only mode, before a handler runs. */
export const refuseWritesWhenReadOnly: MiddlewareHandler<DashboardEnv> = async (c, next) => {
  if (c.req.method === "GET" || c.req.method === "HEAD" || !c.get("readOnly")) return next();
  c.status(403);
  return c.render(
    <p class="notice error" role="alert">
      This dashboard is read-only (http.read_only: true in picklebot.yaml): nothing can be changed
      from here.
    </p>,
    { title: "Read-only" },
  );
};

/** A page saying what was not found, with status 404 and a link back to the section. */
export function notFoundPage(c: SectionContext, sentence: string, back: string) {
  c.status(404);
  return c.render(
    <section class="card">
      <p class="notice error" role="alert">
        {sentence}
      </p>
      <p>
        <a href={basePath(c)}>Back to {back}</a>
      </p>
    </section>,
    { title: "Not found" },
  );
}

/**
 * Redirects (303) to `path` of the section after an action, with its outcome in `?notice=`
 * and a MAC of it under the CSRF token (`&mac=`), so that only the dashboard itself can put
 * a sentence on its pages: a link crafted elsewhere shows no notice.
 */
export function redirectWithNotice(c: SectionContext, path: string, notice: string) {
  const query = new URLSearchParams({ notice, mac: noticeMac(c, notice) });
  return c.redirect(`${basePath(c)}${path}?${query}`, 303);
}

/** The notice of the redirect that led here, when the dashboard wrote it; else undefined. */
export function noticeOf(c: SectionContext): string | undefined {
  const notice = c.req.query("notice");
  const mac = c.req.query("mac") ?? "";
  if (notice === undefined) return undefined;
  const expected = Buffer.from(noticeMac(c, notice));
  const given = Buffer.from(mac);
  return given.length === expected.length && timingSafeEqual(given, expected) ? notice : undefined;
}

function noticeMac(c: SectionContext, notice: string): string {
  return createHmac("sha256", c.get("csrfToken")).update(notice).digest("base64url");
}

/** A field of a posted form as text (empty when absent or a file). */
export async function formField(c: SectionContext, name: string): Promise<string> {
  const value = (await c.req.parseBody())[name];
  return typeof value === "string" ? value.trim() : "";
}

const TABLE_TIME: Intl.DateTimeFormatOptions = {
  weekday: "short",
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
  hour: "2-digit",
  minute: "2-digit",
  hourCycle: "h23",
  timeZoneName: "short",
};

/** `Wed 2025-01-15 08:00 CET`: an instant on the wall clock of `timeZone`, zone named. */
export function formatInZone(epochMs: number | null, timeZone: string): string {
  if (epochMs === null) return "—";
  const parts = zoneFormatter("en-GB", timeZone, TABLE_TIME).formatToParts(epochMs);
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    parts.find((entry) => entry.type === type)?.value ?? "";
  return `${part("weekday")} ${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")} ${part("timeZoneName")}`;
}
