/**
 * A prom-client `Registry` as this library's public options see it: described by shape, so the
 * published types compile without prom-client installed (it is an optional peer). Any
 * `new Registry()` or prom-client's global `register` fits.
 */
export interface PromRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
  getSingleMetric(name: string): unknown;
}
