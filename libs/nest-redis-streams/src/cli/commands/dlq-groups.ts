import type { Parsed } from '../cli-args.js';
import type { CanaryProgress } from '../../operations/canary-redrive.js';
import type { CanaryOptions } from '../../operations/canary-options.js';
import type { FailureGroups } from '../../operations/failure-groups.js';
import type { RedrivePreview } from '../../operations/redrive-preview.js';
import type { CliContext } from '../cli-context.js';
import { EXIT } from '../cli.constants.js';
import { escapeControls, printable } from '../output.js';
import { formatTable } from '../table.js';
import { timeText } from '../../time-text.js';

const time = (ms: number) => (Number.isFinite(ms) && ms > 0 ? timeText(ms) : '-');
const counts = (map: Record<string, number>) =>
  Object.entries(map)
    .map(([name, n]) => `${printable(name || '(none)', 30)} ${n}`)
    .join(', ');

/** How far a bounded read got, as one sentence. */
function coverage(read: { scanned: number; total: number; complete: boolean }): string {
  return read.complete
    ? `all ${read.total} records read`
    : `only the oldest ${read.scanned} of ${read.total} records read (the scan limit): the counts cover those`;
}

/** `dlq groups [stream]`: the failure groups of one stream, or of every served stream merged. */
export async function printFailureGroups(ctx: CliContext, stream: string | undefined): Promise<number> {
  const found: FailureGroups = stream ? await ctx.ops.failureGroups(stream) : await ctx.ops.failureGroupsAcross();
  if (ctx.json) {
    ctx.printJson(found);
    return EXIT.ok;
  }
  const rows = found.groups.map((g) => [
    g.fingerprint,
    String(g.count),
    printable(g.errorClass || '-', 24),
    printable(g.pattern, 60),
    time(g.firstSeen),
    time(g.lastSeen),
    stream ? counts(g.groups) : counts(g.streams),
  ]);
  const where = stream ? 'groups' : 'streams';
  ctx.print(formatTable(['fingerprint', 'count', 'class', 'pattern', 'first seen', 'last seen', where], rows, new Set([1])));
  ctx.print(`${found.groups.length} failure groups; ${coverage(found)}.`);
  for (const { stream: name, reason } of found.skipped ?? [])
    ctx.warn(`skipped ${escapeControls(name)}: ${escapeControls(reason)}`);
  if (found.groups.length > 0 && stream) {
    ctx.print(`Dry run of one: nest-redis-streams dlq redrive ${escapeControls(stream)} --cause <fingerprint> --dry-run`);
  }
  return EXIT.ok;
}

/** `dlq redrive <stream> --dry-run`: what the re-drive would do, changing nothing. */
export function printRedrivePreview(ctx: CliContext, stream: string, preview: RedrivePreview): number {
  if (ctx.json) {
    ctx.printJson(preview);
    return EXIT.ok;
  }
  const place = (p: RedrivePreview['oldest']) => (p ? `${p.id} (parked ${time(p.parkedAt)}, was ${p.originalId || '?'})` : '-');
  ctx.print(`dry run: would re-drive ${preview.wouldRedrive} dead letters to ${escapeControls(stream)}; nothing was changed`);
  ctx.print(`tombstones left in place: ${preview.tombstones}`);
  ctx.print(`oldest: ${place(preview.oldest)}`);
  ctx.print(`newest: ${place(preview.newest)}`);
  ctx.print(`by group: ${counts(preview.groups) || '-'}`);
  if (preview.keys) {
    const top = preview.keys.top.slice(0, 10).map((k) => `${printable(k.key, 30)} ${k.count}`);
    ctx.print(
      `keys (${printable(preview.keys.field, 40)}): ${preview.keys.distinct} distinct, ${preview.keys.missing} without it` +
        (top.length ? `; most: ${top.join(', ')}` : ''),
    );
  } else ctx.print('keys: add --key <payload field> to see which ordering keys they hold');
  ctx.print(`${coverage(preview)}.`);
  if (preview.upTo !== null) {
    ctx.print(`read up to ${preview.upTo}: add --up-to ${preview.upTo} to the re-drive to take exactly these`);
  }
  return EXIT.ok;
}

/** A number option as typed; anything else goes through as text, for the check to name it. */
function numberOption(parsed: Parsed, name: string): number | undefined {
  const raw = parsed.values[name];
  if (raw === undefined) return undefined;
  return (typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw) as number;
}

/** The canary's options as the command line gives them (`resolveCanaryOptions` checks them). */
export function canaryOptionsOf(parsed: Parsed, cause: string): CanaryOptions {
  return {
    cause,
    canary: numberOption(parsed, 'canary'),
    ratePerSec: numberOption(parsed, 'rate'),
    maxFailureRatio: numberOption(parsed, 'max-failure-ratio'),
    settleMs: numberOption(parsed, 'settle-ms'),
  };
}

/** `dlq redrive <stream> --cause <fp> --canary N`: runs in the foreground, a line per step. */
export async function runCanary(ctx: CliContext, parsed: Parsed, stream: string, cause: string): Promise<number> {
  const options = canaryOptionsOf(parsed, cause);
  let last = '';
  const line = (p: CanaryProgress) =>
    `${p.state} ${p.phase}: ${p.redriven} re-driven, ${p.succeeded} succeeded, ${p.failedAgain} failed again, ${p.watching} watching`;
  const { runId, done } = await ctx.ops.canaries.start(ctx.actor, stream, options, (p) => {
    const text = line(p);
    if (!ctx.json && text !== last) ctx.print(text);
    last = text;
  });
  if (!ctx.json) ctx.print(`canary run ${runId} on ${escapeControls(stream)} (the console shows its progress too)`);
  const end = await done;
  if (ctx.json) ctx.printJson(end);
  else ctx.print(escapeControls(end.reason));
  return end.state === 'done' ? EXIT.ok : EXIT.checkFailed;
}
