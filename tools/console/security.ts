/**
 * What keeps another web page, or another host name, from driving the console:
 * - the server binds 127.0.0.1 only (server.ts);
 * - a request whose `Host` is not this server's loopback address and port is refused (DNS
 *   rebinding: a foreign name resolving to 127.0.0.1 reaches the socket but not the console);
 * - a request carrying a foreign `Origin` is refused (a cross-site form or fetch);
 * - a request that changes state carries the session's CSRF token in a hidden field, matching
 *   the HMAC of the session cookie under this process's secret (a forged form has no token).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const SESSION_COOKIE = 'fsched_console_session';
export const CSRF_FIELD = 'csrf';

export class Security {
  private readonly secret = randomBytes(32);

  constructor(private readonly port: number) {}

  private allowedHosts(): string[] {
    return [`127.0.0.1:${this.port}`, `localhost:${this.port}`];
  }

  /** Why the request is refused (403), or undefined. */
  refusal(request: IncomingMessage): string | undefined {
    const host = request.headers.host;
    if (host === undefined || !this.allowedHosts().includes(host.toLowerCase())) return `foreign Host header ${JSON.stringify(host ?? '')}`;
    const origin = request.headers.origin;
    if (
      origin !== undefined &&
      !this.allowedHosts()
        .map((h) => `http://${h}`)
        .includes(origin.toLowerCase())
    )
      return `foreign Origin header ${JSON.stringify(origin)}`;
    return undefined;
  }

  newSession(): string {
    return randomBytes(18).toString('base64url');
  }

  tokenFor(session: string): string {
    return createHmac('sha256', this.secret).update(session).digest('base64url');
  }

  /** Whether the form's token is the one of the request's session. */
  validToken(session: string | undefined, token: string | undefined): boolean {
    if (session === undefined || token === undefined) return false;
    const expected = Buffer.from(this.tokenFor(session));
    const given = Buffer.from(token);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

export function sessionOf(request: IncomingMessage): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=');
    if (name === SESSION_COOKIE && value) return value;
  }
  return undefined;
}

export function sessionCookie(session: string): string {
  return `${SESSION_COOKIE}=${session}; HttpOnly; SameSite=Strict; Path=/`;
}
