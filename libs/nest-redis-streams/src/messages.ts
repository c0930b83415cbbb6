/** User-facing messages: full sentences naming the value and the fix. */
export const MESSAGES = {
  notListening: 'RedisStreamsServer is not listening yet: call app.listen() / startAllMicroservices() before unwrap().',
  redisUnreachable: (where: string, cause: string, setting = 'set the "connection" option or REDIS_URL') =>
    `Could not reach Redis at ${where} (${cause}). Start Redis, or ${setting} to where it runs ` +
    '(docker compose up -d redis starts one).',
  noSuchDatabase: (where: string, db: number, cause: string) =>
    `Redis at ${where} refused database ${db} (${cause}): ioredis would go on in database 0, another app's keys. ` +
    `Fix the database number in the connection URL or options (the server's "databases" setting says how many it has).`,
  valkeyScheme: (url: string) =>
    `Connection URL "${url}": Valkey is reached with redis:// (rediss:// for TLS), the scheme ioredis knows; ` +
    `write ${url.replace(/^valkey(s?):\/\//i, (_, tls: string) => `redis${tls.toLowerCase()}://`)}.`,
  positiveInteger: (option: string, value: unknown, where: string) =>
    `Option "${option}" must be a positive integer${where}, got ${JSON.stringify(value)}.`,
  badString: (option: string, value: unknown, where: string) =>
    `Option "${option}" must be a non-empty string${where}, got ${JSON.stringify(value)}.`,
  badBoolean: (option: string, value: unknown) => `Option "${option}" must be true or false, got ${JSON.stringify(value)}.`,
  badAckMode: (value: unknown, where: string) =>
    `Option "ackMode" must be "auto" or "manual"${where}, got ${JSON.stringify(value)}.`,
  badStartId: (value: unknown, where: string) =>
    `Option "startId" must be "0", "$" or a stream id like "1700000000000-0"${where}, got ${JSON.stringify(value)}.`,
  duplicateMessageHandler: (stream: string, group: string) =>
    `Two @MessagePattern handlers read stream "${stream}" in group "${group}": a request must have one answer. ` +
    'Give one of them another group or pattern.',
  crossSlotDeadLetter: (stream: string, dlq: string) =>
    `Dead-letter stream "${dlq}" hashes to another cluster slot than stream "${stream}", so an entry could not ` +
    `be moved there atomically. Give both the same hash tag (e.g. "{${stream}}:dlq") or leave deadLetterStream unset.`,
  mixedHandlerKinds: (stream: string, group: string) =>
    `Stream "${stream}" has both @EventPattern and @MessagePattern handlers in group "${group}"; ` +
    'each entry goes to one consumer of a group, so give them different groups.',
};
