// The VS Code extension's client (editors/vscode/extension.js, #35) run under plain Node, with a
// stub of the `vscode` module and a fake `jr2c` that speaks just enough LSP.
//
// Usage: [JR2_VSCODE_TEST_JR2C=JR2C] node vscode_client_test.js EXTENSION_DIR
//   EXTENSION_DIR holds extension.js and its node_modules: the `extension/` folder of the
//   unpacked .vsix (as vscode_client_test.sh runs it), or editors/vscode itself.
//   JR2C, if given, is a real jr2c: the client must also start its `lsp` and stop it.
// What is real: extension.js, server.js and vscode-languageclient/node (from EXTENSION_DIR), the
// child processes, the stdio pipes and the LSP framing. What is a stub: the `vscode` module
// (settings, notifications, commands, output channel, file watcher, events); VS Code's other
// APIs are an auto-stub that records each name used (printed at the end).
// Prints one PASS/FAIL line per check; exits 1 if any failed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const Module = require('module');

const extDir = path.resolve(process.argv[2] || path.join(__dirname, '../../editors/vscode'));
let failed = 0;
let passed = 0;
function check(ok, what, detail) {
  if (ok) {
    passed++;
    console.log(`PASS: ${what}`);
  } else {
    failed++;
    console.log(`FAIL: ${what}${detail !== undefined ? `\n      got: ${detail}` : ''}`);
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(cond, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(20);
  }
  return cond();
}

// ---------------------------------------------------------------------------------------------
// The fake server: records its argv and the LSP methods it receives, one JSON line each, in
// $JR2_FAKE_LSP_LOG; answers initialize with {capabilities: {}} and shutdown with null; exits
// on exit. With $JR2_FAKE_LSP_MODE=usage it behaves as a jr2c without `lsp`: a usage line on
// stderr and exit code 2. With $JR2_FAKE_LSP_MODE=crash it exits 3 after `initialized`, the first
// $JR2_FAKE_LSP_CRASHES times (counted across processes). With $JR2_FAKE_LSP_MODE=silent it
// never answers.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jr2-vscode-client-'));
const fakeServer = path.join(tmp, 'fake-jr2c');
fs.writeFileSync(
  fakeServer,
  `#!${process.execPath}
'use strict';
const fs = require('fs');
const log = (entry) => fs.appendFileSync(process.env.JR2_FAKE_LSP_LOG, JSON.stringify(entry) + '\\n');
log({ pid: process.pid, argv: process.argv.slice(2), cwd: process.cwd() });
if (process.env.JR2_FAKE_LSP_MODE === 'silent') process.stdin.on('data', () => {});
else if (process.env.JR2_FAKE_LSP_MODE === 'usage') {
  process.stderr.write('usage: jr2c check|run|fmt … (no lsp here)\\n');
  process.exit(2);
}
let buf = Buffer.alloc(0);
if (process.env.JR2_FAKE_LSP_MODE !== 'silent') {
function send(msg) {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  process.stdout.write('Content-Length: ' + body.length + '\\r\\n\\r\\n');
  process.stdout.write(body);
}
process.stdin.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const end = buf.indexOf('\\r\\n\\r\\n');
    if (end < 0) return;
    const m = /Content-Length: *(\\d+)/i.exec(buf.slice(0, end).toString('ascii'));
    const len = Number(m[1]);
    if (buf.length < end + 4 + len) return;
    const msg = JSON.parse(buf.slice(end + 4, end + 4 + len).toString('utf8'));
    buf = buf.slice(end + 4 + len);
    log({ pid: process.pid, method: msg.method });
    if (msg.method === 'initialize') send({ jsonrpc: '2.0', id: msg.id, result: { capabilities: {} } });
    else if (msg.method === 'shutdown') send({ jsonrpc: '2.0', id: msg.id, result: null });
    else if (msg.method === 'exit') process.exit(0);
    else if (msg.method === 'initialized' && process.env.JR2_FAKE_LSP_MODE === 'crash') {
      const crashes = process.env.JR2_FAKE_LSP_LOG + '.crashes';
      const n = fs.existsSync(crashes) ? fs.readFileSync(crashes, 'utf8').length : 0;
      if (n < Number(process.env.JR2_FAKE_LSP_CRASHES)) {
        fs.appendFileSync(crashes, 'x');
        process.exit(3);
      }
    }
  }
});
}
process.stdin.on('end', () => process.exit(1));
`,
  { mode: 0o755 },
);
const serverLog = path.join(tmp, 'server.log');
process.env.JR2_FAKE_LSP_LOG = serverLog;
function serverEntries() {
  if (!fs.existsSync(serverLog)) return [];
  return fs
    .readFileSync(serverLog, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}
function starts() {
  return serverEntries().filter((e) => e.argv);
}
function methodsOf(pid) {
  return serverEntries()
    .filter((e) => e.pid === pid && e.method)
    .map((e) => e.method);
}
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The `vscode` stub.
const missing = new Set(); // VS Code API names used that the stub does not model
function autoStub(name) {
  const fn = function () {};
  return new Proxy(fn, {
    get(target, prop) {
      if (prop === 'then') return undefined; // not a promise
      if (prop === Symbol.toPrimitive) return () => name;
      if (prop === Symbol.iterator) return [][Symbol.iterator].bind([]);
      if (typeof prop === 'symbol' || prop in target) return target[prop];
      const sub = `${name}.${String(prop)}`;
      missing.add(sub);
      return autoStub(sub);
    },
    apply() {
      missing.add(`${name}()`);
      return { dispose() {} };
    },
    construct() {
      missing.add(`new ${name}`);
      return { dispose() {} };
    },
  });
}
function withFallback(name, obj) {
  return new Proxy(obj, {
    get(target, prop) {
      if (prop in target || typeof prop === 'symbol' || prop === 'then') return target[prop];
      const sub = `${name}.${String(prop)}`;
      missing.add(sub);
      return autoStub(sub);
    },
  });
}

class Disposable {
  constructor(fn) {
    this._fn = fn;
  }
  static from(...items) {
    return new Disposable(() => items.forEach((i) => i && i.dispose && i.dispose()));
  }
  dispose() {
    if (this._fn) this._fn();
    this._fn = undefined;
  }
}
class EventEmitter {
  constructor() {
    this._listeners = new Set();
    this.event = (listener, thisArg, disposables) => {
      const l = thisArg ? listener.bind(thisArg) : listener;
      this._listeners.add(l);
      const d = new Disposable(() => this._listeners.delete(l));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(data) {
    for (const l of [...this._listeners]) l(data);
  }
  dispose() {
    this._listeners.clear();
  }
}
class CancellationTokenSource {
  constructor() {
    const emitter = new EventEmitter();
    this._emitter = emitter;
    this.token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
  }
  cancel() {
    this.token.isCancellationRequested = true;
    this._emitter.fire();
  }
  dispose() {}
}
class Uri {
  constructor(scheme, fsPath) {
    this.scheme = scheme;
    this.fsPath = fsPath;
    this.path = fsPath;
    this.authority = '';
    this.query = '';
    this.fragment = '';
  }
  static file(p) {
    return new Uri('file', p);
  }
  static parse(s) {
    const m = /^([a-z][\w+.-]*):(?:\/\/[^/]*)?(.*)$/i.exec(s);
    return m ? new Uri(m[1], decodeURIComponent(m[2])) : new Uri('file', s);
  }
  toString() {
    return `${this.scheme}://${this.path}`;
  }
  with() {
    return this;
  }
}

const settings = { 'jr2.server.path': 'jr2c', 'jr2.server.extraArgs': [] };
const shown = []; // every notification: { kind, message, items }
const commands = new Map();
const configEmitter = new EventEmitter();
const outputLines = [];
const event = () => new EventEmitter().event;

const vscodeStub = withFallback('vscode', {
  version: '1.82.0',
  Disposable,
  EventEmitter,
  CancellationTokenSource,
  Uri,
  env: withFallback('vscode.env', {
    appName: 'stub',
    appRoot: tmp,
    language: 'en',
    machineId: 'stub',
    sessionId: 'stub',
    uriScheme: 'vscode',
  }),
  window: withFallback('vscode.window', {
    createOutputChannel(name) {
      return {
        name,
        append: (s) => outputLines.push(String(s)),
        appendLine: (s) => outputLines.push(`${s}\n`),
        replace() {},
        clear() {},
        show() {},
        hide() {},
        dispose() {},
      };
    },
    showErrorMessage: (message, ...items) => {
      shown.push({ kind: 'error', message, items });
      return Promise.resolve(undefined);
    },
    showWarningMessage: (message, ...items) => {
      shown.push({ kind: 'warning', message, items });
      return Promise.resolve(undefined);
    },
    showInformationMessage: (message, ...items) => {
      shown.push({ kind: 'information', message, items });
      return Promise.resolve(undefined);
    },
    activeTextEditor: undefined,
    visibleTextEditors: [],
    onDidChangeActiveTextEditor: event(),
    onDidChangeVisibleTextEditors: event(),
    tabGroups: { all: [], onDidChangeTabs: event(), onDidChangeTabGroups: event() },
  }),
  workspace: withFallback('vscode.workspace', {
    workspaceFolders: undefined,
    rootPath: undefined,
    textDocuments: [],
    notebookDocuments: [],
    getConfiguration(section) {
      return {
        get(key, dflt) {
          const full = section ? `${section}.${key}` : key;
          return full in settings ? settings[full] : dflt;
        },
        has: (key) => `${section}.${key}` in settings,
        inspect: () => undefined,
        update: () => Promise.resolve(),
      };
    },
    onDidChangeConfiguration: configEmitter.event,
    onDidOpenTextDocument: event(),
    onDidCloseTextDocument: event(),
    onDidChangeTextDocument: event(),
    onDidSaveTextDocument: event(),
    onWillSaveTextDocument: event(),
    onDidChangeWorkspaceFolders: event(),
    onDidOpenNotebookDocument: event(),
    onDidCloseNotebookDocument: event(),
    onDidChangeNotebookDocument: event(),
    onDidSaveNotebookDocument: event(),
    onDidCreateFiles: event(),
    onDidRenameFiles: event(),
    onDidDeleteFiles: event(),
    onWillCreateFiles: event(),
    onWillRenameFiles: event(),
    onWillDeleteFiles: event(),
    createFileSystemWatcher(glob) {
      return {
        glob,
        onDidCreate: event(),
        onDidChange: event(),
        onDidDelete: event(),
        dispose() {},
      };
    },
  }),
  commands: withFallback('vscode.commands', {
    registerCommand(id, fn) {
      commands.set(id, fn);
      return new Disposable(() => commands.delete(id));
    },
    executeCommand: () => Promise.resolve(undefined),
  }),
  languages: withFallback('vscode.languages', {
    match: () => 0,
  }),
});

const stubId = path.join(tmp, 'vscode-stub.js');
const realResolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === 'vscode' ? stubId : realResolve.call(this, request, ...rest);
};
require.cache[stubId] = { id: stubId, filename: stubId, loaded: true, exports: vscodeStub };

function fireConfig(section) {
  configEmitter.fire({ affectsConfiguration: (s) => section === s || section.startsWith(`${s}.`) });
}

// VS Code's extension host logs a promise rejected and not handled; it does not end. So here:
// recorded, and reported as a failure.
const unhandled = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason && reason.stack ? reason.stack : String(reason)));

// VS Code disposes an extension's subscriptions after deactivate.
async function deactivate(ext, context) {
  await ext.deactivate();
  for (const d of context.subscriptions.splice(0)) d.dispose();
}

// ---------------------------------------------------------------------------------------------
async function main() {
  console.log(`extension: ${extDir}`);
  const server = require(path.join(extDir, 'server.js'));
  const ext = require(path.join(extDir, 'extension.js'));
  const { State } = require(require.resolve('vscode-languageclient/node', { paths: [extDir] }));
  const pkg = JSON.parse(fs.readFileSync(path.join(extDir, 'package.json'), 'utf8'));

  // --- The manifest.
  check(pkg.main === './extension.js', 'package.json: main is ./extension.js', pkg.main);
  check(
    JSON.stringify(pkg.activationEvents) === '["onLanguage:jr2"]',
    'package.json: activated by onLanguage:jr2',
    JSON.stringify(pkg.activationEvents),
  );
  const props = (pkg.contributes.configuration || {}).properties || {};
  check(
    props['jr2.server.path'] && props['jr2.server.path'].default === 'jr2c' &&
      typeof props['jr2.server.path'].markdownDescription === 'string' &&
      props['jr2.server.extraArgs'] && props['jr2.server.extraArgs'].type === 'array' &&
      typeof props['jr2.server.extraArgs'].markdownDescription === 'string',
    'package.json: the settings jr2.server.path (default jr2c) and jr2.server.extraArgs, described',
  );
  const cmd = (pkg.contributes.commands || []).find((c) => c.command === 'jr2.restartServer');
  check(
    cmd && `${cmd.category}: ${cmd.title}` === 'jr2: Restart the language server',
    'package.json: the command jr2.restartServer, "jr2: Restart the language server"',
  );

  // --- The command line, without vscode.
  const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const c1 = server.serverCommand({ path: 'jr2c', extraArgs: [] });
  const c2 = server.serverCommand({ path: ' ', extraArgs: undefined });
  const c3 = server.serverCommand({ path: '/opt/jr2c', extraArgs: ['--log', 'x', 3] });
  const c4 = server.serverCommand({ path: 'build/jr2c', extraArgs: [] }, '/ws');
  const c5 = server.serverCommand({ path: '~/bin/jr2c' });
  check(eq(c1, { command: 'jr2c', args: ['lsp'] }), 'serverCommand: jr2c → jr2c lsp', JSON.stringify(c1));
  check(eq(c2, { command: 'jr2c', args: ['lsp'] }), 'serverCommand: an empty path is jr2c', JSON.stringify(c2));
  check(
    eq(c3, { command: '/opt/jr2c', args: ['lsp', '--log', 'x'] }),
    'serverCommand: extraArgs come after lsp (strings only)',
    JSON.stringify(c3),
  );
  check(c4.command === '/ws/build/jr2c', 'serverCommand: build/jr2c is taken from the workspace folder', c4.command);
  check(c5.command === path.join(os.homedir(), 'bin/jr2c'), 'serverCommand: ~/ is the home directory', c5.command);

  // --- Activation with the fake server.
  settings['jr2.server.path'] = fakeServer;
  settings['jr2.server.extraArgs'] = ['--flag', 'value'];
  const context = { subscriptions: [], extensionPath: extDir };
  ext.activate(context);
  await ext.settled();
  let client = ext.currentClient();
  check(client && client.state === State.Running, 'activate: the client reaches the running state', client && client.state);
  const s1 = starts();
  check(s1.length === 1, 'activate: the server was started once', s1.length);
  const first = s1[0] || {};
  check(eq(first.argv, ['lsp', '--flag', 'value']), 'activate: the server\'s arguments are exactly lsp + extraArgs (no --stdio)', JSON.stringify(first.argv));
  await waitFor(() => methodsOf(first.pid).includes('initialized'));
  check(
    eq(methodsOf(first.pid).slice(0, 2), ['initialize', 'initialized']),
    'activate: initialize answered (Content-Length framing over stdio), then initialized',
    JSON.stringify(methodsOf(first.pid)),
  );
  check(shown.length === 0, 'activate: no message shown', JSON.stringify(shown));
  check(commands.has('jr2.restartServer'), 'activate: the command jr2.restartServer is registered');
  const opts = client ? client.clientOptions : {};
  check(
    eq(opts.documentSelector, [{ scheme: 'file', language: 'jr2' }]),
    'client: documentSelector {scheme: file, language: jr2}',
    JSON.stringify(opts.documentSelector),
  );
  const watchers = opts.synchronize && opts.synchronize.fileEvents;
  check(watchers && watchers.glob === '**/*.jr2', 'client: file events synchronized for **/*.jr2', watchers && watchers.glob);

  // --- The restart command: the old server is shut down, a new one started.
  await commands.get('jr2.restartServer')();
  client = ext.currentClient();
  const s2 = starts();
  const second = s2[1] || {};
  check(s2.length === 2 && second.pid !== first.pid, 'restart command: a second server was started', s2.length);
  check(
    eq(methodsOf(first.pid).slice(-2), ['shutdown', 'exit']),
    'restart command: the first server got shutdown then exit',
    JSON.stringify(methodsOf(first.pid)),
  );
  check(await waitFor(() => !alive(first.pid)), 'restart command: the first server process ended');
  check(client && client.state === State.Running, 'restart command: the new client is running', client && client.state);

  // --- A changed setting restarts; a binary that does not exist: one error, naming the setting.
  settings['jr2.server.path'] = path.join(tmp, 'no-such-dir', 'jr2c');
  fireConfig('jr2.server.path');
  await waitFor(() => shown.length > 0 && ext.currentClient() === undefined);
  await sleep(500); // a second message would come now
  check(
    eq(methodsOf(second.pid).slice(-2), ['shutdown', 'exit']),
    'setting changed: the running server was shut down',
    JSON.stringify(methodsOf(second.pid)),
  );
  check(starts().length === 2, 'setting changed: no server started from a missing path', starts().length);
  check(ext.currentClient() === undefined, 'missing binary (absolute path): no client left');
  check(
    shown.length === 1 && shown[0].kind === 'error',
    'missing binary (absolute path): exactly one error message',
    JSON.stringify(shown),
  );
  const m1 = shown[0] ? shown[0].message : '';
  check(
    m1.includes('jr2.server.path') && m1.includes('does not exist') && m1.includes('Install jr2c'),
    'missing binary (absolute path): the message names jr2.server.path, says it does not exist and how to fix it',
    m1,
  );
  console.log(`      message: ${m1}`);

  // --- The default `jr2c` with no jr2c on the PATH (a fresh activation).
  await deactivate(ext, context);
  shown.length = 0;
  settings['jr2.server.path'] = 'jr2c';
  settings['jr2.server.extraArgs'] = [];
  const savedPath = process.env.PATH;
  const emptyDir = fs.mkdtempSync(path.join(tmp, 'empty-path-'));
  process.env.PATH = emptyDir;
  const context2 = { subscriptions: [] };
  ext.activate(context2);
  await ext.settled();
  process.env.PATH = savedPath;
  await sleep(500);
  check(
    shown.length === 1 && shown[0].kind === 'error',
    'missing binary (jr2c not on the PATH): exactly one error message',
    JSON.stringify(shown),
  );
  const m2 = shown[0] ? shown[0].message : '';
  check(
    m2.includes('"jr2c" was not found on the PATH') && m2.includes('jr2.server.path'),
    'missing binary (jr2c not on the PATH): the message says so and names jr2.server.path',
    m2,
  );
  check(
    shown[0] && eq(shown[0].items, ['Open Settings']),
    'missing binary: the message offers "Open Settings"',
    shown[0] && JSON.stringify(shown[0].items),
  );
  console.log(`      message: ${m2}`);

  // --- A file that is not executable.
  const notExec = path.join(tmp, 'jr2c-not-executable');
  fs.writeFileSync(notExec, 'not a program\n', { mode: 0o644 });
  shown.length = 0;
  settings['jr2.server.path'] = notExec;
  await ext.restart();
  await sleep(300);
  const m3 = shown[0] ? shown[0].message : '';
  check(
    shown.length === 1 && m3.includes('is not an executable file') && m3.includes('jr2.server.path'),
    'not executable: exactly one error message, naming jr2.server.path',
    JSON.stringify(shown),
  );

  // --- The setting fixed: the server starts again, without a new message.
  shown.length = 0;
  settings['jr2.server.path'] = fakeServer;
  fireConfig('jr2.server');
  await waitFor(() => ext.currentClient() && ext.currentClient().state === State.Running);
  check(
    ext.currentClient() && ext.currentClient().state === State.Running && shown.length === 0,
    'setting fixed: the client runs again, no message',
    JSON.stringify(shown),
  );
  const third = starts()[2] || {};
  check(eq(third.argv, ['lsp']), 'setting fixed: started as lsp', JSON.stringify(third.argv));

  // --- An unrelated setting does not restart.
  fireConfig('editor.fontSize');
  await sleep(300);
  check(starts().length === 3, 'another setting changed: no restart', starts().length);

  // --- deactivate stops the client and the server.
  await deactivate(ext, context2);
  check(ext.currentClient() === undefined, 'deactivate: no client left');
  check(
    eq(methodsOf(third.pid).slice(-2), ['shutdown', 'exit']),
    'deactivate: the server got shutdown then exit',
    JSON.stringify(methodsOf(third.pid)),
  );
  check(await waitFor(() => !alive(third.pid)), 'deactivate: the server process ended');

  // --- A jr2c without `lsp` (older than the server): it starts, prints its usage, exits 2.
  shown.length = 0;
  process.env.JR2_FAKE_LSP_MODE = 'usage';
  const context3 = { subscriptions: [] };
  ext.activate(context3);
  await ext.settled();
  await sleep(500);
  delete process.env.JR2_FAKE_LSP_MODE;
  check(ext.currentClient() === undefined, 'a jr2c without lsp: no client left running');
  const m4 = shown[0] ? shown[0].message : '';
  check(
    shown.length === 1 && shown[0].kind === 'error' && m4.includes('ended (exit code 2)') &&
      m4.includes('older than') && m4.includes('jr2.server.path'),
    'a jr2c without lsp: exactly one error message (its exit code, "older than", jr2.server.path), no restart',
    JSON.stringify(shown),
  );
  check(starts().length === 4, 'a jr2c without lsp: started once, not restarted', starts().length);
  check(
    outputLines.join('').includes('no lsp here'),
    'a jr2c without lsp: its stderr is in the output channel',
  );
  console.log(`      message: ${m4}`);
  await deactivate(ext, context3);

  // --- A server that crashes once after it ran is restarted; one that keeps crashing is
  // restarted 4 times, then left stopped with one message.
  shown.length = 0;
  process.env.JR2_FAKE_LSP_MODE = 'crash';
  process.env.JR2_FAKE_LSP_CRASHES = '1';
  const context4 = { subscriptions: [] };
  const before = starts().length;
  ext.activate(context4);
  await ext.settled();
  await waitFor(() => starts().length === before + 2 && ext.currentClient().state === State.Running);
  await sleep(300);
  check(
    starts().length === before + 2 && ext.currentClient().state === State.Running && shown.length === 0,
    'a crash after it ran: the server is restarted once, runs, no message',
    `${starts().length - before} starts, ${ext.currentClient().state}, ${JSON.stringify(shown)}`,
  );
  process.env.JR2_FAKE_LSP_CRASHES = '99';
  await commands.get('jr2.restartServer')();
  const before2 = starts().length - 1;
  await waitFor(() => shown.length > 0, 10000);
  await sleep(500);
  check(
    starts().length - before2 === 5 && shown.length === 1 && shown[0].message.includes('5 times'),
    'crashing again and again: 1 start + 4 restarts, then one message',
    `${starts().length - before2} starts, ${JSON.stringify(shown)}`,
  );
  console.log(`      message: ${shown[0] ? shown[0].message : ''}`);
  delete process.env.JR2_FAKE_LSP_MODE;
  await deactivate(ext, context4);

  // --- A server that never answers initialize: activation does not wait for it, and the
  // restart command ends it and starts another, without a message.
  shown.length = 0;
  process.env.JR2_FAKE_LSP_MODE = 'silent';
  const context5 = { subscriptions: [] };
  const before5 = starts().length;
  ext.activate(context5);
  check(
    await waitFor(() => starts().length === before5 + 1),
    'a server that does not answer: started, activate returned',
  );
  const silent = starts()[before5] || {};
  delete process.env.JR2_FAKE_LSP_MODE;
  await commands.get('jr2.restartServer')();
  check(
    ext.currentClient() && ext.currentClient().state === State.Running && shown.length === 0,
    'a server that does not answer: the restart command starts a new one, no message',
    `${ext.currentClient() && ext.currentClient().state}, ${JSON.stringify(shown)}`,
  );
  check(await waitFor(() => !alive(silent.pid)), 'a server that does not answer: ended by the restart');
  await deactivate(ext, context5);

  // --- The real `jr2c lsp`, when given (vscode_client_test.sh JR2C): it reaches the running
  // state with its real capabilities, and stops on deactivate.
  const real = process.env.JR2_VSCODE_TEST_JR2C;
  if (real) {
    shown.length = 0;
    settings['jr2.server.path'] = real;
    settings['jr2.server.extraArgs'] = [];
    const context6 = { subscriptions: [] };
    ext.activate(context6);
    await ext.settled();
    const rc = ext.currentClient();
    const caps = rc && rc.initializeResult ? rc.initializeResult.capabilities : undefined;
    check(
      rc && rc.state === State.Running && shown.length === 0,
      `the real ${real} lsp: the client reaches the running state, no message`,
      `${rc && rc.state}, ${JSON.stringify(shown)}`,
    );
    console.log(`      its capabilities: ${caps ? Object.keys(caps).sort().join(', ') : 'none'}`);
    const providers = ['Hover', 'Definition', 'Rename', 'CompletionItem', 'DocumentFormattingEdit'];
    const absent = providers.filter((p) => !missing.has(`vscode.languages.register${p}Provider()`));
    check(
      absent.length === 0,
      `the real ${real} lsp: hover, definition, rename, completion and formatting registered`,
      `not registered: ${absent.join(', ')}`,
    );
    await deactivate(ext, context6);
    check(
      ext.currentClient() === undefined && shown.length === 0,
      `the real ${real} lsp: deactivate stops it, no message`,
      JSON.stringify(shown),
    );
  } else {
    console.log('SKIP: the real jr2c lsp (give its path: vscode_client_test.sh JR2C)');
  }

  check(unhandled.length === 0, 'no promise rejected without a handler', unhandled.join('\n'));
  const names = [...missing].sort();
  console.log(
    `vscode API names used that the stub answers with a no-op (${names.length}): ${names.join(', ') || 'none'}`,
  );
}

main()
  .catch((err) => {
    failed++;
    console.log(`FAIL: the test threw: ${err && err.stack ? err.stack : err}`);
  })
  .finally(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
    console.log(`vscode client: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  });
