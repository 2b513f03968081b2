# picklebot in a container (docs/operations/deploy.md, "Docker and Docker Compose").
#   docker compose up -d            # picklebot, SQLite in the workspace volume
#   docker compose --profile postgres up -d   # and a PostgreSQL next to it

# Build stage: the compiler better-sqlite3 needs when no prebuilt binary fits.
FROM node:20-slim AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Runtime stage: no compiler, a non-root user, the workspace as a volume.
FROM node:20-slim
# tini as PID 1: forwards SIGTERM to node and reaps the processes the bash tool leaves.
# bubblewrap: the bash tool's sandbox (needs `security_opt: seccomp=unconfined` or
# `tools.bash.sandbox: none`; see docs/operations/security.md).
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini bubblewrap ca-certificates \
  && rm -rf /var/lib/apt/lists/*
# glibc's allocator: two arenas, and freed memory given back (sharp's threads otherwise
# keep 100 MiB and more after a burst of photos; docs/decisions/media-memory.md).
ENV NODE_ENV=production \
    PICKLEBOT_WORKSPACE=/workspace \
    PICKLEBOT_INSTANCE_ID=picklebot \
    MALLOC_ARENA_MAX=2 \
    MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY templates ./templates
COPY agents ./agents
COPY crons ./crons
COPY deploy/healthcheck.js ./deploy/healthcheck.js
RUN mkdir -p /workspace && chown node:node /workspace
USER node
VOLUME /workspace
WORKDIR /workspace
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
  CMD ["node", "/app/deploy/healthcheck.js"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/bin/picklebot.js"]
CMD ["server", "--json"]
