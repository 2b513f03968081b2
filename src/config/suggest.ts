/**
 * "Did you mean …?" for misspelt keys, field names and ids.
 */

/** Edit distance (insertions, deletions, substitutions) between two strings. */
export function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The candidate closest to `word`, or undefined when none is close enough to be a
 * plausible typo (more than a third of the word would have to change).
 */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  const lowered = word.toLowerCase();
  const limit = Math.max(2, Math.ceil(word.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = levenshtein(lowered, candidate.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) {
      best = { candidate, distance };
    }
  }
  return best?.candidate;
}

/** `did you mean "x"?` when a close candidate exists, else undefined. */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const match = closestMatch(word, candidates);
  return match === undefined ? undefined : `did you mean "${match}"?`;
}
