// Did-you-mean for the names an adapter gives: a misspelt method or field is
// refused with the name it most likely meant, not ignored (a misspelt
// `rewnid` would otherwise silently leave `fork` out of the operations).

/** The name of `known` nearest to `name`, if it is a likely typo of it. */
export function closest(name, known) {
  let best = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? best : null;
}

/** Levenshtein distance. */
function distance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}
