// nextedit for VS Code: starts the configured language servers through `nextedit proxy`
// with vscode-languageclient, sends the editor signals ($/nextedit/cursor, selection,
// visibleRanges, focus, suggestion) to them, shows the recording state in the status bar.
//
// Inline suggestions: VS Code's stable API tells an inline completion provider what it
// provided and runs an item's `command` when the item is accepted in full; it has no
// event for an item shown, hidden or accepted in part (word by word), which are proposed
// API only. So `suggestion` signals say `shown` for the first item provided (the one
// VS Code shows when it fits the typed text) and `accepted` through a command wrapped around the item's
// own; partial acceptances and dismissals are not sent.

import { execFile } from 'node:child_process';
import * as os from 'node:os';
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from 'vscode-languageclient/node';

import {
  Settings,
  ServerDefinition,
  SignalQueue,
  cursorParams,
  expandHome,
  focusParams,
  launchCommand,
  pickSession,
  resolveServers,
  selectionParams,
  visibleRangesParams,
} from './core';

interface Running {
  server: ServerDefinition;
  client: LanguageClient;
  signals: SignalQueue;
  selector: vscode.DocumentSelector;
  recording: boolean;
}

const RECORDING_KEY = 'nextedit.recording';
/** Runs when VS Code accepts an inline item: sends `accepted`, then the item's own command. */
const ACCEPTED_COMMAND = 'nextedit.suggestionAccepted';

let context: vscode.ExtensionContext;
let output: vscode.LogOutputChannel;
let status: vscode.StatusBarItem;
let running: Running[] = [];
let focusedUri: { doc: vscode.TextDocument } | undefined;

function settings(): Settings {
  const c = vscode.workspace.getConfiguration('nextedit');
  return {
    path: c.get<string>('path', 'nextedit'),
    db: c.get<string>('db', ''),
    exclude: c.get<string[]>('exclude', []),
    servers: c.get<Settings['servers']>('servers', ['pyright']),
    debounceMs: c.get<number>('debounceMs', 100),
  };
}

function recording(): boolean {
  return context.globalState.get<boolean>(RECORDING_KEY, true);
}

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

function updateStatus(): void {
  const on = recording();
  status.text = on ? '$(record) nextedit' : '$(debug-pause) nextedit: paused';
  const names = running.map((r) => r.server.name).join(', ') || 'no servers';
  status.tooltip = on
    ? `Recording ${names} through nextedit proxy. Click to pause.`
    : `Paused: ${names} run without the proxy, nothing is recorded. Click to resume.`;
  status.command = 'nextedit.toggle';
  status.show();
}

async function startAll(): Promise<void> {
  const s = settings();
  const storage = {
    global: context.globalStorageUri.fsPath,
    workspace: context.storageUri?.fsPath,
    home: os.homedir(),
  };
  const { servers, errors } = resolveServers(s.servers, storage);
  for (const error of errors) {
    output.appendLine(`settings: ${error}`);
    void vscode.window.showWarningMessage(`nextedit: ${error}`);
  }
  const on = recording();
  for (const server of servers) {
    const { command, args } = launchCommand(s, server, on, storage.home);
    // transport left undefined: stdio without an appended --stdio.
    const serverOptions: ServerOptions = { command, args, options: { cwd: workspaceRoot() } };
    const selector = server.languages.map((language) => ({ language, scheme: 'file' }));
    const clientOptions: LanguageClientOptions = {
      documentSelector: selector,
      outputChannel: output,
      middleware: {
        provideInlineCompletionItems: async (document, position, ctx, token, next) => {
          const result = await next(document, position, ctx, token);
          const items = Array.isArray(result) ? result : result?.items;
          if (items && on && client.state === State.Running) {
            const uri = client.code2ProtocolConverter.asUri(document.uri);
            for (const [index, item] of items.entries()) {
              const text = typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
              const params = {
                textDocument: { uri },
                event: 'shown',
                text,
                position: { line: position.line, character: position.character },
              };
              if (index === 0) {
                // VS Code shows the first item that fits the typed text (usually this one).
                void client.sendNotification('$/nextedit/suggestion', params);
              }
              // Accepting it in full runs its command: ours first, then its own.
              const own = item.command;
              item.command = {
                title: own?.title ?? 'accepted',
                command: ACCEPTED_COMMAND,
                arguments: [client, { ...params, event: 'accepted', acceptedLength: text.length }, own],
              };
            }
          }
          return result;
        },
      },
    };
    const client = new LanguageClient(`nextedit-${server.name}`, `nextedit: ${server.name}`, serverOptions, clientOptions);
    const signals = new SignalQueue(
      (kind, params) => {
        if (client.state === State.Running) {
          void client.sendNotification(`$/nextedit/${kind}`, params);
        }
      },
      s.debounceMs,
      { set: (cb, ms) => setTimeout(cb, ms), clear: (h) => clearTimeout(h as NodeJS.Timeout) },
    );
    const entry: Running = { server, client, signals, selector, recording: on };
    running.push(entry);
    output.appendLine(`starting ${server.name}: ${command} ${args.join(' ')}`);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        sendInitialState(entry);
      }
    });
    try {
      await client.start();
    } catch (error) {
      output.appendLine(`${server.name} failed to start: ${String(error)}`);
      void vscode.window.showErrorMessage(
        `nextedit: ${server.name} failed to start (${command}). Run \`nextedit doctor\` in a terminal.`,
      );
    }
  }
  updateStatus();
}

async function stopAll(): Promise<void> {
  const stopping = running;
  running = [];
  for (const r of stopping) {
    r.signals.flush();
    r.signals.reset();
  }
  await Promise.all(stopping.map((r) => r.client.stop().catch(() => undefined)));
}

async function restart(): Promise<void> {
  await stopAll();
  await startAll();
}

/** The clients that receive signals for `doc`: running through the proxy, selector matching. */
function clientsFor(doc: vscode.TextDocument): Running[] {
  return running.filter(
    (r) => r.recording && r.client.state === State.Running && vscode.languages.match(r.selector, doc) > 0,
  );
}

function uriOf(r: Running, doc: vscode.TextDocument): string {
  return r.client.code2ProtocolConverter.asUri(doc.uri);
}

function toSelections(selections: readonly vscode.Selection[]) {
  return selections.map((s) => ({
    anchor: { line: s.anchor.line, character: s.anchor.character },
    active: { line: s.active.line, character: s.active.character },
  }));
}

function sendEditorState(r: Running, editor: vscode.TextEditor): void {
  const uri = uriOf(r, editor.document);
  const selections = toSelections(editor.selections);
  const cursor = cursorParams(uri, selections);
  if (cursor) {
    r.signals.queue('cursor', cursor);
  }
  r.signals.queue('selection', selectionParams(uri, selections));
  r.signals.queue('visibleRanges', visibleRangesParams(uri, editor.visibleRanges));
}

function sendInitialState(r: Running): void {
  const editor = vscode.window.activeTextEditor;
  if (!editor || !r.recording || vscode.languages.match(r.selector, editor.document) === 0) {
    return;
  }
  focusedUri = { doc: editor.document };
  r.signals.sendNow('focus', focusParams(uriOf(r, editor.document), true));
  sendEditorState(r, editor);
}

async function showSession(): Promise<void> {
  const s = settings();
  const bin = expandHome(s.path || 'nextedit', os.homedir());
  const db = s.db ? ['--db', expandHome(s.db, os.homedir())] : [];
  const run = (args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile(bin, args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
        error ? reject(new Error(stderr.trim() || String(error))) : resolve(stdout),
      ),
    );
  try {
    const list = JSON.parse(await run(['sessions', 'list', ...db, '--json']));
    const session = pickSession(list, workspaceRoot());
    if (!session) {
      void vscode.window.showInformationMessage('nextedit: no sessions recorded yet');
      return;
    }
    const text = await run(['sessions', 'show', ...db, String(session.id)]);
    const doc = await vscode.workspace.openTextDocument({ content: text, language: 'plaintext' });
    await vscode.window.showTextDocument(doc, { preview: true });
  } catch (error) {
    void vscode.window.showErrorMessage(`nextedit: ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function setRecording(on: boolean): Promise<void> {
  if (recording() === on) {
    updateStatus();
    return;
  }
  await context.globalState.update(RECORDING_KEY, on);
  await restart();
}

/** Entry point: starts the servers and listens to the editor. */
export async function activate(ctx: vscode.ExtensionContext): Promise<void> {
  context = ctx;
  output = vscode.window.createOutputChannel('nextedit', { log: true });
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 0);
  ctx.subscriptions.push(
    output,
    status,
    vscode.commands.registerCommand('nextedit.pause', () => setRecording(false)),
    vscode.commands.registerCommand('nextedit.resume', () => setRecording(true)),
    vscode.commands.registerCommand('nextedit.toggle', () => setRecording(!recording())),
    vscode.commands.registerCommand('nextedit.showSession', showSession),
    vscode.commands.registerCommand(
      ACCEPTED_COMMAND,
      async (client: LanguageClient, params: object, own?: vscode.Command) => {
        if (client.state === State.Running) {
          const editor = vscode.window.activeTextEditor;
          const cursor = editor?.selection.active;
          const position = cursor ? { line: cursor.line, character: cursor.character } : undefined;
          void client.sendNotification('$/nextedit/suggestion', { ...params, position });
        }
        if (own) {
          await vscode.commands.executeCommand(own.command, ...(own.arguments ?? []));
        }
      },
    ),
    vscode.window.onDidChangeTextEditorSelection((e) => {
      for (const r of clientsFor(e.textEditor.document)) {
        const uri = uriOf(r, e.textEditor.document);
        const selections = toSelections(e.selections);
        const cursor = cursorParams(uri, selections);
        if (cursor) {
          r.signals.queue('cursor', cursor);
        }
        r.signals.queue('selection', selectionParams(uri, selections));
      }
    }),
    vscode.window.onDidChangeTextEditorVisibleRanges((e) => {
      for (const r of clientsFor(e.textEditor.document)) {
        r.signals.queue('visibleRanges', visibleRangesParams(uriOf(r, e.textEditor.document), e.visibleRanges));
      }
    }),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      if (focusedUri) {
        for (const r of clientsFor(focusedUri.doc)) {
          r.signals.flush();
          r.signals.sendNow('focus', focusParams(uriOf(r, focusedUri.doc), false));
        }
      }
      focusedUri = editor ? { doc: editor.document } : undefined;
      if (editor) {
        for (const r of clientsFor(editor.document)) {
          r.signals.flush();
          r.signals.sendNow('focus', focusParams(uriOf(r, editor.document), true));
          sendEditorState(r, editor);
        }
      }
    }),
    vscode.window.onDidChangeWindowState((state) => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) {
        return;
      }
      for (const r of clientsFor(editor.document)) {
        r.signals.flush();
        r.signals.sendNow('focus', focusParams(undefined, state.focused));
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('nextedit')) {
        void restart();
      }
    }),
  );
  updateStatus();
  await startAll();
}

/** Stops the servers (VS Code waits for the returned promise). */
export async function deactivate(): Promise<void> {
  await stopAll();
}
