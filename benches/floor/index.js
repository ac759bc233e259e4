// The least a Worker of this design can do with an observed webhook: read the
// body, hand it by one RPC call to its conversation's Durable Object, which
// stores it with one SQL statement (a repeated id changes nothing) and answers;
// the Worker answers with that. No verification, no decision, no state: what is
// left is the runtime's cost of two invocations, one call and one statement.
import { DurableObject } from "cloudflare:workers";

export class Conversation extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS inbox (id TEXT PRIMARY KEY, body TEXT NOT NULL)");
  }

  post(id, body) {
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO inbox (id, body) VALUES (?, ?)", id, body);
    return { ok: true, decision: "observe" };
  }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/health") return Response.json({ ok: true });
    if (request.method !== "POST" || pathname !== "/webhooks/telegram") {
      return Response.json({ error: "not found" }, { status: 404 });
    }
    const body = await request.text();
    const update = JSON.parse(body);
    const conversation = env.CONVERSATION.getByName(`telegram:${update.message.chat.id}`);
    return Response.json(await conversation.post(String(update.update_id), body));
  },
};
