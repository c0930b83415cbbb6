import { type ArgumentsHost, Catch } from '@nestjs/common';
import { BaseRpcExceptionFilter, RpcException } from '@nestjs/microservices';
import { type Observable, throwError } from 'rxjs';
import { RedisStreamsContext } from '../context/redis-streams.context.js';

/**
 * Hands a handler's original error (class and message) to the transport, so that logs and
 * dead-letter entries say what really failed. Nest's default RPC filter replaces any error that
 * is not an RpcException with `{ message: 'Internal server error' }`.
 *
 * Register it on the microservice: `app.useGlobalFilters(new RedisStreamsExceptionFilter())`.
 * Other transports' and HTTP errors go on to Nest's default handling.
 */
@Catch()
export class RedisStreamsExceptionFilter extends BaseRpcExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): Observable<unknown> {
    // RpcExceptions keep Nest's own treatment (their error object is the reply to a caller).
    if (
      !(exception instanceof RpcException) &&
      host.getType() === 'rpc' &&
      host.switchToRpc().getContext() instanceof RedisStreamsContext
    ) {
      return throwError(() => exception);
    }
    return super.catch(exception, host);
  }
}
