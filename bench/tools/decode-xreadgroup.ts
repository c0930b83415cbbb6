// What decoding one XREADGROUP reply costs per entry in each client library, without the rest of
// a consumer around it (so other load on the machine moves it little): a real reply of 500
// envelope entries, captured from a private redis-server in RESP2 and RESP3, is decoded to the
// strings the transport receives by
//   - ioredis 5 (redis-parser into buffers, then Command#transformReply to strings),
//   - ioredis 6 (its own Decoder into buffers, then Command#transformReply), RESP3 and RESP2,
//   - a lean decoder written for this one reply shape, straight from the bytes to strings: the
//     estimate of what a dedicated XREADGROUP path could cost at best.
// All outputs are checked equal. `node dist/bench/tools/decode-xreadgroup.js` (after a build).
import { deepStrictEqual } from 'node:assert';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { prefill } from '../support/prefill.js';
import { startPrivateRedis } from '../support/redis.js';

const require = createRequire(import.meta.url);
const ENTRIES = 500;
const ROUNDS = 5;
const DECODES_PER_ROUND = 200;

type Reply = unknown;
interface CommandLike {
  transformReply(reply: Reply): Reply;
  setReplyContext?(context: { protocol: number; replyMapping: string }): void;
}
type CommandClass = new (name: string, args: unknown[], options: { replyEncoding: string }) => CommandLike;

const ioredis5 = require('ioredis/package.json') as { version: string };
const ioredis6 = require('ioredis6/package.json') as { version: string };
const Command5 = (require('ioredis/built/Command.js') as { default: CommandClass }).default;
const Command6 = (require('ioredis6/built/Command.js') as { default: CommandClass }).default;
const RedisParser = require('redis-parser') as new (options: object) => { execute(chunk: Buffer): void };
const { Decoder, RESP_TYPES } = require('ioredis6/built/resp/decoder.js') as {
  Decoder: new (config: object) => { write(chunk: Buffer): void };
  RESP_TYPES: Record<string, number>;
};

/** ioredis 6's own mapping for its default ("legacy") reply shapes (DataHandler.js). */
const legacyTypeMapping = {
  [RESP_TYPES.SIMPLE_STRING]: Buffer,
  [RESP_TYPES.BLOB_STRING]: Buffer,
  [RESP_TYPES.VERBATIM_STRING]: Buffer,
  [RESP_TYPES.BIG_NUMBER]: String,
  [RESP_TYPES.DOUBLE]: Buffer,
  [RESP_TYPES.BOOLEAN]: Number,
  [RESP_TYPES.MAP]: Array,
  [RESP_TYPES.SET]: Array,
};

/** Sends `commands` one after another on a fresh socket; resolves with the raw bytes of the last reply. */
function captureLastReply(port: number, commands: string[][]): Promise<Buffer> {
  const encode = (args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let chunks: Buffer[] = [];
    let sent = 0;
    const sendNext = () => {
      chunks = [];
      socket.write(encode(commands[sent++]));
    };
    // ioredis 6's decoder, used only to know where a reply ends.
    const decoder = new Decoder({
      getTypeMapping: () => legacyTypeMapping,
      onReply: () => {
        if (sent < commands.length) return sendNext();
        socket.end();
        resolve(Buffer.concat(chunks));
      },
      onErrorReply: (err: Error) => reject(err),
      onPush: () => undefined,
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      decoder.write(chunk);
    });
    socket.on('error', reject);
    sendNext();
  });
}

/** Decodes exactly the shape XREADGROUP returns in RESP2 to strings, from one buffer. */
function leanDecode(bytes: Buffer): Reply {
  // Node's own slicers, without toString's argument checks (both are on every Buffer).
  const buf = bytes as Buffer & { latin1Slice(from: number, to: number): string; utf8Slice(from: number, to: number): string };
  let at = 0;
  const header = () => {
    const end = buf.indexOf(13, at);
    const value = Number(buf.latin1Slice(at + 1, end));
    at = end + 2;
    return value;
  };
  const bulk = () => {
    const length = header();
    const text = buf.utf8Slice(at, at + length);
    at += length + 2;
    return text;
  };
  const streams = new Array(header());
  for (let s = 0; s < streams.length; s++) {
    header(); // *2
    const name = bulk();
    const entries = new Array(header());
    for (let e = 0; e < entries.length; e++) {
      header(); // *2
      const id = bulk();
      const fields = new Array<string>(header());
      for (let f = 0; f < fields.length; f++) fields[f] = bulk();
      entries[e] = [id, fields];
    }
    streams[s] = [name, entries];
  }
  return streams;
}

function viaRedisParser(bytes: Buffer): Reply {
  let out: Reply;
  const command = new Command5('xreadgroup', [], { replyEncoding: 'utf8' });
  const parser = new RedisParser({
    returnBuffers: true,
    returnReply: (reply: Reply) => (out = command.transformReply(reply)),
    returnError: (err: Error) => {
      throw err;
    },
    returnFatalError: (err: Error) => {
      throw err;
    },
  });
  parser.execute(bytes);
  return out;
}

function viaDecoder6(protocol: 2 | 3) {
  return (bytes: Buffer): Reply => {
    let out: Reply;
    const command = new Command6('xreadgroup', [], { replyEncoding: 'utf8' });
    command.setReplyContext?.({ protocol, replyMapping: 'legacy' });
    const decoder = new Decoder({
      getTypeMapping: () => legacyTypeMapping,
      onReply: (reply: Reply) => (out = command.transformReply(reply)),
      onErrorReply: (err: Error) => {
        throw err;
      },
      onPush: () => undefined,
    });
    decoder.write(bytes);
    return out;
  };
}

async function main(): Promise<void> {
  const server = await startPrivateRedis();
  try {
    await prefill(server.url, 'decode', ENTRIES);
    const read = (group: string) => [
      ['XGROUP', 'CREATE', 'decode', group, '0'],
      ['XREADGROUP', 'GROUP', group, 'c', 'COUNT', String(ENTRIES), 'STREAMS', 'decode', '>'],
    ];
    const resp2 = await captureLastReply(server.port, read('g2'));
    const resp3 = await captureLastReply(server.port, [['HELLO', '3'], ...read('g3')]);
    const variants: Array<[string, (bytes: Buffer) => Reply, Buffer]> = [
      [`ioredis ${ioredis5.version} (redis-parser), RESP2`, viaRedisParser, resp2],
      [`ioredis ${ioredis6.version} (its Decoder), RESP3 (its default)`, viaDecoder6(3), resp3],
      [`ioredis ${ioredis6.version} (its Decoder), protocol: 2`, viaDecoder6(2), resp2],
      ['lean XREADGROUP decoder, straight to strings, RESP2', leanDecode, resp2],
    ];
    const expected = viaRedisParser(resp2);
    for (const [name, decode, bytes] of variants) deepStrictEqual(decode(bytes), expected, `${name} decodes differently`);
    console.log(`One XREADGROUP reply of ${ENTRIES} entries: ${resp2.length} bytes in RESP2, ${resp3.length} in RESP3.`);
    const best = new Map<string, number>();
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [name, decode, bytes] of variants) {
        const started = performance.now();
        for (let i = 0; i < DECODES_PER_ROUND; i++) decode(bytes);
        const usPerEntry = ((performance.now() - started) * 1_000) / (DECODES_PER_ROUND * ENTRIES);
        // Round 0 warms the JIT up and is not counted.
        if (round > 0) best.set(name, Math.min(best.get(name) ?? Infinity, usPerEntry));
      }
    }
    const base = best.get(variants[0][0])!;
    for (const [name] of variants) {
      const us = best.get(name)!;
      console.log(`${us.toFixed(2).padStart(6)} µs per entry  ${(us / base).toFixed(2)}×  ${name}`);
    }
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
