// The workspace overview in VS Code's chat: the #filescout-overview language model tool and the
// @filescout participant's /overview command. Only the VS Code wrapping lives here; the request,
// its checks and the rendering are overview.ts's, which the Node tests drive.

import * as vscode from "vscode";
import { OVERVIEW_COMMAND, OverviewConnection, getOverview, invokeOverviewTool, overviewInvocationMessage, overviewMarkdown } from "./overview";
import { CancelledError, QueryError } from "./relevantFiles";

/** A folder's running server, as the extension finds it for a chat (the active editor's folder,
 * else the first); finding none throws a NoServerError that says why. */
export interface OverviewServer {
  connection: OverviewConnection;
  folder: vscode.Uri;
  name: string;
}

/** #filescout-overview in any chat, and a tool agent mode may call: the `<filescout-overview>`
 * block. Read-only, so it asks for no confirmation. */
export function overviewTool(serverFor: () => Promise<OverviewServer>): vscode.LanguageModelTool<unknown> {
  return {
    prepareInvocation(options) {
      return { invocationMessage: overviewInvocationMessage(options.input) };
    },
    async invoke(options, token) {
      try {
        const server = await serverFor();
        const text = await invokeOverviewTool(server.connection, options.input, {
          tokenBudget: options.tokenizationOptions?.tokenBudget,
          cancel: token,
        });
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(text)]);
      } catch (error) {
        throw error instanceof CancelledError ? new vscode.CancellationError() : error;
      }
    },
  };
}

/** The participant's handler with `/overview` answered here and everything else by `handler`. */
export function withOverviewCommand(
  handler: vscode.ChatRequestHandler,
  serverFor: () => Promise<OverviewServer>,
): vscode.ChatRequestHandler {
  return (request, context, stream, token) =>
    request.command === OVERVIEW_COMMAND ? overviewChat(request, stream, token, serverFor) : handler(request, context, stream, token);
}

/** `@filescout /overview [question]`: the map of the workspace as a nested list, files as links. */
async function overviewChat(
  request: vscode.ChatRequest,
  stream: vscode.ChatResponseStream,
  token: vscode.CancellationToken,
  serverFor: () => Promise<OverviewServer>,
): Promise<vscode.ChatResult> {
  const question = request.prompt.trim();
  try {
    const server = await serverFor();
    stream.progress(question ? "Mapping the workspace for the question…" : "Mapping the workspace…");
    const result = await getOverview(server.connection, question ? { query: question } : {}, { cancel: token });
    stream.markdown(
      overviewMarkdown(result, {
        rootName: server.name,
        link: (path) => vscode.Uri.joinPath(server.folder, path).toString(),
        question: question || undefined,
      }),
    );
  } catch (error) {
    if (!(error instanceof CancelledError)) {
      const message = error instanceof Error ? error.message : String(error);
      stream.markdown(error instanceof QueryError ? `${message}. Try \`@filescout /overview\` with a shorter question.` : message);
    }
  }
  return {};
}
