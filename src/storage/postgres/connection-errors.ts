/**
 * Telling a lost PostgreSQL connection from a failed statement, without loading pg; and
 * the {@link StorageUnavailableError} a lost one becomes where pg reports it.
 */
import { StorageUnavailableError } from "../../base/errors.js";

/** SQLSTATE classes and socket errors that mean the connection, not the statement, failed. */
const CONNECTION_CODES = new Set([
  "57P01", // admin_shutdown: pg_terminate_backend, or the server stopping
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: the server is starting
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
]);

/**
 * True when `error` is a lost or refused connection (worth retrying on a new one): pg's
 * own error, or the {@link StorageUnavailableError} it was made into.
 */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof StorageUnavailableError) return error.context.backend === "postgres";
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
    error.message,
  );
}

/** `thrown`, or the {@link StorageUnavailableError} wrapping it when it is a lost connection. */
export function classifyPgError(thrown: unknown): unknown {
  if (thrown instanceof StorageUnavailableError || !isConnectionError(thrown)) return thrown;
  const error = thrown as Error & { code?: unknown };
  return new StorageUnavailableError(error.message, {
    cause: error,
    context: { backend: "postgres", code: String(error.code ?? "") },
  });
}
