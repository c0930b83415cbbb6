import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The CSRF token: an HMAC of a fixed label under the secret. The page reads it from the API (a
 * same-origin read another site cannot make) and sends it in a header (which a cross-site form
 * cannot set), so a write needs both.
 */
export class CsrfToken {
  readonly value: string;

  constructor(secret: string = randomBytes(32).toString('hex')) {
    this.value = createHmac('sha256', secret).update('nest-redis-streams console').digest('base64url');
  }

  matches(candidate: unknown): boolean {
    if (typeof candidate !== 'string' || candidate.length !== this.value.length) return false;
    return timingSafeEqual(Buffer.from(candidate), Buffer.from(this.value));
  }
}
