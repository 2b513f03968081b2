import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/base/log.js";
import {
  REDACTED,
  redactError,
  redactSecrets,
  redactStrings,
  SecretStreamRedactor,
} from "../../src/base/redact.js";
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

  it("catches the secret URL-encoded and in base64, alone or inside longer base64", () => {
    const secret = "p@ss/word+42";
    expect(redactSecrets(`url ${encodeURIComponent(secret)} end`, [secret])).toBe(
      `url ${REDACTED} end`,
    );
    for (const text of [secret, `${secret}\n`, `x${secret}`, `xy${secret}\n`]) {
      for (const encoding of ["base64", "base64url"] as const) {
        const encoded = Buffer.from(text).toString(encoding);
        expect(redactSecrets(encoded, [secret])).toContain(REDACTED);
      }
    }
  });

  it("redactStrings redacts every string of a tool input or message content", () => {
    const content = [{ type: "tool_use", id: "t1", input: { text: `token ${TOKEN}`, n: 1 } }];
    expect(redactStrings(content, [TOKEN])).toEqual([
      { type: "tool_use", id: "t1", input: { text: `token ${REDACTED}`, n: 1 } },
    ]);
    expect(content[0]?.input.text).toContain(TOKEN);
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

describe("SecretStreamRedactor", () => {
  it("never passes on a secret split across pieces, and ends with all the text", () => {
    const shown: string[] = [];
    const stream = new SecretStreamRedactor([TOKEN], (text) => shown.push(text));
    const text = `the token is ${TOKEN}, and 1234 is not`;
    for (let at = 0; at < text.length; at += 5) stream.write(text.slice(at, at + 5));
    stream.end();
    expect(shown.join("")).toBe(`the token is ${REDACTED}, and 1234 is not`);
    for (let end = 1; end <= shown.length; end++) {
      expect(shown.slice(0, end).join("")).not.toContain(TOKEN.slice(0, 10));
    }
  });
});

describe("createLogger with secrets", () => {
  it("takes the configured secrets out of every line, under any key", () => {
    let written = "";
    const destination = new Writable({
      write(chunk, _encoding, done) {
        written += String(chunk);
        done();
      },
    });
    const logger = createLogger({ destination, pretty: false, secrets: [TOKEN] });
    logger.info({ output: `bash printed ${TOKEN}` }, `reply was ${TOKEN}`);
    expect(written).toContain(REDACTED);
    expect(written).not.toContain(TOKEN);
  });
});
