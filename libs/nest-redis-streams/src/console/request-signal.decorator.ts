import { type ExecutionContext, createParamDecorator } from '@nestjs/common';
import type { ServerResponse } from 'node:http';

/**
 * An `AbortSignal` that fires when the client leaves before the answer is sent (the connection
 * closed with the response unfinished), so a long read stops issuing Redis commands. Express
 * hands over the Node response itself, Fastify its reply with the Node response as `raw`.
 */
export const RequestSignal = createParamDecorator((_data: unknown, context: ExecutionContext): AbortSignal => {
  const response = context.switchToHttp().getResponse<ServerResponse | { raw: ServerResponse }>();
  const raw = 'raw' in response ? response.raw : response;
  const controller = new AbortController();
  const closed = () => {
    if (!raw.writableFinished) controller.abort();
  };
  if (raw.destroyed) closed();
  else raw.once('close', closed);
  return controller.signal;
});
