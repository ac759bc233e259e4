// The People page: every person the bot answers, the platform ids they are known
// by, and their profile (display name, time zone, language, role, bio, notes), which the
// operator edits here (role and bio only here: the bot's tools cannot change them);
// linking another platform id merges that id's record in.

import { useState } from "preact/hooks";
import {
  api,
  MAX_BIO_CHARS,
  MAX_NOTE_CHARS,
  MAX_NOTES_PER_PERSON,
  MAX_ROLE_CHARS,
  Person,
  post,
  put,
  remove,
  when,
} from "../api";
import { useLoad } from "./common";

function lastSeen(person: Person): number | null {
  return Math.max(0, ...person.platform_ids.map((known) => known.last_seen_at ?? 0)) || null;
}

function PersonCard({ person, onChanged }: { person: Person; onChanged: (notice: string) => void }) {
  const [name, setName] = useState(person.display_name);
  const [timeZone, setTimeZone] = useState(person.time_zone ?? "");
  const [language, setLanguage] = useState(person.language ?? "");
  const [role, setRole] = useState(person.role ?? "");
  const [bio, setBio] = useState(person.bio ?? "");
  const [notes, setNotes] = useState(person.notes.map((note) => note.text).join("\n"));
  const [platformKey, setPlatformKey] = useState("");
  const [error, setError] = useState("");
  const id = person.id;
  const label = person.display_name || id;
  const failed = (failure: Error) => setError(failure.message);
  const save = (event: Event) => {
    event.preventDefault();
    const body = { display_name: name, time_zone: timeZone, language, role, bio, notes: notes.split("\n") };
    put<Person>(`/api/people/${encodeURIComponent(id)}`, body).then(
      (saved) => (setError(""), onChanged(`Saved the profile of ${saved.display_name}.`)),
      failed,
    );
  };
  const link = (event: Event) => {
    event.preventDefault();
    post<{ person: Person; dropped: unknown[] }>(`/api/people/${encodeURIComponent(id)}/link`, { platform_key: platformKey.trim() }).then(
      (linked) => {
        setError("");
        const dropped = linked.dropped.length ? ` (${linked.dropped.length} note(s) did not fit and were dropped)` : "";
        onChanged(`Linked ${platformKey.trim()} to ${linked.person.display_name}${dropped}.`);
      },
      failed,
    );
  };
  const forget = () =>
    remove<{ removed: unknown[] }>(`/api/people/${encodeURIComponent(id)}/notes`).then(
      (done) => (setError(""), onChanged(`Forgot ${done.removed.length} note(s) about ${label}.`)),
      failed,
    );
  return (
    <li data-person={id}>
      <h2 id={`person-${id}`}>{label}{person.is_bot ? " (bot)" : ""}</h2>
      <p class="muted ids">
        Known as {person.platform_ids.map((known) => known.platform_key + (known.display_name ? ` (${known.display_name})` : "")).join(", ") || "no platform id"};
        last seen {when(lastSeen(person))}
      </p>
      <form class="stack" onSubmit={save} aria-labelledby={`person-${id}`}>
        <label>
          Display name
          <input id={`name-${id}`} required value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </label>
        <label>
          Time zone (IANA, the default for their schedules)
          <input id={`zone-${id}`} placeholder="Europe/Berlin" value={timeZone}
            onInput={(event) => setTimeZone(event.currentTarget.value)} />
        </label>
        <label>
          Language
          <input id={`language-${id}`} value={language} onInput={(event) => setLanguage(event.currentTarget.value)} />
        </label>
        <label>
          Role (the operator's word, shown to the bot as such; up to {MAX_ROLE_CHARS} characters)
          <input id={`role-${id}`} maxLength={MAX_ROLE_CHARS} placeholder="Engineering lead" value={role}
            onInput={(event) => setRole(event.currentTarget.value)} />
        </label>
        <label>
          Bio (up to {MAX_BIO_CHARS} characters)
          <textarea id={`bio-${id}`} rows={2} maxLength={MAX_BIO_CHARS} value={bio}
            onInput={(event) => setBio(event.currentTarget.value)} />
        </label>
        <label>
          Notes, one per line (at most {MAX_NOTES_PER_PERSON}, each up to {MAX_NOTE_CHARS} characters)
          <textarea id={`notes-${id}`} rows={4} value={notes} onInput={(event) => setNotes(event.currentTarget.value)} />
        </label>
        <div class="actions">
          <button class="primary" type="submit" aria-label={`Save the profile of ${label}`}>Save</button>
          <button type="button" aria-label={`Forget the notes about ${label}`} onClick={forget}>Forget notes</button>
        </div>
      </form>
      <form class="row" onSubmit={link} aria-label={`Link a platform id to ${label}`}>
        <label>
          Link a platform id
          <input id={`link-${id}`} placeholder="slack:U123" required value={platformKey}
            onInput={(event) => setPlatformKey(event.currentTarget.value)} />
        </label>
        <button type="submit" aria-label={`Link the id to ${label}`}>Link</button>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
    </li>
  );
}

export function PeoplePage() {
  const [query, setQuery] = useState("");
  const [search, setSearch] = useState("");
  const [notice, setNotice] = useState("");
  const [people, error, reload] = useLoad(
    () => api<Person[]>(search ? `/api/people?q=${encodeURIComponent(search)}` : "/api/people"),
    [search],
  );
  const changed = (text: string) => (setNotice(text), reload());
  return (
    <main class="page">
      <h1>People</h1>
      <p class="muted">
        Everyone the bot has answered. A profile is shown to the bot only in turns where that person writes, on any of
        their linked platform ids; the bot keeps it with its person_note tool and forgets it when the person asks.
      </p>
      <form class="row" role="search" onSubmit={(event) => (event.preventDefault(), setSearch(query.trim()))}>
        <label>
          Search people
          <input id="people-query" type="search" value={query} onInput={(event) => setQuery(event.currentTarget.value)} />
        </label>
        <button class="primary" type="submit">Search</button>
      </form>
      <p aria-live="polite" class="muted" id="people-notice">{notice}</p>
      {error && <p role="alert" class="error">{error}</p>}
      {people && people.length === 0 && <p class="muted">No people yet.</p>}
      <ul class="people" id="people">
        {(people ?? []).map((person) => (
          <PersonCard key={`${person.id}:${person.updated_at}:${person.platform_ids.length}`} person={person} onChanged={changed} />
        ))}
      </ul>
    </main>
  );
}
