/**
 * The names a model is offered a company's tools under (contract.md § Agent actions). The API
 * checks the names it stores by these rules and shows each MCP tool's name as offered; the
 * worker offers the tools under the very same names.
 */

/** An action's name is the function name the model sees: what OpenAI-compatible servers accept. */
export const ACTION_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9_-]{0,63}$';
/** An MCP server's name prefixes its tools' names. */
export const MCP_SERVER_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9_-]{0,31}$';
/** The longest function name a model server accepts. */
export const MAX_TOOL_NAME_CHARS = 64;

/**
 * The name an MCP tool is offered under: `<server name>__<tool name>`, every character
 * outside `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters. Two tools may come out the
 * same (`a.b` and `a_b`, or a cut): the later one is not offered.
 */
export function offeredToolName(serverName: string, toolName: string): string {
  return `${serverName}__${toolName}`.replace(/[^A-Za-z0-9_-]/gu, '_').slice(0, MAX_TOOL_NAME_CHARS);
}
