// The identity page: SOUL, IDENTITY and USER, each with an editor, a preview of
// its Markdown, its saved versions (who, when) and Restore. A save reaches the
// next turn of every conversation.

import { useEffect, useState } from "preact/hooks";
import { api, post, put, when } from "../api";
import { useLoad } from "./common";
import { VersionsTable } from "./versions";

export interface IdentityDocument {
  name: string;
  file: string;
  text: string;
  version: number;
  author: string;
  updated_at: number | null;
  restored_from: number | null;
  is_default: boolean;
  chars: number;
  default_text: string;
  saved?: boolean;
}

export interface IdentityVersion {
  version: number;
  text: string;
  author: string;
  created_at: number | null;
  restored_from: number | null;
}

interface Documents {
  documents: IdentityDocument[];
  limits: { document_chars: number; override_chars: number; versions_kept: number };
}

type Render = (source: string) => string;
let renderer: Promise<Render> | null = null;

/// The Markdown renderer, loaded once on first use.
export function useMarkdown(): Render | null {
  const [render, setRender] = useState<Render | null>(null);
  useEffect(() => {
    renderer ??= import("./markdown").then((module) => module.renderMarkdown);
    // Unloadable (offline): the preview stays plain text.
    renderer.then((loaded) => setRender(() => loaded), () => undefined);
  }, []);
  return render;
}

/// A preview of `source`: sanitized HTML (see markdown.ts), or the plain text until the renderer loads.
export function Preview({ id, label, source }: { id: string; label: string; source: string }) {
  const render = useMarkdown();
  return (
    <section id={id} class="preview" aria-label={label}>
      {source.trim() === "" ? (
        <p class="muted">Empty: this section leaves the prompt.</p>
      ) : render ? (
        <div dangerouslySetInnerHTML={{ __html: render(source) }} />
      ) : (
        <div class="text">{source}</div>
      )}
    </section>
  );
}

export function IdentityPage() {
  const [loaded, error, reload] = useLoad(() => api<Documents>("/api/identity"), []);
  return (
    <main class="page">
      <h1>Identity</h1>
      <p class="muted">
        Every conversation's prompt carries these after its instructions and before the memory bulletin; branches get
        them too, workers do not. A save reaches the next turn of every conversation. A conversation's own override is
        on its page.
      </p>
      {error && <p role="alert" class="error">{error}</p>}
      {!loaded && !error && <p>Loading…</p>}
      {loaded &&
        loaded.documents.map((document) => (
          <DocumentEditor key={document.name} document={document} limits={loaded.limits} onChanged={reload} />
        ))}
    </main>
  );
}

function DocumentEditor({
  document,
  limits,
  onChanged,
}: {
  document: IdentityDocument;
  limits: Documents["limits"];
  onChanged: () => void;
}) {
  const { name, file } = document;
  const [text, setText] = useState(document.text);
  const [notice, setNotice] = useState("");
  const [failure, setFailure] = useState("");
  const [busy, setBusy] = useState(false);
  const [versions, versionsError, reloadVersions] = useLoad(
    () => api<{ versions: IdentityVersion[] }>(`/api/identity/${name}/versions`).then((listed) => listed.versions),
    [name, document.version],
  );
  // A save or restore elsewhere (or here) brings the stored text into the editor.
  useEffect(() => setText(document.text), [document.version, document.text]);
  const chars = [...text.trimEnd()].length;
  const over = chars > limits.document_chars;
  const changed = text.trimEnd() !== document.text;
  const act = async (work: () => Promise<IdentityDocument>, done: (result: IdentityDocument) => string) => {
    setBusy(true);
    setFailure("");
    setNotice("");
    try {
      const result = await work();
      setNotice(done(result));
      onChanged();
      reloadVersions();
    } catch (error) {
      setFailure((error as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const save = (event: Event) => {
    event.preventDefault();
    act(
      () => put<IdentityDocument>(`/api/identity/${name}`, { text }),
      (result) => (result.saved ? `Saved ${file} as version ${result.version}.` : `${file} is unchanged.`),
    );
  };
  const restore = (version: number) =>
    act(
      () => post<IdentityDocument>(`/api/identity/${name}/restore/${version}`),
      (result) =>
        result.saved
          ? `Restored version ${version} of ${file} as version ${result.version}.`
          : `${file} already reads as version ${version}.`,
    );
  return (
    <section class="identity" aria-labelledby={`heading-${name}`}>
      <h2 id={`heading-${name}`}>{file}</h2>
      <p class="muted">
        {document.is_default
          ? "The shipped default."
          : `Version ${document.version}, by ${document.author}, ${when(document.updated_at)}.`}
      </p>
      <form class="stack" onSubmit={save} aria-label={`Edit ${file}`}>
        <label for={`identity-${name}`}>Text of {file} (Markdown)</label>
        <textarea id={`identity-${name}`} rows={10} value={text} aria-describedby={`count-${name}`}
          onInput={(event) => setText(event.currentTarget.value)} />
        <div class="row">
          <span id={`count-${name}`} class={over ? "error" : "muted"}>
            {chars} / {limits.document_chars} characters{over ? ": too long to save" : ""}
          </span>
          <button class="primary" type="submit" disabled={busy || over || !changed}>Save {file}</button>
        </div>
      </form>
      <p id={`notice-${name}`} role="status" class="muted">{notice}</p>
      {failure && <p role="alert" class="error">{failure}</p>}
      <h3>Preview</h3>
      <Preview id={`preview-${name}`} label={`Preview of ${file}`} source={text} />
      <h3>Versions</h3>
      <p class="muted">The newest {limits.versions_kept} are kept; version 0 is the shipped default.</p>
      {versionsError && <p role="alert" class="error">{versionsError}</p>}
      {versions && (
        <div class="scroll">
          <VersionsTable id={`versions-${name}`} name={file} versions={versions} current={document.version}
            heading="Begins" describe={(version) => `${version.text.slice(0, 60)}${version.text.length > 60 ? "…" : ""}`}
            busy={busy} restore={restore} />
        </div>
      )}
    </section>
  );
}

interface ConversationOverride {
  conversation: string;
  text: string | null;
  author: string | null;
  updated_at: number | null;
  max_chars: number;
}

/// One conversation's override of the identity (on the conversation's page):
/// placed after the three documents in this conversation's prompts only.
export function OverrideEditor({ conversationKey }: { conversationKey: string }) {
  const path = `/api/channels/${encodeURIComponent(conversationKey)}/identity`;
  const [current, error, reload] = useLoad(() => api<ConversationOverride>(path), [conversationKey]);
  const [text, setText] = useState("");
  const [notice, setNotice] = useState("");
  const [failure, setFailure] = useState("");
  const [busy, setBusy] = useState(false);
  useEffect(() => setText(current?.text ?? ""), [current?.text, current?.updated_at]);
  if (error) return <p role="alert" class="error">{error}</p>;
  if (!current) return null;
  const chars = [...text.trimEnd()].length;
  const over = chars > current.max_chars;
  const act = async (work: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setFailure("");
    setNotice("");
    try {
      await work();
      setNotice(done);
      reload();
    } catch (failed) {
      setFailure((failed as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const save = (event: Event) => {
    event.preventDefault();
    act(() => put(path, { text }), "Saved: the next turn here uses it.");
  };
  return (
    <section aria-labelledby="override-heading">
      <h2 id="override-heading">Identity override</h2>
      <p class="muted">
        {current.text === null
          ? "None: this conversation uses SOUL, IDENTITY and USER as they are."
          : `Set by ${current.author}, ${when(current.updated_at)}.`}
      </p>
      <form class="stack" onSubmit={save} aria-label="Identity override for this conversation">
        <label for="identity-override">Override for this conversation only (e.g. a different tone)</label>
        <textarea id="identity-override" rows={3} value={text} aria-describedby="override-count"
          onInput={(event) => setText(event.currentTarget.value)} />
        <div class="row">
          <span id="override-count" class={over ? "error" : "muted"}>{chars} / {current.max_chars} characters</span>
          <button class="primary" type="submit" disabled={busy || over || text.trim() === ""}>Save override</button>
          {current.text !== null && (
            <button type="button" disabled={busy} onClick={() => act(() => api(path, { method: "DELETE" }), "Removed.")}>
              Remove override
            </button>
          )}
        </div>
      </form>
      <p id="override-notice" role="status" class="muted">{notice}</p>
      {failure && <p role="alert" class="error">{failure}</p>}
    </section>
  );
}
