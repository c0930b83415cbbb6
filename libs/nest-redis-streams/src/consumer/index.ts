// The consumer engine, as the server sees it: nothing outside consumer/ imports its files but
// through here (see .dependency-cruiser.cjs).
export { ConsumerEngine } from './consumer-engine.js';
export type { ConsumerView, HeldEntryView, HeldView, OwnershipView } from './consumer-view.js';
export type { ConsumerRuntime } from './consumer-runtime.interface.js';
export { BATCH_MESSAGES } from './batch/batch.messages.js';
export { batchOptionsOf, batchPrefetch, resolveBatch } from './batch/resolve-batch.js';
export { waitForSignal } from './wait-for-signal.js';

import type { ConsumerView } from './consumer-view.js';
/** One consumer of one stream and group, as `RedisStreamsServer.getConsumers()` lists it: read-only. */
export type StreamConsumer = ConsumerView;
export type { ResolvedHandlerOptions, StreamSubscription } from './stream-subscription.js';
