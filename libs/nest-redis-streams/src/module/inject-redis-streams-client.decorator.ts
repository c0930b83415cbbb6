import { Inject } from '@nestjs/common';
import { REDIS_STREAMS_CLIENT } from './redis-streams.constants.js';

/** Injects the module's RedisStreamsClient: `constructor(@InjectRedisStreamsClient() client: RedisStreamsClient)`. */
export const InjectRedisStreamsClient = (): PropertyDecorator & ParameterDecorator => Inject(REDIS_STREAMS_CLIENT);
