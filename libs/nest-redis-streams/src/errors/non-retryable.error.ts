import { RpcException } from '@nestjs/microservices';
import { carriesMarker } from './rpc-marker.js';

/**
 * Throw from a handler to park the entry in the dead-letter stream now instead of retrying it
 * (a validation failure that no retry can fix). It is an RpcException so that Nest's exception
 * filters pass it through unchanged instead of replacing it with "Internal server error".
 */
export class NonRetryableError extends RpcException {
  override readonly name = 'NonRetryableError';
  constructor(message: string) {
    super({ status: 'error', message, name: 'NonRetryableError', nonRetryable: true });
    this.message = message;
  }
}

/** True for NonRetryableError and for what Nest's RPC filters make of it. */
export function isNonRetryable(error: unknown): boolean {
  return carriesMarker(error, NonRetryableError, 'nonRetryable');
}
