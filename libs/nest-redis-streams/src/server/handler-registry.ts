import type { MessageHandler } from '@nestjs/microservices';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface.js';
import { MESSAGES } from '../messages.js';
import { partitionStreams } from '../keys/index.js';
import { type ResolvedServerOptions, optionsForPartition, resolveHandlerOptions } from './resolve-options.js';
import { streamNameOf } from './stream-pattern.js';
import type { ResolvedHandlerOptions, StreamSubscription } from '../consumer/index.js';

/** Where a handler reads: its stream (without key prefix, as Nest normalised the pattern) and group. */
export interface HandlerAddress {
  readonly pattern: string;
  readonly group: string;
}

/** A handler as added: its address, its kind and Nest's handler function. */
interface AddedHandler extends HandlerAddress {
  readonly kind: 'event' | 'message';
  /** The first handler; further event handlers of the same stream and group chain on its `next`. */
  readonly handler: MessageHandler;
}

/** What the server decided for the handler(s) of one stream and group, once, when it was added. */
export interface HandlerRegistration extends AddedHandler {
  /** The logical stream's key, `<keyPrefix><pattern>`; partitioned, the partitions' parent. */
  readonly stream: string;
  /** The options over the server's, for the logical stream `<keyPrefix><pattern>`. */
  readonly options: ResolvedHandlerOptions;
  /** One per stream read: the stream itself, or each of its partitions (with its dead-letter stream). */
  readonly subscriptions: readonly StreamSubscription[];
}

/** A handler whose options were refused: listen() reports the error, as Nest expects start-up failures there. */
interface RefusedHandler extends AddedHandler {
  readonly error: unknown;
}

type Resolve = typeof resolveHandlerOptions;

/**
 * The server's handlers by stream and group. Adding one decides its stream(s), group and options
 * once; the subscriptions, direct calls and ownership are read from that record. Nest's base class
 * would chain every handler of a pattern into one call, which would run the billing group's
 * handler for the inventory group's entry: here only handlers of one stream and group chain.
 */
export class HandlerRegistry {
  /** By stream, then group. */
  private readonly byStream = new Map<string, Map<string, HandlerRegistration | RefusedHandler>>();
  /** In the order they were added: consumers start, and are listed, in this order. */
  private readonly added: Array<HandlerRegistration | RefusedHandler> = [];

  constructor(
    private readonly server: ResolvedServerOptions,
    private readonly cluster: boolean,
    /** Nest's pattern normalisation (the server's `normalizePattern`). */
    private readonly normalize: (pattern: string) => string,
    private readonly resolve: Resolve = resolveHandlerOptions,
  ) {}

  /** The address of a handler declared with `pattern` and `extras` (its decorator's arguments). */
  addressOf(pattern: unknown, extras: unknown): HandlerAddress {
    const group = (extras as StreamHandlerOptions | undefined)?.group ?? this.server.group;
    return { pattern: this.normalize(streamNameOf(pattern) as string), group };
  }

  /**
   * Registers a handler; an event handler of a stream and group that already has one chains onto
   * it (Nest's own chaining: one consumer runs them all for each entry, with the first's options).
   * Throws at once for a second request handler or a mix of kinds on one stream and group.
   */
  add(pattern: unknown, handler: MessageHandler, isEvent: boolean, extras: StreamHandlerOptions): HandlerAddress {
    const address = this.addressOf(pattern, extras);
    const groups = this.byStream.get(address.pattern) ?? new Map<string, HandlerRegistration | RefusedHandler>();
    const existing = groups.get(address.group);
    if (existing?.kind === 'event' && isEvent) {
      let tail = existing.handler;
      while (tail.next) tail = tail.next;
      tail.next = handler;
      return address;
    }
    if (existing) {
      const mixed = (existing.kind === 'event') !== isEvent;
      const explain = mixed ? MESSAGES.mixedHandlerKinds : MESSAGES.duplicateMessageHandler;
      throw new InvalidOptionsError(explain(address.pattern, address.group));
    }
    const added = this.decide(address, isEvent ? 'event' : 'message', handler, extras);
    groups.set(address.group, added);
    this.byStream.set(address.pattern, groups);
    this.added.push(added);
    return address;
  }

  /** The registration a handler declared with `pattern` and `extras` belongs to. */
  find(pattern: unknown, extras: unknown): HandlerRegistration | undefined {
    const { pattern: stream, group } = this.addressOf(pattern, extras);
    const found = this.byStream.get(stream)?.get(group);
    return found && 'options' in found ? found : undefined;
  }

  /** Every registration in the order added; throws the first refusal of a handler's options. */
  registrations(): HandlerRegistration[] {
    const refused = this.added.find((added) => 'error' in added);
    if (refused) throw (refused as RefusedHandler).error;
    return this.added as HandlerRegistration[];
  }

  /** Every stream read, in the order the handlers were added. */
  subscriptions(): StreamSubscription[] {
    return this.registrations().flatMap((registration) => registration.subscriptions);
  }

  private decide(
    address: HandlerAddress,
    kind: AddedHandler['kind'],
    handler: MessageHandler,
    extras: StreamHandlerOptions,
  ): HandlerRegistration | RefusedHandler {
    const { pattern } = address;
    const stream = `${this.server.keyPrefix}${pattern}`;
    try {
      const options = this.resolve(this.server, extras, stream, this.cluster);
      const streams = partitionStreams(stream, extras.partitions ?? 1);
      // One subscription (read loop) per partition stream, all with the same handler and group.
      const subscriptions = streams.map((partitionStream, partition) => ({
        pattern,
        stream: partitionStream,
        partition,
        kind,
        handler,
        options: streams.length === 1 ? options : optionsForPartition(options, extras, partitionStream, this.cluster),
      }));
      return { ...address, stream, kind, handler, options, subscriptions };
    } catch (error) {
      return { ...address, kind, handler, error };
    }
  }
}
