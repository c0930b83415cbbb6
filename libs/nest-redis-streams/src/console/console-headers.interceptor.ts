import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { CONTENT_SECURITY_POLICY } from './console.constants.js';

const HEADERS: Array<[string, string]> = [
  ['Content-Security-Policy', CONTENT_SECURITY_POLICY],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['X-Frame-Options', 'DENY'],
  // Figures and payloads are live and may be sensitive: never cached.
  ['Cache-Control', 'no-store'],
];

/** Security headers on every console response, through the adapter (Express and Fastify alike). */
@Injectable()
export class ConsoleHeadersInterceptor implements NestInterceptor {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const response = context.switchToHttp().getResponse<unknown>();
    for (const [name, value] of HEADERS) this.adapterHost.httpAdapter.setHeader(response, name, value);
    return next.handle();
  }
}
