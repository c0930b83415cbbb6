import { DeadLetterReason } from '../dead-letter-reason.js';
import { UndecodableEntryError } from './undecodable-entry.error.js';

/**
 * An entry whose `event_id` bytes are not UTF-8. Decoded as text they would share a key with other
 * ids (every bad byte reads as U+FFFD), so the entry is dead-lettered, never deduplicated.
 */
export class UndecodableEventIdError extends UndecodableEntryError {
  override readonly name = 'UndecodableEventIdError';
  override readonly reason = DeadLetterReason.UNDECODABLE_EVENT_ID;
}
