// How the extension starts `jr2c lsp`, without the `vscode` module, so that
// tests/editors/vscode_client_test.js can run it under plain Node:
//  - serverCommand: the setting jr2.server.path (and jr2.server.extraArgs) to a command line;
//  - spawnServer: start it, and fail at once, with the reason, when it cannot be started;
//  - startErrorMessage: the one error message the user then sees.
'use strict';

const cp = require('child_process');
const os = require('os');
const path = require('path');

const DEFAULT_PATH = 'jr2c';

// The command line of the language server: `<jr2.server.path> lsp <jr2.server.extraArgs…>`.
// A bare name (`jr2c`) is left to the PATH; `~/` is the home directory; a relative path with a
// slash (`build/jr2c`) is taken from the first workspace folder, if there is one.
// The arguments are exactly these: the client adds no `--stdio` (see extension.js).
function serverCommand(settings, workspaceFolder) {
  const raw = settings && typeof settings.path === 'string' ? settings.path.trim() : '';
  let command = raw === '' ? DEFAULT_PATH : raw;
  if (command === '~' || command.startsWith('~/')) {
    command = path.join(os.homedir(), command.slice(1));
  } else if (!path.isAbsolute(command) && /[\\/]/.test(command) && workspaceFolder) {
    command = path.resolve(workspaceFolder, command);
  }
  const extra = settings && Array.isArray(settings.extraArgs) ? settings.extraArgs : [];
  const args = ['lsp', ...extra.filter((a) => typeof a === 'string')];
  return { command, args };
}

// Starts the server process. Resolves with the child once it runs; rejects with the spawn error
// (ENOENT, EACCES, …) when it cannot be started, so that nothing else has to guess why.
function spawnServer(command, args, options) {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = cp.spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      reject(err);
      return;
    }
    const onError = (err) => reject(err);
    child.once('error', onError);
    child.once('spawn', () => {
      child.removeListener('error', onError);
      // A later error (a write after the server exited) must not be an uncaught exception:
      // the language client reports the closed connection itself.
      child.on('error', () => {});
      resolve(child);
    });
  });
}

// The message shown when the server cannot be started: what was run, why it failed, and the fix.
// Plain text: VS Code does not render Markdown in notifications.
function startErrorMessage(command, err) {
  const code = err && err.code;
  const bare = !/[\\/]/.test(command);
  let why;
  if (code === 'ENOENT' && bare) {
    why = `"${command}" was not found on the PATH`;
  } else if (code === 'ENOENT') {
    why = `"${command}" does not exist`;
  } else if (code === 'EACCES') {
    why = `"${command}" is not an executable file`;
  } else {
    why = `"${command}" could not be run (${(err && err.message) || err})`;
  }
  return (
    `jr2: the language server did not start: ${why}. ` +
    'Install jr2c and put it on the PATH, or set the setting "jr2.server.path" ' +
    'to the full path of the jr2c binary.'
  );
}

module.exports = { DEFAULT_PATH, serverCommand, spawnServer, startErrorMessage };
