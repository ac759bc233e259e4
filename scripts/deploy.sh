#!/usr/bin/env bash
# `make deploy`: creates what is missing (D1 database, queues, Vectorize index),
# records the ids in wrangler.toml, applies the remote migrations, uploads the
# secrets from .prod.vars, deploys the `production` environment and registers the
# platforms. Idempotent: a second run creates nothing. The steps are in deploy.mjs
# (Node, which wrangler needs anyway, reads the config and speaks JSON and HTTP).
set -euo pipefail
exec node "$(dirname "$0")/deploy.mjs" "$@"
