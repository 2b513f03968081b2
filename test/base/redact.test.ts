import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/base/log.js";
import {
  REDACTED,
  redactError,
  redactSecrets,
  redactStrings,
  SecretStreamRedactor,
  secretShapeIn,
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

describe("secretShapeIn", () => {
  it("names what looks like a credential", () => {
    const secrets = [
      "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
      "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
      "AKIAABCDEFGHIJKLMNOP",
      "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
      "password: hunter22",
      "the api key = abc123xyz",
      "my token is aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF",
      "postgres://bot:pw@db/picklebot",
      "-----BEGIN OPENSSH PRIVATE KEY-----",
      "it was [redacted]",
    ];
    for (const text of secrets) expect(secretShapeIn(text), text).not.toBeNull();
    expect(secretShapeIn("ghp_abcdefghijklmnopqrstuvwxyz0123456789")).toBe("a GitHub token");
    expect(secretShapeIn("use hunter2hunter2 there", ["hunter2hunter2"])).toBe(
      "a secret of this workspace's configuration",
    );
  });

  it("lets ordinary facts through, the words password and token included", () => {
    const facts = [
      "My cat is called Miso",
      "The token is expired",
      "Dentist appointment on Tuesday at 10:30",
      "Commit 3f2a9c1d4b5e6f708192a3b4c5d6e7f8091a2b3c fixed it",
      "Prefers https://example.com/some/long-path-name-here",
      "The password is in the blue notebook",
      "Uses TypeScript_and_JavaScript_and_Rust_for_projects",
    ];
    for (const text of facts) expect(secretShapeIn(text), text).toBeNull();
  });
});
