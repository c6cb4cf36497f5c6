// Drives real VS Code (code-server) in headless Chromium for tests/editor_vscode.rs.
//
// Usage: node vscode_driver.cjs URL PROFILE_DIR   (PLAYWRIGHT_CORE = path of playwright-core)
// Reads one command per line on stdin and answers one line per command on stdout:
//   open NAME          click NAME in the explorer, wait for its editor, focus the text
//   press KEY [N]      press a key chord (playwright names: Control+End, Shift+ArrowRight) N times
//   type TEXT          type TEXT as keystrokes (\n in TEXT is Enter)
//   goto LINE:COL      Go to Line/Column (Ctrl+G)
//   command TITLE      run a command from the palette (F1, TITLE, Enter)
//   text               the active editor's visible lines, as a JSON array
//   status             the editor's "Ln X, Col Y" status bar text
//   screenshot PATH    save a screenshot (for debugging)
//   quit               close the browser
// Answers: "ok [value]" or "error MESSAGE".

const readline = require('node:readline');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

const [url, profile] = process.argv.slice(2);

async function main() {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(url);
  await page.waitForSelector('.monaco-workbench', { timeout: 120000 });
  const editorText = '.editor-instance .monaco-editor .view-lines';

  const commands = {
    async open(name) {
      const item = page.getByRole('treeitem', { name }).first();
      await item.waitFor({ timeout: 60000 });
      await item.click();
      await page.waitForSelector(editorText, { timeout: 60000 });
      await page.locator(editorText).first().click({ position: { x: 1, y: 1 } });
      await page.keyboard.press('Control+Home');
    },
    async press(arg) {
      const [key, n] = arg.split(' ');
      for (let i = 0; i < Number(n || 1); i++) {
        await page.keyboard.press(key);
      }
    },
    async type(text) {
      const parts = text.replace(/\\n/g, '\n').split('\n');
      for (let i = 0; i < parts.length; i++) {
        if (parts[i]) {
          await page.keyboard.type(parts[i]);
        }
        if (i < parts.length - 1) {
          await page.keyboard.press('Enter');
        }
      }
    },
    async goto(where) {
      await page.keyboard.press('Control+G');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 30000 });
      await input.fill(`:${where}`);
      await input.press('Enter');
    },
    async command(title) {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 30000 });
      await input.fill(`>${title}`);
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
      await row.waitFor({ timeout: 30000 });
      await input.press('Enter');
    },
    async screenshot(path) {
      await page.screenshot({ path });
    },
    async text() {
      // The visible lines of the active editor, in order (Monaco positions them absolutely).
      const lines = await page.evaluate(() => {
        const editors = [...document.querySelectorAll('.editor-instance .monaco-editor')]
          .filter((e) => e.offsetParent !== null);
        const editor = editors[editors.length - 1];
        if (!editor) return [];
        return [...editor.querySelectorAll('.view-lines .view-line')]
          .map((l) => [parseFloat(l.style.top) || 0, l.textContent.replace(/\u00a0/g, ' ')])
          .sort((a, b) => a[0] - b[0])
          .map((l) => l[1]);
      });
      return JSON.stringify(lines);
    },
    async status() {
      const item = page.locator('[id="status.editor.selection"]').first();
      return ((await item.textContent({ timeout: 10000 })) || '').trim();
    },
  };

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const space = line.indexOf(' ');
    const name = space < 0 ? line : line.slice(0, space);
    const arg = space < 0 ? '' : line.slice(space + 1);
    if (name === 'quit') {
      await context.close();
      process.stdout.write('ok\n');
      return;
    }
    try {
      if (!commands[name]) {
        throw new Error(`unknown command ${name}`);
      }
      const value = await commands[name](arg);
      process.stdout.write(value === undefined ? 'ok\n' : `ok ${value}\n`);
    } catch (error) {
      process.stdout.write(`error ${String(error && error.message || error).split('\n')[0]}\n`);
    }
  }
  await context.close();
}

main().catch((error) => {
  process.stdout.write(`error ${String(error && error.stack || error).split('\n').join(' | ')}\n`);
  process.exit(1);
});
