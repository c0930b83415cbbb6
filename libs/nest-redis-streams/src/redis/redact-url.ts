/** Where a URL starts: a scheme (`redis://`, `Rediss://`, `valkey://`, `postgres://`, `unix://`...). */
const URL_START = /[a-z][a-z0-9+.-]*:\/\//gi;

/** Where the part of a URL that can hold credentials ends, whatever it holds before. */
const URL_END = /[\s"'`<>]/;

/** What stands for a password: redacting a redacted URL again changes nothing. */
const HIDDEN = '***';

/** A user name as a URL writes one (percent-encoded): anything else may be part of a password. */
const PLAIN_USER = /^[\w.~%!$&'()*+;=-]+$/;

/**
 * The one redaction of URLs the library prints (messages, logs, the CLI's output): in every URL
 * of `text`, whatever its scheme, the password is taken out. The credentials end at the LAST `@`
 * before the URL ends (a password may hold `@`, `:` and `/` when it was not percent-encoded), and
 * only a plain user name before a `:` is kept: `redis://app:p@ss:w@host:6379` shows as
 * `redis://app:***@host:6379`; a plain user name alone (`postgres://app@db`) is kept too. Redacts
 * too much rather than too little: a query value holding `@` takes the host with it.
 */
export function redactUrls(text: string): string {
  const starts = new RegExp(URL_START.source, URL_START.flags);
  let out = '';
  let copied = 0;
  for (let m = starts.exec(text); m !== null; m = starts.exec(text)) {
    const after = m.index + m[0].length;
    let end = after;
    while (end < text.length && !URL_END.test(text[end])) end++;
    let at = end - 1;
    while (at >= after && text[at] !== '@') at--;
    if (at < after) {
      starts.lastIndex = end;
      continue;
    }
    // A scheme inside the credentials (a password holding `a://`) is part of them, not a URL.
    out += text.slice(copied, after) + userOnly(text.slice(after, at), true);
    copied = at + 1;
    starts.lastIndex = copied;
  }
  return out + text.slice(copied);
}

/**
 * One URL as a user gave it (`--url`, REDIS_URL, a cluster seed or a list of them), redacted like
 * `redactUrls` but as one value: whatever comes before its last `@` is credentials, even a space,
 * and without a scheme (`app:secret@host:6379`) too. Credentials without a `:` are dropped whole:
 * redis-cli reads `redis://secret@host` as a password, and such URLs get copied into REDIS_URL.
 */
export function redactUrl(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
  const at = url.lastIndexOf('@');
  return at < scheme.length ? url : scheme + userOnly(url.slice(scheme.length, at), false) + url.slice(at + 1);
}

/** What credentials show: `user:***@` for a plain user name and a password, else `user@` or nothing. */
function userOnly(credentials: string, bareUser: boolean): string {
  const colon = credentials.indexOf(':');
  if (colon < 0) return bareUser && PLAIN_USER.test(credentials) ? `${credentials}@` : '';
  const user = credentials.slice(0, colon);
  return PLAIN_USER.test(user) ? `${user}:${HIDDEN}@` : '';
}
