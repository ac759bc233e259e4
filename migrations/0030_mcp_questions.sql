-- An MCP server's question (elicitation) to the person who started the work:
-- the approval of kind `question` that asks it (`approvals`), the request's
-- params (the form) and the person's typed answer once given.
CREATE TABLE IF NOT EXISTS mcp_questions (
    approval_id TEXT PRIMARY KEY,
    params TEXT NOT NULL,
    answer TEXT,
    agent TEXT NOT NULL DEFAULT 'default'
);
