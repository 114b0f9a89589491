-- `jr2c lsp` under a real client: headless Neovim 0.7 (Debian's `neovim`), with its own LSP
-- client only (vim.lsp.start_client + vim.lsp.buf_attach_client; 0.7 has no vim.lsp.start).
-- Run by run.sh, which writes the fixture (WORK/types.jr2, WORK/main.jr2) and checks it with
-- `jr2c check`:
--   nvim --headless --clean -u NONE -c "luafile lsp_test.lua"    with JR2C and WORK set
-- Steps: open main.jr2 with a misspelled event (E0100 and its quick fix), fix it with an
-- incremental change (the error clears), hover, go to a definition across the import, rename an
-- event in both files, complete a state after `-> `, then shut the server down (it must exit 0).
-- Each check prints `ok: …` or `FAIL: …` to WORK/lsp_test.log; the run ends `qall!` (exit 0)
-- when all pass and `cquit 1` on any failure, or when the whole run takes longer than
-- LSP_TEST_TIMEOUT seconds (20 by default).

local uv = vim.loop
local JR2C = os.getenv('JR2C')
local WORK = os.getenv('WORK')
local TIMEOUT_S = tonumber(os.getenv('LSP_TEST_TIMEOUT') or '20')

local logfile = io.open((WORK or '.') .. '/lsp_test.log', 'a')
local function log(line)
  logfile:write(line, '\n')
  logfile:flush()
end

local failures = 0
local finished = false

local server_pid -- set once the client has started
local exited -- { code, signal } once the server process has ended

local function finish()
  if finished then return end
  finished = true
  -- A server still running (a failed run) is ended here: Neovim 0.7's exit handler would leave
  -- it behind. SIGTERM, then SIGKILL.
  if server_pid and not exited then
    uv.kill(server_pid, 'sigterm')
    vim.wait(1000, function() return exited ~= nil end, 10)
    if not exited then uv.kill(server_pid, 'sigkill') end
  end
  if failures == 0 then
    log('PASS: all checks')
    logfile:close()
    vim.cmd('qall!')
  else
    log(string.format('FAIL: %d check(s) failed', failures))
    logfile:close()
    vim.cmd('cquit 1')
  end
end

local function ok(msg) log('ok: ' .. msg) end
local function fail(msg)
  failures = failures + 1
  log('FAIL: ' .. msg)
end

if not JR2C or not WORK then
  fail('JR2C and WORK must be set (run tests/editors/nvim/run.sh)')
  finish()
  return
end

local v = vim.version()
log(string.format('nvim %d.%d.%d, server: %s lsp', v.major, v.minor, v.patch, JR2C))

local deadline = uv.hrtime() + TIMEOUT_S * 1e9
local function remaining_ms()
  return math.max(0, math.floor((deadline - uv.hrtime()) / 1e6))
end

-- The backstop: whatever blocks, the run fails once the global timeout has passed.
local global_timer = uv.new_timer()
global_timer:start(TIMEOUT_S * 1000 + 500, 0, function()
  vim.schedule(function()
    if not finished then
      fail(string.format('the test did not end within %d s', TIMEOUT_S))
      finish()
    end
  end)
end)

-- Waits until cond() is true, at most ms (and never past the global deadline).
local function wait_for(ms, cond)
  local limit = math.min(ms, remaining_ms())
  return vim.wait(limit, cond, 10)
end

local function check(cond, msg)
  if not cond then error(msg, 0) end
end

local function step(name, fn)
  if remaining_ms() == 0 then
    fail(name .. ': skipped, the global timeout has passed')
    return false
  end
  local okay, err = pcall(fn)
  if okay then return true end
  fail(name .. ': ' .. tostring(err))
  return false
end

local function read_file(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local s = f:read('*a')
  f:close()
  return s
end

local function realpath(p) return uv.fs_realpath(p) or p end

-- The 0-based line of the first line of `lines` that contains `needle` (plain), and the 0-based
-- byte column of needle in it (also its UTF-16 column on the fixture's ASCII lines).
local function find(lines, needle)
  for i, l in ipairs(lines) do
    local c = l:find(needle, 1, true)
    if c then return i - 1, c - 1 end
  end
  return nil
end

local function buf_lines(bufnr) return vim.api.nvim_buf_get_lines(bufnr, 0, -1, true) end

local main_path = WORK .. '/main.jr2'
local types_path = WORK .. '/types.jr2'
local main_uri = vim.uri_from_fname(main_path)

vim.o.swapfile = false
vim.o.hidden = true

-- Every publishDiagnostics the server sends, in order (then Neovim's own handler runs).
local published = {} -- list of { uri, diagnostics, version }
local function publishes_for(path)
  local n = 0
  local last
  for _, p in ipairs(published) do
    if realpath(vim.uri_to_fname(p.uri)) == realpath(path) then
      n = n + 1
      last = p
    end
  end
  return n, last
end

local client_id = vim.lsp.start_client({
  name = 'jr2c',
  cmd = { JR2C, 'lsp' },
  cmd_cwd = WORK,
  root_dir = WORK,
  get_language_id = function() return 'jr2' end,
  -- Send each change at once (0.7 waits 150 ms by default).
  flags = { debounce_text_changes = 0, exit_timeout = 2000 },
  handlers = {
    ['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
      if result then
        table.insert(published, { uri = result.uri, diagnostics = result.diagnostics, version = result.version })
      end
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
    end,
  },
  on_exit = function(code, signal) exited = { code = code, signal = signal } end,
})

if client_id then server_pid = vim.lsp.get_client_by_id(client_id).rpc.pid end

local client
local initialized = step('initialize', function()
  check(client_id, 'vim.lsp.start_client did not start `' .. JR2C .. ' lsp`')
  local okay = wait_for(5000, function()
    local c = vim.lsp.get_client_by_id(client_id)
    return exited ~= nil or (c ~= nil and c.initialized == true)
  end)
  check(not exited, string.format('the server exited during initialize (code %s, signal %s)',
    exited and exited.code, exited and exited.signal))
  check(okay, 'no answer to initialize within 5 s')
  client = vim.lsp.get_client_by_id(client_id)
  local caps = client.server_capabilities
  local sync = caps.textDocumentSync
  local change = type(sync) == 'table' and sync.change or sync
  check(change == 2, 'textDocumentSync.change is ' .. vim.inspect(change) .. ', not 2 (incremental)')
  for _, p in ipairs({ 'hoverProvider', 'definitionProvider', 'renameProvider', 'completionProvider' }) do
    check(caps[p], 'the capabilities have no ' .. p .. ': ' .. vim.inspect(caps))
  end
  check(client.offset_encoding == 'utf-16', 'offset encoding ' .. tostring(client.offset_encoding))
  ok('initialize: incremental sync, hover, definition, rename and completion offered')
end)
if not initialized then
  finish()
  return
end

local function request(method, params, bufnr)
  local resp, err = client.request_sync(method, params, math.min(5000, remaining_ms()), bufnr)
  check(resp, method .. ': no answer (' .. tostring(err) .. ')')
  check(not resp.err, method .. ': error answer ' .. vim.inspect(resp.err))
  return resp.result
end

local function errors_in(bufnr)
  return vim.diagnostic.get(bufnr, { severity = vim.diagnostic.severity.ERROR })
end

local function show_diags(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out, string.format('%d:%d %s %s', d.lnum + 1, d.col + 1, tostring(d.code), d.message))
  end
  return #out == 0 and '(none)' or table.concat(out, ' | ')
end

-- After an edit: waits for the server's next publish for `path` (newer than `since`, a count
-- from publishes_for; at most 2 s, as a server need not publish what did not change), then until
-- the buffer has no error, and checks it stays so for a moment.
local function wait_clean(bufnr, path, since, what)
  wait_for(2000, function() return publishes_for(path) > since end)
  local okay = wait_for(6000, function() return #errors_in(bufnr) == 0 end)
  check(okay, what .. ': errors remain: ' .. show_diags(bufnr)
    .. string.format(' (%d publish(es) since the edit)', publishes_for(path) - since))
  wait_for(300, function() return false end)
  check(#errors_in(bufnr) == 0, what .. ': an error came back: ' .. show_diags(bufnr))
end

-- 1–2. Open main.jr2 with `on types.aprove`: E0100 and its quick fix; fix it, the error clears.
vim.cmd('edit ' .. vim.fn.fnameescape(main_path))
local main_buf = vim.api.nvim_get_current_buf()
local typo_row, typo_col

step('E0100 on a misspelled event', function()
  local row, col = find(buf_lines(main_buf), 'on types.approve')
  check(row, 'main.jr2 has no `on types.approve`')
  typo_row, typo_col = row, col + #'on types.'
  -- Misspell it in the buffer only (the file stays good): the server must check the text it is
  -- given in didOpen.
  vim.api.nvim_buf_set_text(main_buf, typo_row, typo_col, typo_row, typo_col + #'approve', { 'aprove' })
  check(vim.lsp.buf_attach_client(main_buf, client_id), 'buf_attach_client refused main.jr2')
  local found
  local okay = wait_for(5000, function()
    for _, d in ipairs(vim.diagnostic.get(main_buf)) do
      if d.code == 'E0100' and d.lnum == typo_row then found = d return true end
    end
    return false
  end)
  check(okay, 'no E0100 on line ' .. (typo_row + 1) .. ' within 5 s; diagnostics: ' .. show_diags(main_buf))
  check(found.lnum == typo_row and found.col == typo_col and found.end_col == typo_col + #'aprove',
    string.format('E0100 is at %d:%d-%d, not on `aprove` (%d:%d-%d)', found.lnum, found.col,
      found.end_col, typo_row, typo_col, typo_col + 6))
  check(found.severity == vim.diagnostic.severity.ERROR, 'E0100 is not an error: ' .. tostring(found.severity))
  check(found.source == 'jr2c', 'source is ' .. tostring(found.source) .. ', not jr2c')
  check(found.message:find('aprove', 1, true), 'the message does not name `aprove`: ' .. found.message)
  ok('E0100 on `types.aprove` at ' .. (typo_row + 1) .. ':' .. (typo_col + 1) .. ': ' .. found.message)
  -- The quick fix the server offers for it (codeAction with the diagnostic in the context).
  local _, last = publishes_for(main_path)
  local lsp_diag
  for _, d in ipairs(last and last.diagnostics or {}) do
    if d.code == 'E0100' then lsp_diag = d end
  end
  check(lsp_diag, 'the last publish for main.jr2 has no E0100')
  local actions = request('textDocument/codeAction', {
    textDocument = { uri = main_uri },
    range = lsp_diag.range,
    context = { diagnostics = { lsp_diag } },
  }, main_buf)
  local fix
  for _, a in ipairs(actions or {}) do
    local edits = a.edit and a.edit.changes and a.edit.changes[main_uri]
    if not edits and a.edit and a.edit.documentChanges then
      for _, dc in ipairs(a.edit.documentChanges) do
        if dc.textDocument and dc.textDocument.uri == main_uri then edits = dc.edits end
      end
    end
    for _, e in ipairs(edits or {}) do
      if e.newText:find('approve', 1, true) then fix = a end
    end
  end
  check(fix, 'no code action writes `approve`: ' .. vim.inspect(actions))
  check(fix.kind == 'quickfix', 'the fix is of kind ' .. tostring(fix.kind) .. ', not quickfix')
  ok('quick fix offered: ' .. tostring(fix.title))
end)

step('the fix clears E0100', function()
  check(typo_row, 'no misspelling to fix')
  local since = publishes_for(main_path)
  -- An edit of 6 bytes in one line: Neovim sends it as one incremental change.
  vim.api.nvim_buf_set_text(main_buf, typo_row, typo_col, typo_row, typo_col + #'aprove', { 'approve' })
  wait_clean(main_buf, main_path, since, 'after the fix')
  ok('after an incremental didChange to `types.approve`, no error remains')
end)

-- 3. Hover on `types.Ticket` in the machine's parameter.
step('hover', function()
  local row, col = find(buf_lines(main_buf), 'types.Ticket')
  check(row, 'main.jr2 has no `types.Ticket`')
  local pos = { line = row, character = col + #'types.' + 2 }
  local result = request('textDocument/hover', { textDocument = { uri = main_uri }, position = pos }, main_buf)
  check(result and result.contents, 'no hover at ' .. vim.inspect(pos))
  local c = result.contents
  check(type(c) ~= 'table' or c.kind == nil or c.kind == 'markdown',
    'the hover is ' .. tostring(c.kind) .. ', not markdown')
  local text = table.concat(vim.lsp.util.convert_input_to_markdown_lines(c), '\n')
  check(text:find('Ticket', 1, true), 'the hover does not name Ticket: ' .. text)
  check(text:find('title', 1, true), 'the hover does not show the field `title`: ' .. text)
  ok('hover on types.Ticket: ' .. text:gsub('%s+$', ''):gsub('\n', ' \\n '))
end)

-- 3b. UTF-16 positions: hover on `title` in `ticket.title`, after `é` (2 bytes, 1 UTF-16 unit)
-- and `🎫` (4 bytes, 2 units) on the same line; the hover's range, if any, must be that name's.
step('hover after non-ASCII text (UTF-16)', function()
  local lines = buf_lines(main_buf)
  local row, col = find(lines, 'ticket.title }')
  check(row, 'main.jr2 has no `ticket.title }`')
  local line = lines[row + 1]
  local name_col = col + #'ticket.' -- bytes
  local _, u16 = vim.str_utfindex(line, name_col)
  check(u16 == name_col - 3, 'the fixture line is not the one with é and 🎫: ' .. line)
  local pos = { line = row, character = u16 + 2 }
  local result = request('textDocument/hover', { textDocument = { uri = main_uri }, position = pos }, main_buf)
  check(result and result.contents, 'no hover at ' .. vim.inspect(pos) .. ' (`title`, UTF-16)')
  local text = table.concat(vim.lsp.util.convert_input_to_markdown_lines(result.contents), '\n')
  check(text:find('title', 1, true) and text:find('string', 1, true),
    'the hover on `title` does not say `title` and `string`: ' .. text)
  if result.range then
    local r = result.range
    check(r.start.line == row and r.start.character == u16 and r['end'].character == u16 + #'title',
      string.format('the hover range is %s, not `title` at UTF-16 %d-%d (bytes %d-%d)',
        vim.inspect(r), u16, u16 + 5, name_col, name_col + 5))
  end
  ok(string.format('hover on `title` at UTF-16 column %d (byte %d)%s: %s', u16 + 2, name_col + 2,
    result.range and string.format(', its range UTF-16 %d-%d', u16 + 1, u16 + 6) or '',
    (text:gsub('%s+$', ''):gsub('\n', ' \\n '))))
end)

-- 4. Definition of `types.approve` (main.jr2) is the `event approve` line of types.jr2.
step('definition across the import', function()
  local row, col = find(buf_lines(main_buf), 'on types.approve')
  check(row, 'main.jr2 has no `on types.approve`')
  local pos = { line = row, character = col + #'on types.' + 3 }
  local result = request('textDocument/definition', { textDocument = { uri = main_uri }, position = pos }, main_buf)
  check(result and not vim.tbl_isempty(result), 'no definition at ' .. vim.inspect(pos))
  if result.uri or result.targetUri then result = { result } end
  local loc = result[1]
  local uri = loc.uri or loc.targetUri
  local range = loc.range or loc.targetSelectionRange
  local types_lines = vim.split(read_file(types_path), '\n', true)
  local decl_row, decl_col = find(types_lines, 'event approve')
  check(realpath(vim.uri_to_fname(uri)) == realpath(types_path), 'the definition is in ' .. uri .. ', not types.jr2')
  check(range.start.line == decl_row, string.format('the definition is at line %d, not %d (`event approve`)',
    range.start.line + 1, decl_row + 1))
  ok(string.format('definition of types.approve: types.jr2:%d:%d (`event approve` is line %d, name at column %d)',
    range.start.line + 1, range.start.character + 1, decl_row + 1, decl_col + #'event ' + 1))
end)

-- 5. Rename the event `approve` (from its use in main.jr2) to `accept`: both files change.
step('rename across files', function()
  local row, col = find(buf_lines(main_buf), 'on types.approve')
  check(row, 'main.jr2 has no `on types.approve`')
  local name_col = col + #'on types.'
  local pos = { line = row, character = name_col + 2 }
  local td = { uri = main_uri }
  local prep = request('textDocument/prepareRename', { textDocument = td, position = pos }, main_buf)
  check(prep, 'prepareRename answered null at ' .. vim.inspect(pos))
  local prange = prep.range or prep
  check(prange.start and prange.start.line == row and prange.start.character == name_col
    and prange['end'].character == name_col + #'approve',
    'prepareRename does not give the range of `approve`: ' .. vim.inspect(prep))
  local edit = request('textDocument/rename', { textDocument = td, position = pos, newName = 'accept' }, main_buf)
  check(edit, 'rename answered null')
  check(edit.changes, 'the WorkspaceEdit has no `changes`: ' .. vim.inspect(edit))
  local files = {}
  for uri, edits in pairs(edit.changes) do
    files[realpath(vim.uri_to_fname(uri))] = #edits
  end
  check(files[realpath(main_path)] and files[realpath(types_path)],
    'the WorkspaceEdit does not change both files: ' .. vim.inspect(edit))
  ok(string.format('rename edits main.jr2 (%d) and types.jr2 (%d)', files[realpath(main_path)],
    files[realpath(types_path)]))
  local since = publishes_for(main_path)
  vim.lsp.util.apply_workspace_edit(edit, client.offset_encoding)
  local main_text = table.concat(buf_lines(main_buf), '\n')
  check(main_text:find('on types.accept ->', 1, true) and not main_text:find('types.approve', 1, true),
    'main.jr2 after the rename:\n' .. main_text)
  -- apply_workspace_edit loaded types.jr2 into a buffer; open it with the server too (didOpen
  -- with the new text), then write both (didSave).
  local types_buf = vim.fn.bufnr(types_path)
  check(types_buf > 0 and vim.api.nvim_buf_is_loaded(types_buf), 'types.jr2 is not in a buffer after the edit')
  local types_text = table.concat(buf_lines(types_buf), '\n')
  check(types_text:find('event accept external', 1, true) and not types_text:find('event approve', 1, true),
    'types.jr2 after the rename:\n' .. types_text)
  check(vim.lsp.buf_attach_client(types_buf, client_id), 'buf_attach_client refused types.jr2')
  vim.cmd('silent wall')
  local on_disk = read_file(types_path) .. read_file(main_path)
  check(on_disk:find('event accept', 1, true) and on_disk:find('types.accept', 1, true)
    and not on_disk:find('approve ', 1, true), 'the files on disk:\n' .. on_disk)
  ok('both buffers and files say `accept`')
  wait_clean(main_buf, main_path, since, 'after the rename, main.jr2')
  check(#errors_in(types_buf) == 0, 'after the rename, types.jr2: ' .. show_diags(types_buf))
  ok('no error in either file after the rename')
end)

-- 6. Completion after `-> ` in a new transition, typed on a line of its own (the file does not
-- parse until a target is written): the machine's states.
local inserted_row
step('completion of a state', function()
  local row = find(buf_lines(main_buf), 'invoke gate')
  check(row, 'main.jr2 has no `invoke gate`')
  local line = '    on types.reject -> '
  vim.api.nvim_buf_set_lines(main_buf, row + 1, row + 1, true, { line })
  inserted_row = row + 1
  local pos = { line = inserted_row, character = #line }
  local result = request('textDocument/completion', {
    textDocument = { uri = main_uri }, position = pos, context = { triggerKind = 1 },
  }, main_buf)
  check(result, 'completion answered null at ' .. vim.inspect(pos))
  local items = result.items or result
  local labels = {}
  local seen = {}
  for _, it in ipairs(items) do
    table.insert(labels, it.label)
    seen[it.label] = true
  end
  check(seen.decided and seen.waiting, string.format(
    'completion at %d:%d (after `%s`) does not offer the states decided and waiting; items: %s',
    pos.line + 1, pos.character + 1, line, #labels == 0 and '(none)' or table.concat(labels, ', ')))
  ok('completion after `-> `: ' .. table.concat(labels, ', '))
end)

step('removing the new line', function()
  check(inserted_row, 'no line was inserted')
  local since = publishes_for(main_path)
  vim.api.nvim_buf_set_lines(main_buf, inserted_row, inserted_row + 1, true, {})
  wait_clean(main_buf, main_path, since, 'after removing the line')
  ok('removing the line leaves no error')
end)

-- The end: shutdown + exit; the server must exit (with 0: it had the shutdown request).
step('shutdown', function()
  local pid = server_pid
  client.stop()
  local okay = wait_for(3000, function() return exited ~= nil end)
  check(okay, 'the server (pid ' .. tostring(pid) .. ') did not exit within 3 s of shutdown and exit')
  check(exited.code == 0 and exited.signal == 0,
    string.format('the server exited with code %s, signal %s', exited.code, exited.signal))
  check(not uv.kill(pid, 0), 'the server process ' .. pid .. ' still exists')
  ok('shutdown and exit: the server exited with 0')
end)

global_timer:stop()
finish()
