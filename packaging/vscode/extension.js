// Cite-Assist for VS Code: starts `assistant lsp` (stdio) for LaTeX and Markdown documents.
// Everything else (completion inside \cite{...} / [@...], hover, diagnostics, go to definition,
// code actions) comes from the language server itself.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;
let status;

function serverOptions() {
  const cfg = vscode.workspace.getConfiguration("citeAssist");
  const args = ["lsp"];
  const db = cfg.get("database", "");
  if (db) {
    args.push("--db", db);
  }
  args.push(...cfg.get("extraArgs", []));
  return { command: cfg.get("command", "assistant"), args, transport: TransportKind.stdio };
}

function start(context) {
  const quality = vscode.workspace.getConfiguration("citeAssist").get("quality", "");
  const clientOptions = {
    documentSelector: ["latex", "tex", "markdown", "rmd", "quarto"].map((language) => ({
      scheme: "file",
      language,
    })),
    // the quality tier (auto | fast | best); empty: the app's Settings, else auto
    initializationOptions: quality ? { quality } : {},
  };
  client = new LanguageClient("citeAssist", "Cite-Assist", serverOptions(), clientOptions);
  client.onNotification("citeAssist/status", ({ state, message }) => {
    const icons = { ready: "$(book)", loading: "$(sync~spin)", keys: "$(sync~spin)", failed: "$(warning)" };
    status.text = `${icons[state] || "$(book)"} Cite-Assist`;
    status.tooltip = message;
    status.show();
  });
  return client.start();
}

function activate(context) {
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  context.subscriptions.push(status);
  context.subscriptions.push(
    vscode.commands.registerCommand("citeAssist.findMissingHere", () => {
      const editor = vscode.window.activeTextEditor;
      if (editor && client) {
        // the server's own command, registered by vscode-languageclient
        return vscode.commands.executeCommand("citeAssist.findMissing", editor.document.uri.toString());
      }
      return undefined;
    }),
    vscode.commands.registerCommand("citeAssist.restart", async () => {
      if (client) {
        await client.stop();
      }
      return start(context);
    })
  );
  return start(context);
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
