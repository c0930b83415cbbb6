/**
 * True when a handler's error is an instance of `type`, or the plain object Nest's RPC exception
 * filters turn such an RpcException into (it keeps the marker field of the error object).
 */
export function carriesMarker(error: unknown, type: abstract new (...args: never[]) => unknown, marker: string): boolean {
  if (error instanceof type) return true;
  return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[marker] === true;
}
