/** Lua: `now`, Redis' clock in milliseconds (TIME), for scripts that stamp or compare times. */
export const REDIS_NOW_MS = `local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)`;
