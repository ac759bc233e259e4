// The dashboard's frame: signing in with the admin token, and the navigation.

import { useEffect, useState } from "preact/hooks";
import { ApiError, api, post } from "../api";

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      await post("/api/session", { token });
      onSignedIn();
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 401 ? "That token is not right." : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="page narrow">
      <h1>edgebot dashboard</h1>
      <form onSubmit={submit} class="row" aria-label="Sign in">
        <label>
          Admin token
          <input id="token" type="password" autocomplete="current-password" required value={token}
            onInput={(event) => setToken(event.currentTarget.value)} />
        </label>
        <button class="primary" type="submit" disabled={busy}>Sign in</button>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
    </main>
  );
}

export function Nav({ current, onSignOut }: { current: string; onSignOut: () => void }) {
  const link = (href: string, label: string, page: string) => (
    <a href={href} aria-current={current === page ? "page" : undefined}>{label}</a>
  );
  return (
    <nav class="top" aria-label="Sections">
      <strong>edgebot</strong>
      {link("#/", "Conversations", "conversations")}
      {link("#/memory", "Memory", "memory")}
      {link("#/people", "People", "people")}
      {link("#/tasks", "Tasks & schedules", "tasks")}
      {link("#/tools", "Tools", "tools")}
      {link("#/spend", "Spend", "spend")}
      {link("#/identity", "Identity", "identity")}
      {link("#/settings", "Settings", "settings")}
      {link("#/agents", "Agents", "agents")}
      {link("#/links", "Links", "links")}
      {link("#/skills", "Skills", "skills")}
      <a href="/chat/">Web chat</a>
      <button type="button" onClick={onSignOut}>Sign out</button>
    </nav>
  );
}

/** What `/api/status` says the setup still lacks. */
interface Setup {
  setup: { model: { ready: boolean; explain?: string; problem?: { setting: string } } };
}

/** A banner over every page while no model can answer: what is missing and how to fix it. */
export function SetupBanner() {
  const [problem, setProblem] = useState("");
  useEffect(() => {
    // Asked again now and then (and soon after a failed ask), so a fix or a
    // new fault shows without a reload and a busy moment hides nothing.
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const check = () =>
      api<Setup>("/api/status").then(
        (status) => {
          if (!live) return;
          setProblem(status.setup.model.ready ? "" : status.setup.model.explain ?? "no model can answer");
          timer = setTimeout(check, 30_000);
        },
        () => live && (timer = setTimeout(check, 2_000)),
      );
    check();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);
  if (!problem) return null;
  return (
    <p id="setup-banner" class="banner" role="alert">
      <strong>Not set up yet:</strong> {problem}. People who write to the bot are told it is not set up.
    </p>
  );
}
