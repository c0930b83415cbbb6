import { SERVER_DEFAULTS, defaultConsumerName } from '../constants.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { RedisStreamsServerOptions } from '../interfaces/server-options.interface.js';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface.js';
import { MESSAGES } from '../messages.js';
import { defaultDeadLetterStream, replyStreamPrefix, slotOf } from '../keys/index.js';
import { BATCH_MESSAGES, batchPrefetch, resolveBatch } from '../consumer/index.js';
import type { ResolvedHandlerOptions } from '../consumer/index.js';
import { SERVER_MESSAGES } from './server.messages.js';
import { checkConnectionUrls } from '../redis/redis-url-scheme.js';

export type ResolvedServerOptions = typeof SERVER_DEFAULTS &
  Omit<RedisStreamsServerOptions, keyof typeof SERVER_DEFAULTS> & {
    consumer: string;
    replyStreamPrefix: string;
    /** The user set prefetchCount for every handler (otherwise handlers without one size it themselves). */
    prefetchCountGiven?: boolean;
  };

/** Default life of an instance's hold on its partitions (exclusive ownership). */
const DEFAULT_OWNERSHIP_LEASE_MS = 10_000;
/** Renewals run every third of the lease; shorter leases would be lost to a GC pause. */
const MIN_OWNERSHIP_LEASE_MS = 300;

const START_ID = /^(0|\$|\d+(-\d+)?)$/;

/** Merges the server defaults once and checks every server-level value. */
export function resolveServerOptions(options: RedisStreamsServerOptions = {}): ResolvedServerOptions {
  const merged = {
    ...SERVER_DEFAULTS,
    ...stripUndefined(options),
    consumer: options.consumer ?? defaultConsumerName(),
    replyStreamPrefix: options.replyStreamPrefix ?? replyStreamPrefix(options.keyPrefix ?? SERVER_DEFAULTS.keyPrefix),
    prefetchCountGiven: options.prefetchCount !== undefined,
  };
  checkConnectionUrls(merged.connection);
  for (const key of ['blockMs', 'shutdownTimeoutMs', 'reclaimCount', 'retryBackoffMs'] as const) {
    requirePositiveInteger(key, merged[key], '');
  }
  for (const key of ['reclaimIntervalMs', 'removeIdleConsumersAfterMs', 'scheduleCheckMs'] as const) {
    if (merged[key] !== 0) requirePositiveInteger(key, merged[key], ' (or 0 to turn it off)');
  }
  if (typeof merged.consumer !== 'string' || merged.consumer.length === 0) {
    throw new InvalidOptionsError(MESSAGES.badString('consumer', merged.consumer, ''));
  }
  for (const key of ['directHandlers', 'claimReads', 'checkEveryAck', 'leaseRenewal'] as const) {
    if (typeof merged[key] !== 'boolean') throw new InvalidOptionsError(MESSAGES.badBoolean(key, merged[key]));
  }
  if (typeof merged.keyPrefix !== 'string') throw new InvalidOptionsError(MESSAGES.badString('keyPrefix', merged.keyPrefix, ''));
  if (typeof merged.replyStreamPrefix !== 'string' || merged.replyStreamPrefix.length === 0) {
    throw new InvalidOptionsError(MESSAGES.badString('replyStreamPrefix', merged.replyStreamPrefix, ''));
  }
  resolveHandlerOptions(merged, {}, '(server defaults)');
  return merged;
}

/** Applies a handler's extras over the server options; forces prefetchCount ≥ concurrency. */
export function resolveHandlerOptions(
  server: ResolvedServerOptions | (typeof SERVER_DEFAULTS & StreamHandlerOptions),
  extras: StreamHandlerOptions,
  stream: string,
  cluster = false,
): ResolvedHandlerOptions {
  const where = stream === '(server defaults)' ? '' : ` for stream "${stream}"`;
  const pick = <K extends keyof StreamHandlerOptions>(key: K) => extras[key] ?? server[key];
  const resolved: ResolvedHandlerOptions = {
    group: pick('group') as string,
    concurrency: pick('concurrency') as number,
    // Raised to concurrency below: every slot must be fillable by one read.
    prefetchCount: pick('prefetchCount') as number,
    startId: pick('startId') as string,
    ackMode: pick('ackMode') as ResolvedHandlerOptions['ackMode'],
    maxDeliveries: pick('maxDeliveries') as number,
    minIdleTimeMs: pick('minIdleTimeMs') as number,
    deadLetterStream: extras.deadLetterStream ?? defaultDeadLetterStream(stream, cluster),
    orderingKey: extras.orderingKey,
    maxHandlerMs: pick('maxHandlerMs') as number,
  };
  if (typeof resolved.group !== 'string' || resolved.group.length === 0) {
    throw new InvalidOptionsError(MESSAGES.badString('group', resolved.group, where));
  }
  for (const key of ['concurrency', 'prefetchCount', 'maxDeliveries', 'minIdleTimeMs', 'maxHandlerMs'] as const) {
    requirePositiveInteger(key, resolved[key], where);
  }
  if (resolved.ackMode !== 'auto' && resolved.ackMode !== 'manual') {
    throw new InvalidOptionsError(MESSAGES.badAckMode(resolved.ackMode, where));
  }
  if (typeof resolved.startId !== 'string' || !START_ID.test(resolved.startId)) {
    throw new InvalidOptionsError(MESSAGES.badStartId(resolved.startId, where));
  }
  if (extras.partitions !== undefined) requirePositiveInteger('partitions', extras.partitions, where);
  const key = resolved.orderingKey;
  if (key !== undefined && typeof key !== 'function' && (typeof key !== 'string' || key.length === 0)) {
    throw new InvalidOptionsError(MESSAGES.badString('orderingKey', key, where) + ' Give a payload field name or a function.');
  }
  requireSameSlot(stream, resolved.deadLetterStream, cluster);
  resolved.prefetchCount = Math.max(resolved.prefetchCount, resolved.concurrency);
  // Every handler would become a batch handler: batching is chosen per handler.
  if ((server as StreamHandlerOptions).batch !== undefined) throw new InvalidOptionsError(BATCH_MESSAGES.serverLevel);
  const batch = resolveBatch(extras, resolved, where);
  if (batch) resolved.prefetchCount = batchPrefetch(extras, batch, resolved);
  // Unset everywhere: the consumer sizes its read-ahead by the handler's pace (ReadAhead), from
  // prefetchCount (64, or concurrency) up. Batch handlers keep the room their batches need.
  const given = extras.prefetchCount !== undefined || (server as { prefetchCountGiven?: boolean }).prefetchCountGiven;
  if (!given && !batch) resolved.autoReadAhead = true;
  const withBatch = batch ? { ...resolved, batch } : resolved;
  const blockKey = resolveOnDeadLetter(pick('onDeadLetter'), resolved, where);
  const withBlock = blockKey ? { ...withBatch, onDeadLetter: blockKey } : withBatch;
  const exclusive = resolveOwnership(pick('ownership'), pick('ownershipLeaseMs'), where);
  return exclusive ? { ...withBlock, exclusive } : withBlock;
}

/**
 * `onDeadLetter: 'block-key'` → 'block-key'; 'continue' (the default) → undefined. The server-wide
 * default is checked per handler: a handler without orderingKey is refused then.
 */
function resolveOnDeadLetter(
  value: unknown,
  resolved: Pick<ResolvedHandlerOptions, 'orderingKey' | 'ackMode'>,
  where: string,
): 'block-key' | undefined {
  if (value === undefined || value === 'continue') return undefined;
  if (value !== 'block-key') throw new InvalidOptionsError(SERVER_MESSAGES.badOnDeadLetter(value, where));
  if (where === '') return 'block-key';
  if (resolved.orderingKey === undefined) throw new InvalidOptionsError(SERVER_MESSAGES.blockKeyNeedsOrderingKey(where));
  if (resolved.ackMode === 'manual') throw new InvalidOptionsError(SERVER_MESSAGES.blockKeyManualAck(where));
  return 'block-key';
}

/**
 * The options of one partition stream of a handler resolved for its logical stream: only the
 * default dead-letter stream differs (it keeps the partition's hash tag, so its slot).
 */
export function optionsForPartition(
  handler: ResolvedHandlerOptions,
  extras: StreamHandlerOptions,
  stream: string,
  cluster: boolean,
): ResolvedHandlerOptions {
  const deadLetterStream = extras.deadLetterStream ?? defaultDeadLetterStream(stream, cluster);
  requireSameSlot(stream, deadLetterStream, cluster);
  return { ...handler, deadLetterStream };
}

/** Parking is one script over the stream and its dead-letter stream: on a cluster they share a slot. */
function requireSameSlot(stream: string, deadLetterStream: string, cluster: boolean): void {
  if (cluster && slotOf(deadLetterStream) !== slotOf(stream)) {
    throw new InvalidOptionsError(MESSAGES.crossSlotDeadLetter(stream, deadLetterStream));
  }
}

/** `ownership: 'exclusive'` → its lease; 'shared' (the default) → undefined. */
function resolveOwnership(ownership: unknown, leaseMs: unknown, where: string): { leaseMs: number } | undefined {
  if (ownership === undefined || ownership === 'shared') return undefined;
  if (ownership !== 'exclusive') throw new InvalidOptionsError(SERVER_MESSAGES.badOwnership(ownership, where));
  const lease = leaseMs ?? DEFAULT_OWNERSHIP_LEASE_MS;
  if (typeof lease !== 'number' || !Number.isInteger(lease) || lease < MIN_OWNERSHIP_LEASE_MS) {
    throw new InvalidOptionsError(SERVER_MESSAGES.badOwnershipLease(lease, MIN_OWNERSHIP_LEASE_MS, where));
  }
  return { leaseMs: lease };
}

function requirePositiveInteger(option: string, value: unknown, where: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new InvalidOptionsError(MESSAGES.positiveInteger(option, value, where));
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
