/** Defaults of `StreamRetention`. */
export const RETENTION_DEFAULTS = {
  safe: false,
  intervalMs: 10_000,
};
