// The operator's dashboard: conversations, one conversation live, memory, people,
// tasks and schedules, tools (MCP servers and approvals), spend, identity, settings.
// Hash routes keep it one static page; each page lives in its own file under dashboard/.

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, remove } from "./api";
import { SignIn, Nav, SetupBanner } from "./dashboard/shell";
import { Conversations } from "./dashboard/conversations";
import { ConversationPage } from "./dashboard/conversation";
import { MemoryPage } from "./dashboard/memory";
import { TasksPage } from "./dashboard/tasks";
import { SpendPage } from "./dashboard/spend";
import { PeoplePage } from "./dashboard/people";
import { SettingsPage } from "./dashboard/settings";
import { IdentityPage } from "./dashboard/identity";
import { ToolsPage } from "./dashboard/tools";
import { AgentsPage } from "./dashboard/agents";
import { LinksPage } from "./dashboard/links";
import { SkillsPage } from "./dashboard/skills";

/** The pages with no parameter, after the conversation list. */
const PAGES = ["memory", "people", "tasks", "tools", "spend", "identity", "settings", "agents", "links", "skills"] as const;
type Page = (typeof PAGES)[number];

type Route = { page: "conversations" } | { page: "conversation"; key: string } | { page: Page };

function route(hash: string): Route {
  const [, page = "", ...rest] = hash.replace(/^#/, "").split("/");
  if (page === "c" && rest.length) return { page: "conversation", key: decodeURIComponent(rest.join("/")) };
  if ((PAGES as readonly string[]).includes(page)) return { page: page as Page };
  return { page: "conversations" };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

function App() {
  const [signedIn, setSignedIn] = useState<boolean | null>(null);
  const hash = useHash();
  useEffect(() => {
    api("/api/session").then(() => setSignedIn(true), () => setSignedIn(false));
    const signedOut = () => setSignedIn(false);
    addEventListener("signed-out", signedOut);
    return () => removeEventListener("signed-out", signedOut);
  }, []);
  if (signedIn === null) return <p class="page">Loading…</p>;
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const current = route(hash);
  const signOut = () => remove("/api/session").finally(() => setSignedIn(false));
  return (
    <>
      <Nav current={current.page === "conversation" ? "conversations" : current.page} onSignOut={signOut} />
      <SetupBanner />
      {current.page === "conversations" && <Conversations />}
      {current.page === "conversation" && <ConversationPage conversationKey={current.key} />}
      {current.page === "memory" && <MemoryPage />}
      {current.page === "people" && <PeoplePage />}
      {current.page === "tasks" && <TasksPage />}
      {current.page === "tools" && <ToolsPage />}
      {current.page === "spend" && <SpendPage />}
      {current.page === "identity" && <IdentityPage />}
      {current.page === "settings" && <SettingsPage />}
      {current.page === "agents" && <AgentsPage />}
      {current.page === "links" && <LinksPage />}
      {current.page === "skills" && <SkillsPage />}
    </>
  );
}

render(<App />, document.getElementById("app")!);
