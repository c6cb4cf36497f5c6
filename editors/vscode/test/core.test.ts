// Unit tests of the extension's logic (node --test; no VS Code needed).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  Clock,
  SignalQueue,
  cursorParams,
  focusParams,
  launchCommand,
  pickSession,
  resolveServers,
  selectionParams,
  visibleRangesParams,
} from '../src/core';

const paths = { global: '/g', workspace: '/w', home: '/home/u' };

test('presets and custom servers resolve; bad entries are reported', () => {
  const { servers, errors } = resolveServers(
    [
      'pyright',
      'gopls',
      'jdtls',
      'nope',
      { name: 'rust', command: '~/bin/rust-analyzer', languages: ['rust'] },
      { name: 'x', command: 'x' },
      'pyright',
    ],
    paths,
  );
  assert.deepEqual(servers, [
    { name: 'pyright', command: 'pyright-langserver', args: ['--stdio'], languages: ['python'] },
    { name: 'gopls', command: 'gopls', args: [], languages: ['go'] },
    {
      name: 'jdtls',
      command: 'jdtls',
      args: ['-configuration', '/g/jdtls/config', '-data', '/w/jdtls/workspace'],
      languages: ['java'],
    },
    { name: 'rust', command: '/home/u/bin/rust-analyzer', args: [], languages: ['rust'] },
  ]);
  assert.deepEqual(errors, [
    'unknown server preset "nope" (known: pyright, gopls, jdtls)',
    'server "x" needs "languages" (VS Code language ids)',
    'server "pyright" is configured twice',
  ]);
});

test('the proxy command line wraps the server; paused runs the server directly', () => {
  const pyright = resolveServers(['pyright'], paths).servers[0];
  const s = { path: 'nextedit', db: '~/study.db', exclude: ['*.csv', 'data/**'] };
  assert.deepEqual(launchCommand(s, pyright, true, '/home/u'), {
    command: 'nextedit',
    args: [
      'proxy',
      '--db',
      '/home/u/study.db',
      '--exclude',
      '*.csv',
      '--exclude',
      'data/**',
      '--',
      'pyright-langserver',
      '--stdio',
    ],
  });
  assert.deepEqual(launchCommand({ path: '', db: '', exclude: [] }, pyright, true, '/h'), {
    command: 'nextedit',
    args: ['proxy', '--', 'pyright-langserver', '--stdio'],
  });
  assert.deepEqual(launchCommand(s, pyright, false, '/home/u'), {
    command: 'pyright-langserver',
    args: ['--stdio'],
  });
});

test('signal payloads follow schemas/signals.schema.json', () => {
  const sel = [
    { anchor: { line: 3, character: 9 }, active: { line: 2, character: 1 } },
    { anchor: { line: 5, character: 0 }, active: { line: 5, character: 0 } },
  ];
  assert.deepEqual(cursorParams('file:///a.py', sel), {
    textDocument: { uri: 'file:///a.py' },
    position: { line: 2, character: 1 },
  });
  assert.equal(cursorParams('file:///a.py', []), undefined);
  assert.deepEqual(selectionParams('file:///a.py', sel), {
    textDocument: { uri: 'file:///a.py' },
    selections: [
      { start: { line: 2, character: 1 }, end: { line: 3, character: 9 } },
      { start: { line: 5, character: 0 }, end: { line: 5, character: 0 } },
    ],
  });
  assert.deepEqual(
    visibleRangesParams('file:///a.py', [{ start: { line: 4, character: 0 }, end: { line: 30, character: 17 } }]),
    { textDocument: { uri: 'file:///a.py' }, ranges: [{ start: { line: 4, character: 0 }, end: { line: 31, character: 0 } }] },
  );
  assert.deepEqual(focusParams('file:///a.py', true), { textDocument: { uri: 'file:///a.py' }, focused: true });
  assert.deepEqual(focusParams(undefined, false), { focused: false });
});

/** A clock the test advances by hand. */
class FakeClock implements Clock {
  now = 0;
  private timers = new Map<number, { at: number; cb: () => void }>();
  private next = 1;
  set(cb: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.set(id, { at: this.now + ms, cb });
    return id;
  }
  clear(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  advance(ms: number): void {
    this.now += ms;
    for (const [id, t] of [...this.timers].sort((a, b) => a[1].at - b[1].at)) {
      if (t.at <= this.now && this.timers.has(id)) {
        this.timers.delete(id);
        t.cb();
      }
    }
  }
}

test('signals are debounced per kind, deduplicated, flushed before focus', () => {
  const clock = new FakeClock();
  const sent: Array<[string, object]> = [];
  const q = new SignalQueue((k, p) => sent.push([k, p]), 100, clock);
  q.queue('cursor', { n: 1 });
  clock.advance(50);
  q.queue('cursor', { n: 2 });
  q.queue('visibleRanges', { v: 1 });
  clock.advance(99);
  assert.deepEqual(sent, []);
  assert.equal(q.pending, 2);
  clock.advance(1);
  assert.deepEqual(sent, [
    ['cursor', { n: 2 }],
    ['visibleRanges', { v: 1 }],
  ]);
  // The same params again are not sent.
  q.queue('cursor', { n: 2 });
  clock.advance(100);
  assert.equal(sent.length, 2);
  // Focus goes out at once, after whatever was waiting once flushed.
  q.queue('cursor', { n: 3 });
  q.flush();
  q.sendNow('focus', { focused: false });
  assert.deepEqual(sent.slice(2), [
    ['cursor', { n: 3 }],
    ['focus', { focused: false }],
  ]);
  assert.equal(q.pending, 0);
  // reset forgets what was sent.
  q.reset();
  q.sendNow('focus', { focused: false });
  assert.equal(sent.length, 5);
  // Delay 0 sends at once.
  const direct: string[] = [];
  const d = new SignalQueue((k) => direct.push(k), 0, clock);
  d.queue('cursor', { a: 1 });
  assert.deepEqual(direct, ['cursor']);
});

test('the session shown is the workspace\'s running one, else its newest, else the newest', () => {
  const list = [
    { id: 1, status: 'ended', workspace: '/w', started_at: 'a' },
    { id: 2, status: 'running', workspace: '/w', started_at: 'b' },
    { id: 3, status: 'ended', workspace: '/w', started_at: 'c' },
    { id: 4, status: 'running', workspace: '/other', started_at: 'd' },
  ];
  assert.equal(pickSession(list, '/w')?.id, 2);
  assert.equal(pickSession(list.slice(0, 1).concat(list.slice(2)), '/w')?.id, 3);
  assert.equal(pickSession(list, '/none')?.id, 4);
  assert.equal(pickSession([], '/w'), undefined);
});
