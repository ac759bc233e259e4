// The conversations page: every conversation, searchable, refreshed while open.

import { useEffect, useState } from "preact/hooks";
import { api, Conversation, when } from "../api";
import { LIST_REFRESH_MS, useLoad } from "./common";

export function Conversations() {
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setQuery(search), 250);
    return () => clearTimeout(timer);
  }, [search]);
  const [list, error, reload] = useLoad(
    () => api<Conversation[]>(`/api/conversations${query ? `?q=${encodeURIComponent(query)}` : ""}`),
    [query],
  );
  // New conversations appear while the list is open (one small query every few seconds).
  useEffect(() => {
    const timer = setInterval(reload, LIST_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  return (
    <main class="page">
      <h1>Conversations</h1>
      <form class="row" role="search" onSubmit={(event) => event.preventDefault()}>
        <label>
          Search conversations
          <input id="conversation-search" type="search" value={search}
            onInput={(event) => setSearch(event.currentTarget.value)} />
        </label>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
      {list && list.length === 0 && <p class="muted">No conversations yet.</p>}
      {list && list.length > 0 && (
        <div class="scroll">
          <table id="conversations">
            <thead>
              <tr><th>Conversation</th><th>Platform</th><th>Last activity</th><th>Messages</th><th>Engaged</th><th>Observed</th></tr>
            </thead>
            <tbody>
              {list.map((row) => (
                <tr key={row.conversation_key} data-key={row.conversation_key}>
                  <td>
                    <a href={`#/c/${encodeURIComponent(row.conversation_key)}`}>{row.title || row.conversation_key}</a>
                    {row.title && <div class="muted">{row.conversation_key}</div>}
                  </td>
                  <td>{row.platform}</td>
                  <td>{when(row.last_activity_at)}</td>
                  <td>{row.message_count}</td>
                  <td>{row.engaged_count}</td>
                  <td>{row.observed_count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
