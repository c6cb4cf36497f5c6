// The extension's logic that does not need VS Code: settings to server definitions, the
// proxy command line, signal payloads, and the debouncer. Unit-tested in test/core.test.ts.

/** A language server the extension starts through the proxy. */
export interface ServerDefinition {
  /** Client id and display name. */
  name: string;
  /** The server executable. */
  command: string;
  /** Its arguments (exactly what the server needs; nothing is appended). */
  args: string[];
  /** VS Code language ids whose documents the server handles. */
  languages: string[];
}

/** The extension's settings (`nextedit.*`). */
export interface Settings {
  path: string;
  db: string;
  exclude: string[];
  servers: Array<string | Partial<ServerDefinition>>;
  debounceMs: number;
}

/** Directories the presets may need (jdtls keeps its configuration and workspace data there). */
export interface StoragePaths {
  /** Per-user storage (the extension's globalStorageUri path). */
  global: string;
  /** Per-workspace storage, when a workspace is open. */
  workspace?: string;
  /** The user's home directory (for `~` in settings). */
  home: string;
}

/** The named presets of `nextedit.servers`. */
export function preset(name: string, paths: StoragePaths): ServerDefinition | undefined {
  switch (name) {
    case 'pyright':
      return { name: 'pyright', command: 'pyright-langserver', args: ['--stdio'], languages: ['python'] };
    case 'gopls':
      return { name: 'gopls', command: 'gopls', args: [], languages: ['go'] };
    case 'jdtls': {
      const data = paths.workspace ?? paths.global;
      return {
        name: 'jdtls',
        command: 'jdtls',
        args: ['-configuration', `${paths.global}/jdtls/config`, '-data', `${data}/jdtls/workspace`],
        languages: ['java'],
      };
    }
    default:
      return undefined;
  }
}

/** Server definitions from the `nextedit.servers` setting, and one error per unusable entry. */
export function resolveServers(
  entries: Settings['servers'],
  paths: StoragePaths,
): { servers: ServerDefinition[]; errors: string[] } {
  const servers: ServerDefinition[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  for (const entry of entries ?? []) {
    let server: ServerDefinition | undefined;
    if (typeof entry === 'string') {
      server = preset(entry, paths);
      if (!server) {
        errors.push(`unknown server preset "${entry}" (known: pyright, gopls, jdtls)`);
        continue;
      }
    } else if (entry && typeof entry === 'object') {
      const { name, command, args, languages } = entry;
      if (typeof name !== 'string' || !name || typeof command !== 'string' || !command) {
        errors.push(`server entry needs "name" and "command": ${JSON.stringify(entry)}`);
        continue;
      }
      if (!Array.isArray(languages) || languages.length === 0) {
        errors.push(`server "${name}" needs "languages" (VS Code language ids)`);
        continue;
      }
      server = {
        name,
        command: expandHome(command, paths.home),
        args: (args ?? []).map(String),
        languages: languages.map(String),
      };
    } else {
      errors.push(`bad server entry: ${JSON.stringify(entry)}`);
      continue;
    }
    if (seen.has(server.name)) {
      errors.push(`server "${server.name}" is configured twice`);
      continue;
    }
    seen.add(server.name);
    servers.push(server);
  }
  return { servers, errors };
}

/** `~/x` → `<home>/x`. */
export function expandHome(path: string, home: string): string {
  if (path === '~') {
    return home;
  }
  return path.startsWith('~/') ? home + path.slice(1) : path;
}

/**
 * The command line that starts `server`: through the proxy when recording, directly when
 * paused (nothing is recorded then).
 */
export function launchCommand(
  settings: Pick<Settings, 'path' | 'db' | 'exclude'>,
  server: ServerDefinition,
  recording: boolean,
  home: string,
): { command: string; args: string[] } {
  if (!recording) {
    return { command: server.command, args: [...server.args] };
  }
  const args = ['proxy'];
  if (settings.db) {
    args.push('--db', expandHome(settings.db, home));
  }
  for (const glob of settings.exclude ?? []) {
    args.push('--exclude', glob);
  }
  args.push('--', server.command, ...server.args);
  return { command: expandHome(settings.path || 'nextedit', home), args };
}

/** An LSP position (0-based line, UTF-16 character: VS Code's own units). */
export interface Position {
  line: number;
  character: number;
}

/** An LSP range. */
export interface Range {
  start: Position;
  end: Position;
}

/** A selection: where it started (anchor) and where the cursor is (active). */
export interface Selection {
  anchor: Position;
  active: Position;
}

function pos(p: Position): Position {
  return { line: p.line, character: p.character };
}

function ordered(a: Position, b: Position): [Position, Position] {
  return a.line < b.line || (a.line === b.line && a.character <= b.character) ? [a, b] : [b, a];
}

/** `$/nextedit/cursor` params: the primary selection's active end. */
export function cursorParams(uri: string, selections: readonly Selection[]): object | undefined {
  if (selections.length === 0) {
    return undefined;
  }
  return { textDocument: { uri }, position: pos(selections[0].active) };
}

/** `$/nextedit/selection` params: every selection as a range (start ≤ end; empty at a bare cursor). */
export function selectionParams(uri: string, selections: readonly Selection[]): object {
  return {
    textDocument: { uri },
    selections: selections.map((s) => {
      const [start, end] = ordered(s.anchor, s.active);
      return { start: pos(start), end: pos(end) };
    }),
  };
}

/**
 * `$/nextedit/visibleRanges` params: whole lines, half-open, like the Neovim plugin sends
 * ({line: first, character: 0} to {line: last + 1, character: 0}).
 */
export function visibleRangesParams(uri: string, ranges: readonly Range[]): object {
  return {
    textDocument: { uri },
    ranges: ranges.map((r) => ({
      start: { line: r.start.line, character: 0 },
      end: { line: r.end.line + 1, character: 0 },
    })),
  };
}

/** `$/nextedit/focus` params (without a document: the editor window itself). */
export function focusParams(uri: string | undefined, focused: boolean): object {
  return uri === undefined ? { focused } : { textDocument: { uri }, focused };
}

/** Something that can be scheduled and cancelled (setTimeout in the extension, a fake in tests). */
export interface Clock {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/**
 * Per-kind trailing debounce with deduplication: `queue(kind, params)` sends the latest params
 * of a kind once the kind has been quiet for `ms`; params equal to the last ones sent for that
 * kind are dropped. `flush()` sends everything waiting now (before a focus change, on stop).
 */
export class SignalQueue {
  private readonly waiting = new Map<string, { params: object; handle: unknown }>();
  private readonly lastSent = new Map<string, string>();

  constructor(
    private readonly send: (kind: string, params: object) => void,
    private readonly ms: number,
    private readonly clock: Clock,
  ) {}

  /** Queues `params` for `kind` (or sends at once when the delay is 0). */
  queue(kind: string, params: object): void {
    if (this.ms <= 0) {
      this.sendNow(kind, params);
      return;
    }
    const previous = this.waiting.get(kind);
    if (previous) {
      this.clock.clear(previous.handle);
    }
    const handle = this.clock.set(() => this.flushKind(kind), this.ms);
    this.waiting.set(kind, { params, handle });
  }

  /** Sends `params` now, after everything already waiting. */
  sendNow(kind: string, params: object): void {
    if (kind !== 'focus') {
      this.flushKind(kind);
    }
    const json = JSON.stringify(params);
    if (this.lastSent.get(kind) === json) {
      return;
    }
    this.lastSent.set(kind, json);
    this.send(kind, params);
  }

  /** Sends every waiting signal now. */
  flush(): void {
    for (const kind of [...this.waiting.keys()]) {
      this.flushKind(kind);
    }
  }

  /** Drops everything waiting and forgets what was sent (the server restarted). */
  reset(): void {
    for (const { handle } of this.waiting.values()) {
      this.clock.clear(handle);
    }
    this.waiting.clear();
    this.lastSent.clear();
  }

  /** Number of signals waiting. */
  get pending(): number {
    return this.waiting.size;
  }

  private flushKind(kind: string): void {
    const entry = this.waiting.get(kind);
    if (!entry) {
      return;
    }
    this.waiting.delete(kind);
    this.clock.clear(entry.handle);
    this.sendNow(kind, entry.params);
  }
}

/** One line of `nextedit sessions list --json` (the fields the extension uses). */
export interface SessionLine {
  id: number;
  status: string;
  workspace?: string | null;
  started_at: string;
}

/** The session to show for a workspace: its newest running one, else its newest one, else the newest. */
export function pickSession(sessions: readonly SessionLine[], workspace: string | undefined): SessionLine | undefined {
  const newestFirst = [...sessions].sort((a, b) => b.id - a.id);
  const here = newestFirst.filter((s) => workspace !== undefined && s.workspace === workspace);
  return here.find((s) => s.status === 'running') ?? here[0] ?? newestFirst[0];
}
