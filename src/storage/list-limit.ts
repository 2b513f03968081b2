/** The limit a list call uses: the caller's as a whole number of at least 0, or the default. */
export function listLimit(requested: number | undefined, fallback: number): number {
  return Math.max(0, Math.floor(requested ?? fallback));
}
