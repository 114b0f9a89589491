// The VS Code client of `jr2c lsp` (#35). Plain CommonJS, no build step.
//
// On the first .jr2 file it starts `<jr2.server.path> lsp <jr2.server.extraArgs…>` (default
// `jr2c lsp`, from the PATH) and talks LSP to it over stdin/stdout with vscode-languageclient.
// If the binary cannot be started it shows one error message, naming the setting. The command
// "jr2: Restart the language server" and any change to a jr2.server.* setting restart it.
'use strict';

const vscode = require('vscode');
const {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
} = require('vscode-languageclient/node');
const { serverCommand, spawnServer, startErrorMessage } = require('./server');

const OPEN_SETTINGS = 'Open Settings';
const OPEN_OUTPUT = 'Open Output';

let client; // the current LanguageClient, or undefined when none runs
let serverProcess; // the process of the current client
let outputChannel; // one channel across restarts
let fileWatcher; // **/*.jr2, told to the server as workspace/didChangeWatchedFiles
let queue = Promise.resolve(); // starts and stops, one after the other

function settings() {
  const config = vscode.workspace.getConfiguration('jr2.server');
  return { path: config.get('path'), extraArgs: config.get('extraArgs') };
}

function workspaceFolder() {
  const folders = vscode.workspace.workspaceFolders;
  return folders && folders.length > 0 && folders[0].uri.scheme === 'file'
    ? folders[0].uri.fsPath
    : undefined;
}

function showStartError(message, ...extra) {
  void Promise.resolve(vscode.window.showErrorMessage(message, ...extra, OPEN_SETTINGS)).then(
    (choice) => {
      if (choice === OPEN_SETTINGS) {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'jr2.server.path');
      } else if (choice === OPEN_OUTPUT) {
        outputChannel.show(true);
      }
    },
  );
}

// The client, with its notifications held back until the server has answered `initialize`:
// a server that exits or fails then would otherwise raise three to five messages, one per step
// of the client's start, and restart four times. Those go to the output channel only, and
// start() shows one message instead.
//
// Two rejections vscode-languageclient 9.0.1 leaves unhandled when the connection closes during
// `initialize` are handled here (VS Code would log them as "rejected promise not handled"): the
// promise of start() (start() itself then resolves, with the client in the startFailed state),
// and the stop() it calls on a client that is not running.
class Jr2Client extends LanguageClient {
  error(message, data, showNotification) {
    super.error(message, data, this.jr2Started ? showNotification : false);
  }

  start() {
    const result = super.start();
    if (this._onStart && typeof this._onStart.catch === 'function') this._onStart.catch(() => {});
    return result;
  }

  stop(timeout) {
    if (!this.jr2Started && this.state !== State.Running) return Promise.resolve();
    return super.stop(timeout);
  }
}

// Restarts a server that crashed after it ran (4 times in 3 minutes at most, like the client's
// own handler); never one that did not answer `initialize` (it would fail the same way again).
function errorHandler(clientRef) {
  const restarts = [];
  return {
    error: (_error, _message, count) => ({
      action: count && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
    }),
    closed: () => {
      const c = clientRef();
      if (!c || !c.jr2Started) return { action: CloseAction.DoNotRestart, handled: true };
      restarts.push(Date.now());
      if (restarts.length > 4 && restarts[restarts.length - 1] - restarts[0] <= 3 * 60 * 1000) {
        return {
          action: CloseAction.DoNotRestart,
          message:
            'jr2: the language server crashed 5 times in 3 minutes and will not be restarted. ' +
            'Its output is in "jr2 language server"; ' +
            '"jr2: Restart the language server" starts it again.',
        };
      }
      if (restarts.length > 4) restarts.shift();
      return { action: CloseAction.Restart };
    },
  };
}

// Starts a client, unless the server's binary cannot be started: then the one message says so
// and no client is made (the client would add its own, vaguer, "couldn't create connection").
async function start() {
  const cwd = workspaceFolder();
  const { command, args } = serverCommand(settings(), cwd);
  let first;
  try {
    first = await spawnServer(command, args, { cwd });
  } catch (err) {
    outputChannel.appendLine(`${command} ${args.join(' ')}: ${err && err.message}`);
    showStartError(startErrorMessage(command, err));
    return;
  }
  outputChannel.appendLine(`started: ${command} ${args.join(' ')} (pid ${first.pid})`);
  // The process is ours (not an Executable of the client's), so that a failed spawn is known
  // before the client exists, and so that no `--stdio` is added to the arguments: the client
  // adds it to an Executable with `transport: stdio`, and the server's command line is exactly
  // `jr2c lsp ARGS…`. The transport is stdio all the same: the client reads the process's
  // stdout and writes its stdin. The client calls this again when it restarts a crashed server.
  let exit; // how the last process ended, if it did
  const serverOptions = async () => {
    const child = first || (await spawnServer(command, args, { cwd }));
    first = undefined;
    serverProcess = child;
    exit = undefined;
    child.once('exit', (code, signal) => {
      exit = signal ? `signal ${signal}` : `exit code ${code}`;
    });
    return { process: child, detached: false };
  };
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'jr2' }],
    synchronize: { fileEvents: fileWatcher },
    outputChannel,
    errorHandler: errorHandler(() => c),
    // Not retried, and no message of its own: start() shows one.
    initializationFailedHandler: () => false,
  };
  const c = new Jr2Client('jr2', 'jr2 language server', serverOptions, clientOptions);
  client = c;
  let failure;
  try {
    await c.start();
  } catch (err) {
    failure = err;
  }
  if (c.state === State.Running && client === c) {
    c.jr2Started = true;
    return;
  }
  if (c.jr2Abandoned) {
    outputChannel.appendLine('the server did not answer initialize; restarted');
    if (client === c) client = undefined;
    return;
  }
  // The server started but did not answer `initialize`: it exited (a jr2c older than
  // `jr2c lsp` prints its usage and exits 2) or answered with an error. The client has written
  // why, and the server's stderr, to the output channel.
  const reason = failure && failure.message ? failure.message : String(failure || 'no answer');
  outputChannel.appendLine(`the language client did not start: ${reason}`);
  const child = serverProcess;
  if (child && child.exitCode === null && child.signalCode === null) {
    await Promise.race([
      new Promise((resolve) => child.once('exit', resolve)),
      new Promise((resolve) => setTimeout(resolve, 200)),
    ]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
  if (client === c) client = undefined;
  const line = `"${command} ${args.join(' ')}"`;
  const why = exit
    ? `${line} ended (${exit}) before it answered. Is this jr2c older than "jr2c lsp"?`
    : `${line} failed to initialize (${reason}).`;
  showStartError(
    `jr2: the language server did not start: ${why} Its output is in "jr2 language server". ` +
      'Set "jr2.server.path" to a jr2c that has "jr2c lsp".',
    OPEN_OUTPUT,
  );
}

// Stops the current client and ends its process (the server should exit on `exit`; if it has
// not within 2 s, it is killed).
async function stop() {
  const c = client;
  client = undefined;
  // A client that restarts a crashed server: let it finish (or fail) first.
  if (c && c.state === State.Starting) {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 5000);
      const sub = c.onDidChangeState((e) => {
        if (e.newState !== State.Starting) {
          clearTimeout(timer);
          sub.dispose();
          resolve();
        }
      });
    });
  }
  const child = serverProcess;
  serverProcess = undefined;
  // A client that failed to start holds no connection: there is nothing to stop.
  if (c && c.state === State.Running) {
    try {
      await c.stop(2000);
    } catch (err) {
      const reason = err && err.message ? err.message : err;
      outputChannel.appendLine(`stopping the language client: ${reason}`);
    }
  }
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const timer = new Promise((resolve) => setTimeout(resolve, 2000));
    if ((await Promise.race([exited.then(() => true), timer.then(() => false)])) === false) {
      child.kill('SIGTERM');
    }
  }
}

function enqueue(work) {
  queue = queue.then(work).catch((err) => {
    outputChannel.appendLine(`jr2 client: ${err && err.stack ? err.stack : err}`);
  });
  return queue;
}

function restart() {
  // A server that never answers `initialize` would hold the restart up behind its start: it is
  // ended (that start then fails without a message), and the restart goes on.
  const c = client;
  const child = serverProcess;
  if (c && !c.jr2Started && child && child.exitCode === null && child.signalCode === null) {
    c.jr2Abandoned = true;
    child.kill('SIGTERM');
  }
  return enqueue(async () => {
    await stop();
    await start();
  });
}

function activate(context) {
  outputChannel = vscode.window.createOutputChannel('jr2 language server');
  fileWatcher = vscode.workspace.createFileSystemWatcher('**/*.jr2');
  context.subscriptions.push(
    outputChannel,
    fileWatcher,
    vscode.commands.registerCommand('jr2.restartServer', () => restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('jr2.server')) void restart();
    }),
  );
  // Not awaited: activation does not wait for the server.
  void enqueue(start);
}

function deactivate() {
  return enqueue(stop);
}

// For tests/editors/vscode_client_test.js: the current client (undefined when none runs), and
// a promise of the end of the starts and stops asked for so far.
function currentClient() {
  return client;
}
function settled() {
  return queue;
}

module.exports = { activate, deactivate, restart, currentClient, settled };
