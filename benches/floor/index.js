// The least a Worker of this design can do with a webhook. The Worker reads the
// body and hands it by one RPC call to its conversation's Durable Object, which
// stores it with one SQL statement (a repeated id changes nothing) and answers;
// the Worker answers with that. No verification, no decision, no state: what is
// left of an observed message is the runtime's cost of two invocations, one
// call and one statement.
//
// A private chat's message is answered, as edgebot answers a DM, by the least
// turn this design can run. The message sets its object's alarm at once
// unless a turn is running; the alarm runs turns while messages wait, each
// taking every message that waits (what comes in meanwhile joins the next, as
// in edgebot). A turn reads today's spend in D1 (the budget), shows "typing",
// asks the model, records the reply, sends it, marks it sent and commits the
// history and the spend to D1 in one batch: two D1 round trips, three calls
// out and three statements. No prompt, no memory, no log lines, no recovery.
import { DurableObject } from "cloudflare:workers";

const SPEND_TABLE = "CREATE TABLE IF NOT EXISTS spend (day TEXT, subject TEXT, tokens INTEGER, PRIMARY KEY (day, subject))";
const HISTORY_TABLE = "CREATE TABLE IF NOT EXISTS history (id TEXT PRIMARY KEY, conversation TEXT, role TEXT, content TEXT)";

export class Conversation extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      `CREATE TABLE IF NOT EXISTS inbox (id TEXT PRIMARY KEY, body TEXT NOT NULL, waiting INTEGER NOT NULL);
       CREATE TABLE IF NOT EXISTS outbox (id TEXT PRIMARY KEY, text TEXT NOT NULL, sent INTEGER NOT NULL)`,
    );
  }

  post(id, body, answer) {
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO inbox (id, body, waiting) VALUES (?, ?, ?)", id, body, answer ? 1 : 0);
    if (!answer) return { ok: true, decision: "observe" };
    if (!this.answering) this.ctx.storage.setAlarm(Date.now());
    return { ok: true, decision: "answer" };
  }

  async alarm() {
    this.answering = true;
    try {
      while (await this.turn());
    } finally {
      this.answering = false;
    }
  }

  /// One turn over every waiting message; false when none waited.
  async turn() {
    const sql = this.ctx.storage.sql;
    const waiting = sql.exec("UPDATE inbox SET waiting = 0 WHERE waiting = 1 RETURNING id, body").toArray();
    if (waiting.length === 0) return false;
    const messages = waiting.map((row) => JSON.parse(row.body).message);
    const chat = messages[0].chat.id;
    const person = `telegram:${messages[0].from.id}`;
    const day = new Date().toISOString().slice(0, 10);
    const db = this.env.DB;
    // The tables are made in the batches that use them: no migration step.
    await db.batch([
      db.prepare(SPEND_TABLE),
      db.prepare("SELECT sum(tokens) AS tokens FROM spend WHERE day = ? AND subject IN (?, ?)").bind(day, person, `telegram:${chat}`),
    ]);
    const telegram = `${this.env.TELEGRAM_API_BASE}/bot${this.env.TELEGRAM_BOT_TOKEN}`;
    const post = (url, body, headers = {}) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    await post(`${telegram}/sendChatAction`, { chat_id: chat, action: "typing" });
    const model = await post(
      `${this.env.OPENAI_BASE_URL}/chat/completions`,
      { model: "floor", messages: messages.map((message) => ({ role: "user", content: message.text })) },
      { authorization: `Bearer ${this.env.OPENAI_API_KEY}` },
    ).then((response) => response.json());
    const text = model.choices[0].message.content;
    const turn = waiting[waiting.length - 1].id;
    sql.exec("INSERT OR IGNORE INTO outbox (id, text, sent) VALUES (?, ?, 0)", turn, text);
    await post(`${telegram}/sendMessage`, { chat_id: chat, text });
    sql.exec("UPDATE outbox SET sent = 1 WHERE id = ?", turn);
    const tokens = model.usage?.total_tokens ?? 0;
    const rows = [...messages.map((message) => [`${message.message_id}`, "user", message.text]), [`reply:${turn}`, "assistant", text]];
    await db.batch([
      db.prepare(SPEND_TABLE),
      db.prepare(HISTORY_TABLE),
      db.prepare("INSERT OR IGNORE INTO history (id, conversation, role, content) SELECT value ->> '$[0]', ?, value ->> '$[1]', value ->> '$[2]' FROM json_each(?)")
        .bind(`telegram:${chat}`, JSON.stringify(rows)),
      db.prepare("INSERT INTO spend (day, subject, tokens) VALUES (?1, ?2, ?3), (?1, ?4, ?3) ON CONFLICT (day, subject) DO UPDATE SET tokens = tokens + excluded.tokens")
        .bind(day, person, tokens, `telegram:${chat}`),
    ]);
    return true;
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
    const answer = update.message.chat.type === "private";
    return Response.json(await conversation.post(String(update.update_id), body, answer));
  },
};
