/** Loggers for tests: a real pino logger whose lines the test can read. */
import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/base/log.js";

/** One parsed log line. */
export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A real pino logger whose JSON lines are kept for assertions; `secrets` as the server's. */
export function recordingLogger(secrets: readonly string[] = []): {
  logger: Logger;
  lines: LogLine[];
} {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) {
        if (line.trim() !== "") lines.push(JSON.parse(line) as LogLine);
      }
      done();
    },
  });
  return { logger: createLogger({ destination, pretty: false, level: "info", secrets }), lines };
}
