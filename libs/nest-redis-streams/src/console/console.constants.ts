/** Injection token of the resolved console options. */
export const CONSOLE_OPTIONS = Symbol('nest-redis-streams:console-options');
/** Injection token of the console's `StreamOperations`. */
export const CONSOLE_OPERATIONS = Symbol('nest-redis-streams:console-operations');
/** Metadata key marking a handler as a write. */
export const CONSOLE_WRITE = 'nest-redis-streams:console-write';
/** Metadata key marking the session handler. */
export const CONSOLE_SESSION = 'nest-redis-streams:console-session';

/** Defaults of `RedisStreamsConsoleOptions` and the console's own figures. */
export const CONSOLE_DEFAULTS = {
  path: 'streams-console',
  refreshMs: 2_000,
  /** Header a write must carry with the session's CSRF token. */
  csrfHeader: 'x-nrs-csrf',
  /** One chart sample per this many ms, whatever the number of viewers and replicas. */
  historySampleMs: 30_000,
  /** Chart samples kept (`MAXLEN ~`): an hour at the default period. */
  historyMaxSamples: 120,
  /** Groups in one sample (problem groups first, as the overview sorts them); the rest are not charted. */
  historyMaxGroups: 200,
};

/**
 * The page may load only its own script and style and talk only to its own API: no inline script,
 * no CDN, no frames. Entries are untrusted input, so even a missed escape could not run code.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const CONSOLE_MESSAGES = {
  readOnly: 'The console is read-only (readOnly: true): write actions are switched off.',
  streamReadOnly: (stream: string) =>
    `Stream "${stream}" is read-only in the console (streams[].readOnly): write actions are switched off.`,
  noGuard:
    'Write actions are off: the console has no guard. Pass guard (a Nest CanActivate or a function of the request) to ' +
    'RedisStreamsConsoleModule.forRoot so that every action has someone accountable for it.',
  csrf:
    `Missing or wrong CSRF token: send the token from GET api/session in the ${CONSOLE_DEFAULTS.csrfHeader} header. ` +
    'Behind a load balancer, give every instance the same csrfSecret (without one, each process makes its own token).',
  crossSite: 'Cross-site write refused: the request did not come from the console page.',
  denied: 'The console guard refused this request.',
  writesDenied: (actor: string) =>
    `The console guard refuses writes for ${actor}: the page shows figures and payloads only. Ask whoever runs the ` +
    'console for write access (the guard sees access "write").',
};
