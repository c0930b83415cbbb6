import type { GroupBacklog } from './group-backlog.js';

/** Log lines and errors of the trimming code: full sentences naming the stream and the fix. */
export const TRIM_MESSAGES = {
  maxLenBelowBacklog: (stream: string, maxLen: number, group: GroupBacklog) =>
    `Stream "${stream}" is trimmed with MAXLEN ~ ${maxLen}, but group "${group.name}" has ${group.pending} pending ` +
    `and ${group.lag ?? 'an unknown number of'} undelivered (lag) entries: trimming deletes entries it has not ` +
    'processed. Use retention { maxLen, safe: true } (StreamTrimmer), raise maxLen, or fix the consumers.',
  badTarget: (stream: string, target: unknown) =>
    `A trim of stream "${stream}" needs maxLen (an integer >= 0) or minIdAgeMs (an integer > 0), ` +
    `got ${JSON.stringify(target)}.`,
  badRetention: (where: string, retention: unknown) =>
    `Option "${where}" must set exactly one of maxLen (an integer >= 0) or minIdAgeMs (an integer > 0), ` +
    `with optional safe (boolean) and intervalMs (a positive integer); got ${JSON.stringify(retention)}.`,
  badAckedRetention: (where: string, retention: unknown) =>
    `Option "${where}" with acked retention takes { acked: true } and an optional intervalMs only: it removes what ` +
    `every group acknowledged, so maxLen, minIdAgeMs and safe do not apply; got ${JSON.stringify(retention)}.`,
  trimFailed: (stream: string, cause: string) =>
    `Periodic trim of stream "${stream}" failed (${cause}); it runs again at the next interval.`,
  backlogCheckFailed: (stream: string, cause: string) =>
    `Could not check the consumer groups of stream "${stream}" against its MAXLEN (${cause}).`,
};
