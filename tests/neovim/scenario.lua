-- Drives a real Neovim (0.7.2, Debian 12) as an LSP client of the onnxlens language server.
--
-- Run headless by tests/neovim/test_neovim.py:
--   nvim --headless -u NONE -i NONE -n -c "luafile scenario.lua"
-- with ONNXLENS_NVIM_SCENARIO naming a JSON file that says what to do (see the test). Everything
-- the editor saw is appended, one JSON object per line, to the scenario's `output` file; the
-- Python side makes the assertions. This script only acts and records, so a missing server
-- feature shows up as a recorded fact (an empty list, an error reply), not as a Lua crash.
--
-- Neovim 0.7.2 has no vim.lsp.start: the client is started with vim.lsp.start_client and
-- attached per buffer with vim.lsp.buf_attach_client, the way 0.7 configurations did it.
-- Every wait is bounded (vim.wait), and the exit status says how the run ended:
--   0 scenario ran to the end, 1 Lua error, 2 the server never initialized.

local scenario = vim.json.decode(table.concat(vim.fn.readfile(os.getenv('ONNXLENS_NVIM_SCENARIO')), '\n'))
local out = assert(io.open(scenario.output, 'a'))
local started = vim.loop.hrtime()
local step = 'start'
local server_exit = nil

local function elapsed_ms()
  return math.floor((vim.loop.hrtime() - started) / 1e6)
end

local function record(event, fields)
  fields = vim.tbl_extend('force', fields or {}, { event = event, step = step, ms = elapsed_ms() })
  out:write(vim.json.encode(fields), '\n')
  out:flush()
end

-- Record what the server pushes, then let Neovim's own handlers do their usual work.
local function observe(method, summarize)
  local original = vim.lsp.handlers[method]
  vim.lsp.handlers[method] = function(err, result, ctx, config)
    record('server:' .. method, summarize(result or {}))
    if original then
      return original(err, result, ctx, config)
    end
    -- What 0.7.2 answers for a server request it has no handler for.
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
  end
end

-- How many times each file's diagnostics were published: a wait can ask for a fresh publish.
local publishes = {}
observe('textDocument/publishDiagnostics', function(r)
  local file = vim.uri_to_fname(r.uri or '')
  publishes[file] = (publishes[file] or 0) + 1
  return { file = file, count = #(r.diagnostics or {}) }
end)
-- How many exports' progress has ended: the server ends it after publishing the result's
-- diagnostics (an export's errors are published earlier, when its translation ends).
local progress_ends = 0
observe('$/progress', function(r)
  if type(r.value) == 'table' and r.value.kind == 'end' then progress_ends = progress_ends + 1 end
  return { token = tostring(r.token), value = r.value }
end)
observe('window/showMessage', function(r) return { type = r.type, message = r.message } end)
observe('window/logMessage', function(r) return { type = r.type, message = r.message } end)
observe('window/showDocument', function(r) return { uri = r.uri, params = r } end)
observe('workspace/codeLens/refresh', function() return {} end)

-- Neovim 0.7 waits out the whole timeout for a request no attached server supports.
local function supported(client, provider)
  if client.server_capabilities[provider] then return true end
  record('unsupported', { provider = provider })
  return false
end

local function wait(ms, condition)
  return vim.wait(ms, condition, 20)
end

local function buffer_for(path)
  local bufnr = vim.fn.bufnr(path)
  if bufnr == -1 then
    return nil
  end
  return bufnr
end

local function onnxlens_diagnostics(path)
  local bufnr = buffer_for(path)
  if not bufnr then
    return {}
  end
  return vim.tbl_filter(function(d)
    return d.source == 'onnxlens'
  end, vim.diagnostic.get(bufnr))
end

-- Sent ahead of its export's result (docs/lsp.md): the result's publish replaces it.
local function early(d)
  local lsp = d.user_data and d.user_data.lsp
  return lsp ~= nil and type(lsp.data) == 'table' and lsp.data.preliminary == true
end

-- Everything vim.diagnostic holds, for every buffer, in plain JSON-able form.
local function snapshot_diagnostics()
  local items = {}
  for _, d in ipairs(vim.diagnostic.get()) do
    table.insert(items, {
      file = vim.api.nvim_buf_get_name(d.bufnr),
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      severity = d.severity, source = d.source, code = d.code, message = d.message,
      -- Kept by Neovim from the LSP diagnostic (0.7 announces relatedInformation support).
      related = vim.tbl_map(function(r)
        return { file = vim.uri_to_fname(r.location.uri), line = r.location.range.start.line,
                 message = r.message }
      end, d.user_data and d.user_data.lsp and d.user_data.lsp.relatedInformation or {}),
    })
  end
  record('diagnostics', { items = items })
end

-- A step's wait condition, on the onnxlens diagnostics Neovim holds: `nonempty` and `empty`
-- list paths (`nonempty`: the export's result is in, none is early); `fresh` lists paths whose
-- diagnostics must have been published again since `since` (a copy of `publishes` taken before
-- the action), so an old state cannot satisfy it; with `ends_since`, an export's progress must
-- have ended since then (the diagnostics alone show the errors before the export finishes).
local function wait_for(condition, ms, since, ends_since)
  local function satisfied()
    if ends_since and progress_ends <= ends_since then return false end
    for _, path in ipairs(condition.fresh or {}) do
      if (publishes[path] or 0) <= ((since or {})[path] or 0) then return false end
    end
    for _, path in ipairs(condition.nonempty or {}) do
      local shown = onnxlens_diagnostics(path)
      if #shown == 0 or #vim.tbl_filter(early, shown) > 0 then return false end
    end
    for _, path in ipairs(condition.empty or {}) do
      if #onnxlens_diagnostics(path) ~= 0 then return false end
    end
    return true
  end
  local ok = wait(ms, satisfied)
  record('wait', { condition = condition, satisfied = ok })
  return ok
end

-- Go to a file like a user: switch to its buffer if it is loaded (`:edit` of a loaded file
-- reloads it, and a reload drops the buffer's diagnostics until the next publish), else `:edit`.
local function open(client_id, path)
  local bufnr = buffer_for(path)
  if bufnr and vim.api.nvim_buf_is_loaded(bufnr) then
    vim.api.nvim_set_current_buf(bufnr)
  else
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    bufnr = vim.api.nvim_get_current_buf()
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
  return bufnr
end

-- What `vim.lsp.buf.code_action()` sends in 0.7, aimed at the diagnostic's own range.
local function request_code_actions(bufnr, diagnostic)
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    range = {
      start = { line = diagnostic.lnum, character = diagnostic.col },
      ['end'] = { line = diagnostic.end_lnum, character = diagnostic.end_col },
    },
    context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, diagnostic.lnum) },
  }
  local replies, err = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, scenario.wait_ms)
  local actions, errors = {}, {}
  for _, reply in pairs(replies or {}) do
    if reply.error then table.insert(errors, reply.error) end
    vim.list_extend(actions, reply.result or {})
  end
  record('code_actions', {
    line = diagnostic.lnum,
    titles = vim.tbl_map(function(a) return a.title end, actions),
    actions = actions,
    errors = errors,
    request_error = err,
  })
  return actions
end

-- Run an action's command the way 0.7's code-action menu does: workspace/executeCommand.
local function execute(client, bufnr, action)
  local command = type(action.command) == 'table' and action.command or action
  local reply = client.request_sync('workspace/executeCommand', {
    command = command.command, arguments = command.arguments,
  }, scenario.wait_ms, bufnr)
  record('execute_command', {
    command = command.command,
    result = reply and reply.result,
    error = reply and reply.err,
    timed_out = reply == nil,
    buffers = vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs()),
  })
end

local function code_lenses(client_id, bufnr)
  vim.api.nvim_set_current_buf(bufnr)
  -- get() returns the lenses of the previous refresh until the new reply arrives: forget them.
  vim.lsp.codelens.save({}, bufnr, client_id)
  vim.lsp.codelens.refresh()
  local function resolved()
    local lenses = vim.lsp.codelens.get(bufnr)
    if #lenses == 0 then return false end
    for _, lens in ipairs(lenses) do
      if not lens.command then return false end
    end
    return true
  end
  local ok = wait(scenario.wait_ms, resolved)
  record('code_lenses', {
    file = vim.api.nvim_buf_get_name(bufnr),
    resolved = ok,
    lenses = vim.tbl_map(function(lens)
      return { line = lens.range.start.line, title = lens.command and lens.command.title,
               command = lens.command and lens.command.command }
    end, vim.lsp.codelens.get(bufnr)),
  })
end

-- What `K` (vim.lsp.buf.hover) asks for, with the cursor on the first non-blank of the line.
local function hover(bufnr, line)
  local text = vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1] or ''
  vim.api.nvim_win_set_cursor(0, { line + 1, #text:match('^%s*') })
  local replies, err = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover',
    vim.lsp.util.make_position_params(), scenario.wait_ms)
  local contents, errors = {}, {}
  for _, reply in pairs(replies or {}) do
    if reply.error then table.insert(errors, reply.error) end
    if reply.result then
      -- The same conversion Neovim does before showing a hover window.
      local markdown = vim.lsp.util.convert_input_to_markdown_lines(reply.result.contents)
      table.insert(contents, table.concat(markdown, '\n'))
    end
  end
  record('hover', { line = line, contents = contents, errors = errors, request_error = err })
end

-- Edit like a user: change the buffer, then :w (Neovim sends didChange and didSave).
local function apply_fix(client_id, fix)
  local bufnr = open(client_id, fix.file)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local found = {}
  for i, line in ipairs(lines) do
    if line == fix.old then table.insert(found, i) end
  end
  assert(#found == 1, ('expected one line %q in %s, found %d'):format(fix.old, fix.file, #found))
  vim.api.nvim_buf_set_lines(bufnr, found[1] - 1, found[1], false, { fix.new })
  vim.cmd('write')
  record('saved', { file = fix.file, line = found[1] - 1 })
end

local function run()
  local client_id = vim.lsp.start_client({
    name = 'onnxlens',
    cmd = scenario.cmd,
    cmd_cwd = scenario.root_dir,
    root_dir = scenario.root_dir,
    workspace_folders = { { uri = vim.uri_from_fname(scenario.root_dir), name = 'workspace' } },
    on_exit = function(code, signal)
      server_exit = { code = code, signal = signal }
      record('server_exit', server_exit)
    end,
  })
  assert(client_id, 'vim.lsp.start_client returned nil')
  local client = vim.lsp.get_client_by_id(client_id)

  step = 'open'
  local bufnr = open(client_id, scenario.open)
  if not wait(scenario.wait_ms, function() return client.initialized or server_exit end)
      or not client.initialized then
    record('not_initialized', {})
    return 2
  end
  record('initialized', { capabilities = client.server_capabilities })
  wait_for(scenario.open_wait, scenario.wait_ms)
  snapshot_diagnostics()

  step = 'code_actions'
  local diagnostic = onnxlens_diagnostics(scenario.open)[1]
  if diagnostic and supported(client, 'codeActionProvider') then
    local actions = request_code_actions(bufnr, diagnostic)
    for _, action in ipairs(actions) do
      if action.title == scenario.execute_action then
        execute(client, bufnr, action)
        break
      end
    end
  end

  step = 'code_lenses'
  local lenses = supported(client, 'codeLensProvider')
  if lenses then code_lenses(client_id, open(client_id, scenario.lens_file)) end

  for i, fix in ipairs(scenario.fixes) do
    step = 'fix' .. i
    local before = vim.deepcopy(publishes)
    local ends_before = progress_ends
    apply_fix(client_id, fix)
    -- the export the fix started has finished, too (lenses and hover show its result)
    wait_for(fix.wait, scenario.wait_ms, before, ends_before)
    snapshot_diagnostics()
  end

  step = 'fixed_code_lenses'
  if lenses then code_lenses(client_id, open(client_id, scenario.lens_file)) end

  step = 'hover'
  if supported(client, 'hoverProvider') then
    hover(open(client_id, scenario.hover.file), scenario.hover.line)
  end

  -- Shut the server down the way Neovim does on exit, so no worker outlives the test.
  step = 'stop'
  vim.lsp.stop_client(client_id)
  wait(10000, function() return server_exit ~= nil end)
  record('stopped', { exit = server_exit })
  return 0
end

local ok, status = xpcall(run, debug.traceback)
if not ok then
  record('lua_error', { message = tostring(status) })
  status = 1
end
out:close()
vim.cmd('cquit ' .. status)
