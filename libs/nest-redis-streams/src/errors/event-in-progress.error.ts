import { RpcException } from '@nestjs/microservices';
import { carriesMarker } from './rpc-marker.js';

/**
 * Another delivery of the same business event is being handled right now (its idempotency claim
 * is held). The transport retries the entry later without counting this delivery, so a claim
 * left by a crashed consumer cannot use up the retry budget and dead-letter a good event. An
 * RpcException, so that Nest's exception filters hand it over unchanged.
 */
export class EventInProgressError extends RpcException {
  override readonly name = 'EventInProgressError';
  constructor(message: string) {
    super({ status: 'error', message, name: 'EventInProgressError', deferred: true });
    this.message = message;
  }
}

/** True for EventInProgressError and for what Nest's RPC filters make of it. */
export function isDeferral(error: unknown): boolean {
  return carriesMarker(error, EventInProgressError, 'deferred');
}
