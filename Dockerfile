# The orders demo app (apps/orders-demo) as an image: built in one stage, run as the unprivileged
# "node" user in another that holds only the compiled app, the library and the runtime packages.
#   docker build -t orders-demo .        (docker compose up builds it too)
#   docker run -e REDIS_URL=redis://redis:6379 -p 3000:3000 orders-demo

# Build: the library (scripts/build-lib.mjs) and the demo (tsc), with every dev dependency.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/nest-redis-streams/package.json libs/nest-redis-streams/package.json
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY libs ./libs
COPY apps ./apps
RUN npm run build

# Runtime packages only: the production dependencies, plus the demo's metrics and databases
# (prom-client, pg, PGlite: dev dependencies of the library), at the lock file's versions.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/nest-redis-streams/package.json libs/nest-redis-streams/package.json
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm install --no-save --ignore-scripts --no-audit --no-fund $(node -e " \
    const lock = require('./package-lock.json').packages; \
    console.log(['prom-client', 'pg', '@electric-sql/pglite'].map((n) => n + '@' + lock['node_modules/' + n].version).join(' '))")

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY --from=deps /app/package.json ./package.json
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/libs/nest-redis-streams/package.json ./libs/nest-redis-streams/package.json
COPY --from=build /app/libs/nest-redis-streams/dist ./libs/nest-redis-streams/dist
COPY --from=build /app/dist/apps/orders-demo ./dist/apps/orders-demo
# Not root: the app needs no privilege, and writes nothing outside the embedded database's temp dir.
USER node
EXPOSE 3000
# SIGTERM reaches node directly (exec form): the server hands unfinished entries back and exits.
CMD ["node", "dist/apps/orders-demo/main.js"]
