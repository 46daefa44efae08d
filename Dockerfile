# syntax=docker/dockerfile:1
# The service's image: one image, three roles (all-in-one by default; `gateway/main.ts` or
# `actors/main.ts` as the command for the gateway or a worker). TypeScript runs through tsx
# (a runtime dependency), so there is no build step: the first stage only installs the
# production dependencies, the second copies them and the sources.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json main.ts ./
COPY lib ./lib
COPY schema ./schema
COPY machines ./machines
COPY gateway ./gateway
COPY actors ./actors
COPY web ./web
COPY scripts/local-model.ts ./scripts/local-model.ts
# The local sentence model's static vectors, distilled at build time (~10 s) into
# node_modules/.cache: no container distils them again at its start.
RUN node --import tsx scripts/local-model.ts
# The image's own user (uid 1000 in node images), not root.
USER node
EXPOSE 3000
# /healthz answers while the process lives; a worker has no HTTP server, so its compose
# service replaces this check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=40s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=32", "--import", "tsx", "main.ts"]
