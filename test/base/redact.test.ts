import { describe, expect, it } from "vitest";
import { REDACTED, redactError, redactSecrets } from "../../src/base/redact.js";
import { redactUrl } from "../../src/storage/postgres/database.js";

const TOKEN = "123456789:TEST-fake-telegram-token";

describe("redactSecrets", () => {
  it("replaces every occurrence of each secret by one marker", () => {
    const text = `GET https://api.telegram.org/bot${TOKEN}/getMe failed (${TOKEN})`;
    expect(redactSecrets(text, [TOKEN, undefined])).toBe(
      `GET https://api.telegram.org/bot${REDACTED}/getMe failed (${REDACTED})`,
    );
    expect(REDACTED).toBe("[redacted]");
  });

  it("hides the password of any URL in the text", () => {
    expect(redactSecrets("cannot reach postgres://bot:s3cr%40t@db:5432/picklebot now")).toBe(
      "cannot reach postgres://bot:[redacted]@db:5432/picklebot now",
    );
    expect(redactSecrets("postgres://bot@db/picklebot and https://example.com/a:b")).toBe(
      "postgres://bot@db/picklebot and https://example.com/a:b",
    );
  });

  it("leaves short 'secrets' alone, since they would match ordinary words", () => {
    expect(redactSecrets("a key of sk", ["sk", ""])).toBe("a key of sk");
  });

  it("redactUrl shows a database URL without its password", () => {
    expect(redactUrl("postgres://bot:hunter2@db/picklebot")).toBe(
      "postgres://bot:[redacted]@db/picklebot",
    );
    expect(redactUrl("not a url")).toBe("(an unparsable URL)");
  });
});

describe("redactError", () => {
  it("returns a clean error as is, and a copy without the secret otherwise", () => {
    const clean = new Error("connection refused");
    expect(redactError(clean, [TOKEN])).toBe(clean);
    const leaky = new TypeError(`fetch failed for /bot${TOKEN}/getUpdates`);
    const redacted = redactError(leaky, [TOKEN]);
    expect(redacted.name).toBe("TypeError");
    expect(redacted.message).toBe(`fetch failed for /bot${REDACTED}/getUpdates`);
    expect(redacted.stack).not.toContain(TOKEN);
  });
});
