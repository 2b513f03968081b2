/**
 * The host's time zone, the default of `timezone`, read in a fresh node process as the
 * server would read it at start (the zone a process sees is fixed when it starts).
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const MODULE = new URL("../../dist/base/time-zone.js", import.meta.url).href;

/** What `hostTimeZone()` says, and what `Intl` says, under `TZ=<tz>` (unset when undefined). */
function zonesUnder(tz: string | undefined): { host: string; intl: string } {
  const env = { ...process.env };
  if (tz === undefined) delete env.TZ;
  else env.TZ = tz;
  const script = `import(${JSON.stringify(MODULE)}).then((m) => console.log(JSON.stringify({ host: m.hostTimeZone(), intl: Intl.DateTimeFormat().resolvedOptions().timeZone })))`;
  const result = spawnSync(process.execPath, ["-e", script], { env, encoding: "utf8" });
  expect(result.stderr).toBe("");
  return JSON.parse(result.stdout);
}

describe("the host's time zone", () => {
  it("is the zone TZ names, as Intl reads it", () => {
    expect(zonesUnder("Europe/Berlin")).toEqual({ host: "Europe/Berlin", intl: "Europe/Berlin" });
    expect(zonesUnder("America/Argentina/Buenos_Aires").host).toBe(
      "America/Argentina/Buenos_Aires",
    );
  });

  it("calls every name of UTC UTC", () => {
    for (const tz of ["UTC", "Etc/UTC", "Zulu"]) expect(zonesUnder(tz).host).toBe("UTC");
  });

  it("is the host's own zone when TZ names none, so a bad TZ never reaches a cron", () => {
    const own = zonesUnder(undefined).host;
    for (const tz of ["Nowhere/Land", "CET-1CEST", ":/etc/localtime", "posix/Europe/Berlin"]) {
      const { host } = zonesUnder(tz);
      expect(host, `TZ=${tz}`).toBe(own);
      expect(() => new Intl.DateTimeFormat("en", { timeZone: host })).not.toThrow();
    }
  });

  it("without TZ is the host's, the one Intl finds", () => {
    const { host, intl } = zonesUnder(undefined);
    expect(host).toBe(intl === "Etc/UTC" ? "UTC" : intl);
  });
});
