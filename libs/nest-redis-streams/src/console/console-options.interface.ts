import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import type { FieldPairs } from '../operations/entries.js';
import type { StreamConfig } from '../operations/stream-operations-options.interface.js';

/** What a request asks for: reading figures and payloads, or changing something. */
export type ConsoleAccess = 'read' | 'write';

/**
 * A function guard: true (or the caller's name, recorded in the audit stream) lets the request
 * through, false answers 403. It sees reads too; check `access` to allow viewers but not writers.
 */
export type ConsoleGuardFunction = (request: unknown, access: ConsoleAccess) => boolean | string | Promise<boolean | string>;

/** A Nest guard (class or instance), or a function of the request. */
export type ConsoleGuard = CanActivate | Type<CanActivate> | ConsoleGuardFunction;

/** Rewrites an entry's fields before they leave the app (mask card numbers, drop secrets). */
export type ConsoleRedactor = (fields: FieldPairs, where: { stream: string; group?: string; id: string }) => FieldPairs;

/** Options of `RedisStreamsConsoleModule.forRoot`. */
export interface RedisStreamsConsoleOptions {
  /**
   * Where the page is mounted, below the app's global prefix; the API is under `<path>/api`.
   * @default 'streams-console'
   */
  path?: string;
  /** The Redis to inspect (its own connection). @default process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' */
  connection?: RedisConnectionOptions;
  /** The streams shown (with dead-letter stream, retention, per-stream `readOnly`); all streams with groups when absent. */
  streams?: Array<string | StreamConfig>;
  /** No writes at all: write endpoints answer 405 and the page shows no action. @default false */
  readOnly?: boolean;
  /**
   * Who may use the console. Without a guard, the console is read-only (writes answer 403 and the
   * page says why): actions on streams need someone to be accountable for them.
   */
  guard?: ConsoleGuard;
  /**
   * The name recorded in the audit stream for a request that passed the guard.
   * @default the guard's string, else `request.user` (its username, name, email, id or sub), else 'anonymous'
   */
  identify?: (request: unknown) => string;
  /** Applied to every payload the API returns (pending entries, entries, dead letters). */
  redact?: ConsoleRedactor;
  /**
   * Secret the CSRF token is derived from; give every instance behind one load balancer the same.
   * @default random per process
   */
  csrfSecret?: string;
  /** How often the page refreshes the overview; concurrent viewers share one read. @default 2000 */
  refreshMs?: number;
  /**
   * Audit stream of every write (its intent before it runs, then its outcome); refused requests
   * go to `<auditStream>:refused`. @default 'nrs:console:audit'
   */
  auditStream?: string;
  /** About how many writes the audit stream keeps (`MAXLEN ~`); refusals never push one out. @default 10000 */
  auditMaxLen?: number;
  /** About how many refused requests `<auditStream>:refused` keeps (`MAXLEN ~`). @default 1000 */
  auditRefusalsMaxLen?: number;
  /** A group whose oldest pending entry is idle this long gets the "stalled" badge. @default 60000 */
  stalledAfterMs?: number;
  /**
   * The charts' sampling period: one sample of every group's figures per period, kept in
   * `<auditStream>:history` (about 120 samples), shared by every replica. @default 30000
   */
  historySampleMs?: number;
  /** The Grafana dashboard (e.g. deploy/grafana's), linked from every page when set; http(s) only. */
  grafanaUrl?: string;
}

/** `forRootAsync`: options from a factory with injected dependencies. */
export interface RedisStreamsConsoleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Must match the `path` the factory returns (routes are registered before the factory runs). @default 'streams-console' */
  path?: string;
  inject?: Array<Type | string | symbol>;
  useFactory: (...args: never[]) => RedisStreamsConsoleOptions | Promise<RedisStreamsConsoleOptions>;
}
