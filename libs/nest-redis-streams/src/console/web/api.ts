// The console's API, found relative to this module's own URL (<base>/assets/api.js → <base>/api/),
// so the page works under any global prefix and mount path.
const API = new URL('../api/', import.meta.url);

export interface Session {
  writable: boolean;
  reason: string | null;
  readOnlyStreams: string[];
  csrfHeader: string;
  csrfToken: string | null;
  actor: string;
  refreshMs: number;
  grafanaUrl: string | null;
}

let session: Session | null = null;

export class ApiError extends Error {
  constructor(
    message: string,
    /** The answer's JSON body (e.g. the live canary's `runId` with a 409), null when there was none. */
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

async function handle<T>(res: Response): Promise<T> {
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(body?.message ? String(body.message) : `HTTP ${res.status}`, body);
  return body as T;
}

export function get<T>(path: string, params: Record<string, string | undefined> = {}): Promise<T> {
  const url = new URL(path, API);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') url.searchParams.set(k, v);
  return fetch(url, { headers: { accept: 'application/json' } }).then((res) => handle<T>(res));
}

export async function post<T>(path: string, body: object): Promise<T> {
  const s = await loadSession();
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (s.csrfToken) headers[s.csrfHeader] = s.csrfToken;
  return handle<T>(await fetch(new URL(path, API), { method: 'POST', headers, body: JSON.stringify(body) }));
}

export async function loadSession(): Promise<Session> {
  session ??= await get<Session>('session');
  return session;
}

/** Whether action buttons are shown for this stream. */
export function canWrite(s: Session, stream: string): boolean {
  return s.writable && !s.readOnlyStreams.includes(stream);
}
