/** Telling a lost PostgreSQL connection from a failed statement, without loading pg. */

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

/** True when `error` is a lost or refused connection (worth retrying on a new one). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
    error.message,
  );
}
