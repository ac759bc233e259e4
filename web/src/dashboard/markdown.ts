// Markdown to safe HTML for the identity previews. marked renders; raw HTML in
// the source is shown as text, never as markup; DOMPurify then cleans what is
// left (javascript: links and the like). Loaded on demand (a chunk of its own),
// so the dashboard's first load stays small.

import { marked } from "marked";
import DOMPurify from "dompurify";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

marked.use({ gfm: true, renderer: { html: ({ text }) => escapeHtml(text) } });

export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false }) as string;
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    // The page's CSP refuses inline styles and outside images anyway.
    FORBID_TAGS: ["style", "img", "form", "input", "button", "textarea", "select"],
    FORBID_ATTR: ["style", "class", "id"],
  });
}
