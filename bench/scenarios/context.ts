import type { Redis } from 'ioredis';

/** What every scenario gets from bench/main. */
export interface BenchContext {
  url: string;
  /** Connection of the parent for set-up and checks; consumers and producers open their own. */
  redis: Redis;
  /** Run the transport's drain consumer under --cpu-prof (`npm run bench -- --profile`). */
  profileDir: string | null;
  log(message: string): void;
}
