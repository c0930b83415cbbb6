import {
  type CanActivate,
  type ExecutionContext,
  ForbiddenException,
  HttpException,
  HttpStatus,
  Inject,
  Injectable,
  type Type,
} from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import { type Observable, firstValueFrom, isObservable } from 'rxjs';
import type { ConsoleAccess, ConsoleGuardFunction, RedisStreamsConsoleOptions } from './console-options.interface.js';
import { CONSOLE_DEFAULTS, CONSOLE_MESSAGES, CONSOLE_OPTIONS, CONSOLE_WRITE } from './console.constants.js';
import { CsrfToken } from './csrf-token.js';

/** The request as both adapters show it (Express and Fastify both parse JSON bodies and lower-case headers). */
export interface ConsoleRequest {
  method?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: Record<string, unknown>;
  user?: unknown;
  nrsConsoleActor?: string;
}

/**
 * Every console API request passes here. Reads: the user's guard, if any. Writes, in this order:
 * read-only (global, then the stream's: 405), no guard configured (403, writes are off), CSRF
 * (same-site and the session token: 403), then the user's guard (403). The name the guard gives
 * (or `identify`) is kept on the request for the audit stream.
 */
@Injectable()
export class ConsoleAccessGuard implements CanActivate {
  private userGuard: Promise<CanActivate | ConsoleGuardFunction | null> | null = null;

  constructor(
    @Inject(CONSOLE_OPTIONS) private readonly options: RedisStreamsConsoleOptions,
    private readonly csrf: CsrfToken,
    private readonly reflector: Reflector,
    private readonly moduleRef: ModuleRef,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ConsoleRequest>();
    const access: ConsoleAccess = this.reflector.get<boolean>(CONSOLE_WRITE, context.getHandler()) ? 'write' : 'read';
    if (access === 'write') this.checkWrite(request);
    const guard = await this.resolveGuard();
    let verdict: boolean | string = true;
    if (guard) verdict = typeof guard === 'function' ? await guard(request, access) : await toPromise(guard.canActivate(context));
    if (verdict === false) throw new ForbiddenException(CONSOLE_MESSAGES.denied);
    request.nrsConsoleActor = typeof verdict === 'string' && verdict ? verdict : this.identify(request);
    return true;
  }

  private checkWrite(request: ConsoleRequest): void {
    if (this.options.readOnly) throw new HttpException(CONSOLE_MESSAGES.readOnly, HttpStatus.METHOD_NOT_ALLOWED);
    const stream = request.body?.stream;
    const config = this.options.streams?.find((s) => typeof s === 'object' && s.stream === stream);
    if (typeof stream === 'string' && typeof config === 'object' && config.readOnly) {
      throw new HttpException(CONSOLE_MESSAGES.streamReadOnly(stream), HttpStatus.METHOD_NOT_ALLOWED);
    }
    if (!this.options.guard) throw new ForbiddenException(CONSOLE_MESSAGES.noGuard);
    // Browsers send Sec-Fetch-Site on every request; a cross-site one is refused before the token check.
    if (request.headers['sec-fetch-site'] === 'cross-site') throw new ForbiddenException(CONSOLE_MESSAGES.crossSite);
    if (!this.csrf.matches(request.headers[CONSOLE_DEFAULTS.csrfHeader])) throw new ForbiddenException(CONSOLE_MESSAGES.csrf);
  }

  private resolveGuard(): Promise<CanActivate | ConsoleGuardFunction | null> {
    this.userGuard ??= (async () => {
      const guard = this.options.guard;
      if (!guard) return null;
      if (typeof guard !== 'function' || typeof (guard as Type<CanActivate>).prototype?.canActivate !== 'function') {
        return guard as CanActivate | ConsoleGuardFunction;
      }
      const type = guard as Type<CanActivate>;
      try {
        // A guard class the app provides is reused; otherwise it is built with the app's injector.
        return this.moduleRef.get(type, { strict: false });
      } catch {
        return this.moduleRef.create(type);
      }
    })();
    return this.userGuard;
  }

  private identify(request: ConsoleRequest): string {
    if (this.options.identify) return this.options.identify(request);
    const user = request.user as Record<string, unknown> | string | undefined;
    if (typeof user === 'string' && user) return user;
    for (const key of ['username', 'name', 'email', 'id', 'sub']) {
      const value = (user as Record<string, unknown> | undefined)?.[key];
      if (typeof value === 'string' || typeof value === 'number') return String(value);
    }
    return 'anonymous';
  }
}

/** A Nest guard may answer with a boolean, a promise or an observable (its first value counts). */
function toPromise(value: boolean | Promise<boolean> | Observable<boolean>): Promise<boolean> {
  return isObservable(value) ? firstValueFrom(value) : Promise.resolve(value);
}
