// The memory page: search memories, share or unshare and delete them; the bulletin.

import { useState } from "preact/hooks";
import { api, Memory, MEMORY_TYPES, post, remove, SEARCH_MODES, when } from "../api";
import { useLoad } from "./common";

export function scopeLabel(scope: string): string {
  if (scope === "shared") return "everyone";
  if (scope === "operators") return "operators only";
  return scope;
}

export function MemoryPage() {
  const [form, setForm] = useState({ query: "", mode: "hybrid", type: "" });
  const [search, setSearch] = useState(form);
  const [notice, setNotice] = useState("");
  const [found, error, reload] = useLoad(() => {
    const params = new URLSearchParams({ mode: search.mode, limit: "50" });
    if (search.query) params.set("query", search.query);
    if (search.type) params.set("memory_type", search.type);
    return api<Memory[]>(`/api/memories?${params}`);
  }, [search]);
  const [bulletin] = useLoad(() => api<{ bulletin: string; built_at: number | null }>("/api/memory/bulletin"), []);
  const shown = (found ?? []).filter((memory) => !search.type || memory.memory_type === search.type);
  const forget = async (memory: Memory) => {
    await remove(`/api/memories/${encodeURIComponent(memory.id)}`);
    setNotice(`Deleted memory ${memory.id}.`);
    reload();
  };
  // Only here (and through the admin API) does a memory become shared: no chat can share or change one.
  const share = async (memory: Memory, shared: boolean) => {
    const now = await post<Memory>(`/api/memories/${encodeURIComponent(memory.id)}/${shared ? "share" : "unshare"}`);
    setNotice(shared ? `Shared memory ${memory.id} with every conversation.` : `Memory ${memory.id} is private to ${now.scope} again.`);
    reload();
  };
  return (
    <main class="page">
      <h1>Memory</h1>
      <form class="row" role="search" onSubmit={(event) => (event.preventDefault(), setSearch({ ...form }))}>
        <label>
          Search memories
          <input id="memory-query" type="search" value={form.query}
            onInput={(event) => setForm({ ...form, query: event.currentTarget.value })} />
        </label>
        <label>
          Mode
          <select id="memory-mode" value={form.mode} onChange={(event) => setForm({ ...form, mode: event.currentTarget.value })}>
            {SEARCH_MODES.map((mode) => <option value={mode}>{mode}</option>)}
          </select>
        </label>
        <label>
          Type
          <select id="memory-type" value={form.type} onChange={(event) => setForm({ ...form, type: event.currentTarget.value })}>
            <option value="">any</option>
            {MEMORY_TYPES.map((type) => <option value={type}>{type}</option>)}
          </select>
        </label>
        <button class="primary" type="submit">Search</button>
      </form>
      <p aria-live="polite" class="muted" id="memory-notice">{notice}</p>
      {error && <p role="alert" class="error">{error}</p>}
      <div class="scroll">
        <table id="memories">
          <thead><tr><th>Memory</th><th>Type</th><th>Importance</th><th>Seen by</th><th>Saved</th><th></th></tr></thead>
          <tbody>
            {shown.map((memory) => (
              <tr key={memory.id} data-memory={memory.id}>
                <td class="text">{memory.content}</td>
                <td>{memory.memory_type}</td>
                <td>{memory.importance.toFixed(2)}</td>
                <td>{scopeLabel(memory.scope)}</td>
                <td>{when(memory.created_at)}</td>
                <td>
                  {memory.scope === "shared"
                    ? <button type="button" aria-label={`Unshare memory ${memory.id}`} onClick={() => share(memory, false)}>Unshare</button>
                    : <button type="button" aria-label={`Share memory ${memory.id}`} onClick={() => share(memory, true)}>Share</button>}
                  <button type="button" aria-label={`Delete memory ${memory.id}`} onClick={() => forget(memory)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {found && shown.length === 0 && <p class="muted">No memories found.</p>}
      <h2>Bulletin</h2>
      <p class="muted">Built {when(bulletin?.built_at)}</p>
      <p class="text" id="bulletin">{bulletin?.bulletin || "No bulletin yet."}</p>
    </main>
  );
}
