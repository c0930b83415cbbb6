import type { Logger } from '@nestjs/common';
import { probeKeyNear, trimAuditKey } from '../keys/index.js';
import { type ServerCapabilities, reportCapabilities } from '../redis/capabilities.js';
import { type ProbedRedisFeatures, probeRedisFeatures } from '../redis/redis-features.js';
import type { ScriptedRedis } from '../redis/scripts.js';

/** What the server learns of its Redis once per listen(), probing next to `firstStream`. */
export async function probeAtListen(
  commands: ScriptedRedis,
  firstStream: string | undefined,
  logger: Logger,
): Promise<{ features: ProbedRedisFeatures; capabilities: ServerCapabilities }> {
  // A Redis without XAUTOCLAIM fails here, naming its version and the minimum. The trim-gap
  // probe writes a scratch stream beside the first stream's trim-audit hash: in its slot, and
  // inside the key patterns a consumer's ACL grants.
  const near = firstStream !== undefined;
  const features = await probeRedisFeatures(commands, near ? `${trimAuditKey(firstStream)}:probe` : undefined);
  // One log line of what each node offers, and a warning for a node below its patch floor.
  // The capability probes use a key next to a consumed stream, inside a restricted user's patterns.
  const capabilities = await reportCapabilities(commands, logger, near ? probeKeyNear(firstStream) : undefined);
  return { features, capabilities };
}
