#!/usr/bin/env bash
# Registers edgebot's Discord commands (/ask and the "Ask edgebot" message
# command) for the application, replacing its global command list.
# Needs DISCORD_APPLICATION_ID and DISCORD_BOT_TOKEN (from the environment or,
# for what the environment lacks, .dev.vars); DISCORD_API_BASE defaults to
# Discord's API. `make deploy` passes the production values in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

for name in DISCORD_APPLICATION_ID DISCORD_BOT_TOKEN DISCORD_API_BASE; do
  if [ -z "${!name:-}" ] && [ -f .dev.vars ]; then
    value=$(sed -n "s/^[[:space:]]*$name[[:space:]]*=[[:space:]]*//p" .dev.vars | tail -n 1)
    value=${value%\"}; value=${value#\"}
    export "$name=$value"
  fi
done
: "${DISCORD_APPLICATION_ID:?set DISCORD_APPLICATION_ID}" "${DISCORD_BOT_TOKEN:?set DISCORD_BOT_TOKEN}"
API_BASE="${DISCORD_API_BASE:-https://discord.com/api/v10}"

# Kept in step with platforms::discord::command_definitions (a unit test checks it).
curl --fail-with-body -sS -X PUT "$API_BASE/applications/$DISCORD_APPLICATION_ID/commands" \
  -H @<(printf 'Authorization: Bot %s\n' "$DISCORD_BOT_TOKEN") \
  -H "Content-Type: application/json" \
  --data-binary @scripts/discord-commands.json
echo
echo "registered: /ask and the 'Ask edgebot' message command"
