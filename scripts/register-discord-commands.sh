#!/usr/bin/env bash
# Registers edgebot's Discord commands (/ask and the "Ask edgebot" message
# command) for the application, replacing its global command list.
# Needs DISCORD_APPLICATION_ID and DISCORD_BOT_TOKEN (from the environment or
# .dev.vars); DISCORD_API_BASE defaults to Discord's API.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -f .dev.vars ]; then
  # shellcheck disable=SC1091
  set -a; . ./.dev.vars; set +a
fi
: "${DISCORD_APPLICATION_ID:?set DISCORD_APPLICATION_ID}" "${DISCORD_BOT_TOKEN:?set DISCORD_BOT_TOKEN}"
API_BASE="${DISCORD_API_BASE:-https://discord.com/api/v10}"

# Kept in step with platforms::discord::command_definitions (a unit test checks it).
curl --fail-with-body -sS -X PUT "$API_BASE/applications/$DISCORD_APPLICATION_ID/commands" \
  -H "Authorization: Bot $DISCORD_BOT_TOKEN" \
  -H "Content-Type: application/json" \
  --data-binary @scripts/discord-commands.json
echo
echo "registered: /ask and the 'Ask edgebot' message command"
