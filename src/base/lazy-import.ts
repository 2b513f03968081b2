/**
 * A module imported on first use and then shared: `lazily(() => import("openai"))`. The
 * import stays a literal in its caller, so a command that never calls it never loads the
 * library (test/structure/lazy-imports.test.ts).
 */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load();
    return loading;
  };
}
