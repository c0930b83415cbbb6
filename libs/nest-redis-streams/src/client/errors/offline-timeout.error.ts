/** Why a batch failed as a whole, so the caller can tell "not written" from "unknown". */
export class OfflineTimeoutError extends Error {
  override readonly name = 'OfflineTimeoutError';
}
