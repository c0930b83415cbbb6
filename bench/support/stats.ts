// Percentiles and the number formats of the results table.

/** Nearest-rank percentile of already sorted values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Sorted copy without the entries that never arrived (NaN). */
export function sortedSamples(values: number[]): Float64Array {
  return Float64Array.from(values.filter((v) => !Number.isNaN(v))).sort();
}

export const rate = (count: number, elapsedMs: number) => (count * 1_000) / elapsedMs;
export const fmtRate = (perSecond: number) => `${Math.round(perSecond).toLocaleString('en-US')} msgs/s`;
export const fmtMs = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
export const fmtRatio = (ratio: number) => `${ratio.toFixed(2)}×`;
export const fmtCount = (n: number) => n.toLocaleString('en-US');
