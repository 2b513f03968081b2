import { createRequire } from "node:module";
import { type DestinationStream, type Logger, pino } from "pino";
import type PinoPretty from "pino-pretty";
import { printableDeep } from "./printable.js";
import { REDACTED, SECRET_KEYS, secretRedactor } from "./redact.js";

export type { Logger };

/** Keys whose values never reach a log line. */
const SECRET_PATHS = SECRET_KEYS.map((key) => `*.${key}`);

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** (Default: `info`, or `PICKLEBOT_LOG_LEVEL`) */
  level?: string;
  /** Readable lines instead of JSON. (Default: whether stdout is a TTY) */
  pretty?: boolean;
  /** Where lines go. (Default: stdout) */
  destination?: NodeJS.WritableStream;
  /**
   * Values taken out of every line, wherever they appear in it (`secretValues(config)`).
   * (Default: none; keys named like secrets are censored anyway)
   */
  secrets?: readonly string[];
}

/**
 * A pino logger: readable lines on a TTY, JSON otherwise, secrets redacted: the values of
 * keys named like secrets, and `options.secrets` anywhere in a line.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.PICKLEBOT_LOG_LEVEL ?? "info";
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  const redact = { paths: SECRET_PATHS, censor: REDACTED };
  const secrets = options.secrets ?? [];
  const hooks = { streamWrite: secretRedactor(secrets) };
  if (pretty) {
    return pino({ level, redact, hooks }, prettyDestination(options.destination ?? process.stdout));
  }
  return options.destination
    ? pino({ level, redact, hooks }, options.destination)
    : pino({ level, redact, hooks });
}

/** A logger that discards everything (tests, one-shot CLI commands). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** Fields of a log record whose line feeds are kept (a stack trace reads better so). */
const MULTILINE_FIELDS = new Set(["stack"]);

/**
 * Readable lines for a terminal, with every control character in the record escaped
 * first: chat names and model text in a log line cannot drive the owner's terminal.
 */
function prettyDestination(output: NodeJS.WritableStream): DestinationStream {
  // Loaded only for a terminal: JSON logging does not need pino-pretty.
  const { prettyFactory } = createRequire(import.meta.url)("pino-pretty") as typeof PinoPretty;
  const prettify = prettyFactory({
    colorize: true,
    translateTime: "HH:MM:ss",
    ignore: "pid,hostname",
  });
  return {
    write(line: string) {
      output.write(prettify(printableDeep(JSON.parse(line), MULTILINE_FIELDS)));
    },
  };
}
