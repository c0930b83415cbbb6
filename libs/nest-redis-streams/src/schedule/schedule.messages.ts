import { scheduleKeysOf } from '../keys/index.js';

/** Messages of the schedule's mover. */
export const SCHEDULE_MESSAGES = {
  moveFailed: (stream: string, cause: string, checkMs: number) =>
    `Could not move the due entries of the schedule of stream "${stream}" (${cause}); ` +
    `trying again every ${checkMs} ms (logged once until it changes). They stay scheduled meanwhile.`,
  setAside: (stream: string, members: string[]) => {
    const { due, entries } = scheduleKeysOf(stream);
    const named = members.slice(0, 10).map((m) => JSON.stringify(m));
    const more = members.length > named.length ? ` and ${members.length - named.length} more` : '';
    return (
      `Set aside ${members.length} record(s) of the schedule of stream "${stream}" that hold no entry this ` +
      `library wrote (written by hand, or damaged): ${named.join(', ')}${more}. They are never added to the ` +
      `stream; the other due entries are. Read one with HGET ${entries} <member>, list them with ` +
      `\`nest-redis-streams scheduled ${stream}\`, remove one with \`scheduled cancel ${stream} <member>\` ` +
      `(they stay in ${due} at score +inf until then).`
    );
  },
} as const;
