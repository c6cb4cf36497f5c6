--- nextedit for Neovim: start language servers through `nextedit proxy` and send the
--- editor signals ($/nextedit/cursor, selection, visibleRanges, focus) to them.
---
--- Only clients whose command was wrapped by this plugin ever receive signals: a
--- server that is not behind the proxy would see unknown notifications.
---
--- Positions are built in each client's negotiated offset encoding. Visible ranges are
--- whole lines, half-open: {start = {line = first, character = 0}, end = {line = last + 1,
--- character = 0}} (0-based lines).

local M = {}

local has_011 = vim.fn.has('nvim-0.11') == 1

---@class nextedit.Options
---@field servers string[]? names of vim.lsp.config / lspconfig configs to wrap
---@field bin string? the nextedit executable (default "nextedit", found on PATH)
---@field db string? database file (default: the proxy's, $NEXTEDIT_DB or ~/.local/share/nextedit/nextedit.db)
---@field exclude string[]? extra globs whose text is never stored
---@field proxy_args string[]? more arguments for `nextedit proxy`
---@field debounce integer? milliseconds signals wait for the editor to settle (default 100, 0 = immediately)
---@field signals boolean? send editor signals (default true)

local defaults = {
  servers = {},
  bin = 'nextedit',
  db = nil,
  exclude = {},
  proxy_args = {},
  debounce = 100,
  signals = true,
}

--- Effective options (defaults until `setup` is called).
M.options = vim.deepcopy(defaults)

local state = {
  paused = false,
  setup_done = false,
  --- config name → original (unwrapped) cmd, for the configs this plugin wrapped.
  originals = {},
  --- client id → { kind → { params = table, timer = uv_timer } }
  pending = {},
  --- client id → { kind → json of the last params sent }
  last = {},
  --- number of signals sent per kind, for :NexteditStatus
  sent = {},
}

local function notify(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

local function basename(path)
  return (path:gsub('.*/', ''))
end

--- The proxy prefix for a server command: `{bin, 'proxy', [--db X], [--exclude G]..., '--'}`.
---@return string[]
function M.prefix()
  local o = M.options
  local argv = { o.bin, 'proxy' }
  if o.db and o.db ~= '' then
    vim.list_extend(argv, { '--db', vim.fn.expand(o.db) })
  end
  for _, glob in ipairs(o.exclude or {}) do
    vim.list_extend(argv, { '--exclude', glob })
  end
  vim.list_extend(argv, o.proxy_args or {})
  table.insert(argv, '--')
  return argv
end

--- Whether `cmd` already starts the proxy.
---@param cmd any
---@return boolean
function M.is_wrapped_cmd(cmd)
  if type(cmd) ~= 'table' or type(cmd[1]) ~= 'string' then
    return false
  end
  return basename(cmd[1]) == basename(M.options.bin) and cmd[2] == 'proxy'
end

--- The server command after the proxy's `--`, or `cmd` itself when it is not wrapped.
---@param cmd string[]
---@return string[]
function M.unwrap(cmd)
  if not M.is_wrapped_cmd(cmd) then
    return cmd
  end
  for i, arg in ipairs(cmd) do
    if arg == '--' then
      return vim.list_slice(cmd, i + 1)
    end
  end
  return cmd
end

--- `cmd` behind the proxy: `{ 'nextedit', 'proxy', …, '--', unpack(cmd) }`. Unchanged when
--- already wrapped or when recording is paused. Use it with `vim.lsp.start` or lspconfig.
---@param cmd string[]
---@return string[]
function M.cmd(cmd)
  if type(cmd) ~= 'table' or M.is_wrapped_cmd(cmd) or state.paused then
    return cmd
  end
  local argv = M.prefix()
  vim.list_extend(argv, cmd)
  return argv
end

--- Whether a client runs behind the proxy (and so accepts the signals).
---@param client vim.lsp.Client
---@return boolean
function M.is_wrapped(client)
  return client ~= nil and M.is_wrapped_cmd(client.config and client.config.cmd)
end

-- ---------------------------------------------------------------------------
-- Signals

--- LSP character of byte column `col` (0-based) in `line` for an encoding.
local function character(line, col, encoding)
  col = math.min(col, #line)
  if encoding == 'utf-8' then
    return col
  end
  if has_011 then
    return vim.str_utfindex(line, encoding, col, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, col)
  return encoding == 'utf-32' and utf32 or utf16
end

local function line_text(buf, row)
  return vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
end

--- LSP position of a 0-based row and byte column in `buf`.
local function position(buf, row, col, encoding)
  return { line = row, character = character(line_text(buf, row), col, encoding) }
end

local function text_document(buf)
  return { uri = vim.uri_from_bufnr(buf) }
end

local function wrapped_clients(buf)
  local out = {}
  if state.paused or not M.options.signals then
    return out
  end
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    if M.is_wrapped(client) then
      table.insert(out, client)
    end
  end
  return out
end

local function send_now(client, kind, params)
  local json = vim.json.encode(params)
  local last = state.last[client.id] or {}
  state.last[client.id] = last
  if last[kind] == json then
    return
  end
  last[kind] = json
  state.sent[kind] = (state.sent[kind] or 0) + 1
  notify(client, '$/nextedit/' .. kind, params)
end

local function flush_one(client_id, kind)
  local per_client = state.pending[client_id]
  local entry = per_client and per_client[kind]
  if not entry then
    return
  end
  per_client[kind] = nil
  entry.timer:stop()
  entry.timer:close()
  local client = vim.lsp.get_client_by_id(client_id)
  if client and not client:is_stopped() then
    send_now(client, kind, entry.params)
  end
end

--- Sends every debounced signal now.
function M.flush()
  for client_id, kinds in pairs(state.pending) do
    for kind in pairs(kinds) do
      flush_one(client_id, kind)
    end
  end
end

--- Number of signals waiting for their debounce.
---@return integer
function M.pending()
  local n = 0
  for _, kinds in pairs(state.pending) do
    n = n + vim.tbl_count(kinds)
  end
  return n
end

local function queue(client, kind, params)
  local delay = M.options.debounce or 0
  if delay <= 0 then
    send_now(client, kind, params)
    return
  end
  local per_client = state.pending[client.id] or {}
  state.pending[client.id] = per_client
  local entry = per_client[kind]
  if entry then
    entry.params = params
    entry.timer:stop()
  else
    entry = { params = params, timer = vim.uv.new_timer() }
    per_client[kind] = entry
  end
  local id = client.id
  entry.timer:start(delay, 0, vim.schedule_wrap(function()
    flush_one(id, kind)
  end))
end

local function cursor_params(win, client)
  local buf = vim.api.nvim_win_get_buf(win)
  local pos = vim.api.nvim_win_get_cursor(win)
  return {
    textDocument = text_document(buf),
    position = position(buf, pos[1] - 1, pos[2], client.offset_encoding),
  }
end

--- Selections of window `win` (visual mode), or one empty range at the cursor.
local function selection_ranges(win, encoding)
  local buf = vim.api.nvim_win_get_buf(win)
  local mode = vim.api.nvim_get_mode().mode:sub(1, 1)
  local cur = vim.api.nvim_win_get_cursor(win)
  local is_current = win == vim.api.nvim_get_current_win()
  if not is_current or (mode ~= 'v' and mode ~= 'V' and mode ~= '\22') then
    local p = position(buf, cur[1] - 1, cur[2], encoding)
    return { { start = p, ['end'] = p } }
  end
  local v = vim.fn.getpos('v')
  local a = { v[2] - 1, v[3] - 1 }
  local b = { cur[1] - 1, cur[2] }
  if a[1] > b[1] or (a[1] == b[1] and a[2] > b[2]) then
    a, b = b, a
  end
  if mode == 'V' then
    return { {
      start = { line = a[1], character = 0 },
      ['end'] = { line = b[1] + 1, character = 0 },
    } }
  end
  if mode == 'v' then
    -- The character under the end is selected: the range ends after it.
    local line = line_text(buf, b[1])
    local char_len = vim.str_utf_end(line, b[2] + 1) + 1
    if b[2] >= #line then
      char_len = 0
    end
    return { {
      start = position(buf, a[1], a[2], encoding),
      ['end'] = position(buf, b[1], b[2] + char_len, encoding),
    } }
  end
  -- Blockwise: one range per line.
  local ranges = {}
  local ok, region = pcall(vim.fn.getregionpos, vim.fn.getpos('v'), vim.fn.getpos('.'), { type = '\22' })
  if ok then
    for _, pair in ipairs(region) do
      local row = pair[1][2] - 1
      local line = line_text(buf, row)
      local s = math.min(pair[1][3] - 1, #line)
      local e = math.min(pair[2][3], #line)
      if e > 0 and e <= #line then
        e = e + vim.str_utf_end(line, e)
      end
      table.insert(ranges, {
        start = position(buf, row, s, encoding),
        ['end'] = position(buf, row, math.max(s, e), encoding),
      })
    end
  end
  return ranges
end

local function visible_params(win)
  local buf = vim.api.nvim_win_get_buf(win)
  -- nvim_win_call returns only the first value of its function: return a table.
  local view = vim.api.nvim_win_call(win, function()
    return { vim.fn.line('w0'), vim.fn.line('w$') }
  end)
  local first, last = view[1], view[2]
  return {
    textDocument = text_document(buf),
    ranges = { {
      start = { line = first - 1, character = 0 },
      ['end'] = { line = last, character = 0 },
    } },
  }
end

local function on_cursor(win)
  local buf = vim.api.nvim_win_get_buf(win)
  for _, client in ipairs(wrapped_clients(buf)) do
    queue(client, 'cursor', cursor_params(win, client))
    queue(client, 'selection', {
      textDocument = text_document(buf),
      selections = selection_ranges(win, client.offset_encoding),
    })
  end
end

local function on_scroll(win)
  if not vim.api.nvim_win_is_valid(win) then
    return
  end
  local buf = vim.api.nvim_win_get_buf(win)
  for _, client in ipairs(wrapped_clients(buf)) do
    queue(client, 'visibleRanges', visible_params(win))
  end
end

local function on_focus(buf, focused)
  for _, client in ipairs(wrapped_clients(buf)) do
    -- Signals already waiting belong before the focus change.
    for kind in pairs(state.pending[client.id] or {}) do
      flush_one(client.id, kind)
    end
    send_now(client, 'focus', { textDocument = text_document(buf), focused = focused })
  end
end

local function on_window_focus(focused)
  local buf = vim.api.nvim_get_current_buf()
  for _, client in ipairs(wrapped_clients(buf)) do
    for kind in pairs(state.pending[client.id] or {}) do
      flush_one(client.id, kind)
    end
    send_now(client, 'focus', { focused = focused })
  end
end

-- ---------------------------------------------------------------------------
-- Inline suggestions (Neovim 0.12's vim.lsp.inline_completion)
--
-- Its API accepts the displayed item (`get`, with an `on_accept` hook) and switches
-- items (`select`); it has no event for an item shown or hidden and no partial accept.
-- So the plugin sends `$/nextedit/suggestion` for what passes through its own accept
-- functions: `accepted` (the whole item) and `accepted_part` (its next word).

--- Sends one suggestion signal to the buffer's recorded clients (never deduplicated:
--- the same item may be taken twice).
local function send_suggestion(buf, client_id, params)
  for _, client in ipairs(wrapped_clients(buf)) do
    if client_id == nil or client.id == client_id then
      for kind in pairs(state.pending[client.id] or {}) do
        flush_one(client.id, kind)
      end
      local p = vim.tbl_extend('force', { textDocument = text_document(buf) }, params)
      local row, col = unpack(vim.api.nvim_win_get_cursor(0))
      p.position = position(buf, row - 1, col, client.offset_encoding)
      state.sent.suggestion = (state.sent.suggestion or 0) + 1
      notify(client, '$/nextedit/suggestion', p)
    end
  end
end

--- The plain text of an inline item (a snippet's text as Neovim shows it).
local function item_text(item)
  local insert = item.insert_text
  if type(insert) == 'string' then
    return insert
  end
  return tostring(require('vim.lsp._snippet_grammar').parse(insert.value))
end

--- Length of `text` in a client's position encoding.
local function encoded_length(text, encoding)
  if encoding == 'utf-8' then
    return #text
  end
  return character(text, #text, encoding)
end

--- Puts `text` where an inline item goes: over its range (from the range start), else at the cursor.
local function insert_item_text(buf, item, text)
  local lines = vim.split(text, '\n', { plain = true })
  if item.range then
    local r = item.range
    vim.api.nvim_buf_set_text(buf, r.start.row, r.start.col, r.end_.row, r.end_.col, lines)
    vim.api.nvim_win_set_cursor(0, {
      r.start.row + #lines,
      (#lines == 1 and r.start.col or 0) + #lines[#lines],
    })
  else
    vim.api.nvim_paste(text, false, -1)
  end
end

--- Accepts the displayed inline suggestion as `vim.lsp.inline_completion.get()` does,
--- and records it (`accepted`). Returns false when none is displayed (for a fallback key).
---@return boolean
function M.inline_accept()
  local buf = vim.api.nvim_get_current_buf()
  return vim.lsp.inline_completion.get({
    on_accept = function(item)
      local client = vim.lsp.get_client_by_id(item.client_id)
      local text = item_text(item)
      send_suggestion(buf, item.client_id, {
        event = 'accepted',
        text = text,
        acceptedLength = encoded_length(text, client and client.offset_encoding or 'utf-16'),
      })
      if type(item.insert_text) == 'table' and item.insert_text.kind == 'snippet' then
        vim.snippet.expand(item.insert_text.value)
      else
        insert_item_text(buf, item, text)
      end
      if item.command and client then
        client:exec_cmd(item.command, { bufnr = buf })
      end
    end,
  })
end

--- Accepts the displayed suggestion up to the end of its next word (what the cursor has
--- not typed yet), and records it (`accepted_part`, with the accepted length). Neovim
--- then asks the server again, as after any typing.
---@return boolean
function M.inline_accept_word()
  local buf = vim.api.nvim_get_current_buf()
  return vim.lsp.inline_completion.get({
    on_accept = function(item)
      local client = vim.lsp.get_client_by_id(item.client_id)
      local text = item_text(item)
      local row, col = unpack(vim.api.nvim_win_get_cursor(0))
      -- What of the text is typed already: the range start up to the cursor.
      local typed = 0
      if item.range and item.range.start.row == row - 1 then
        typed = math.max(0, col - item.range.start.col)
      end
      local rest = text:sub(typed + 1)
      local word = rest:match('^%s*[^%s]+') or rest
      local accepted = text:sub(1, typed) .. word
      send_suggestion(buf, item.client_id, {
        event = 'accepted_part',
        text = text,
        acceptedLength = encoded_length(accepted, client and client.offset_encoding or 'utf-16'),
      })
      vim.api.nvim_paste(word, false, -1)
    end,
  })
end

local function forget(client_id)
  for kind in pairs(state.pending[client_id] or {}) do
    local entry = state.pending[client_id][kind]
    entry.timer:stop()
    entry.timer:close()
  end
  state.pending[client_id] = nil
  state.last[client_id] = nil
end

local function create_autocmds()
  local group = vim.api.nvim_create_augroup('nextedit', { clear = true })
  vim.api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI' }, {
    group = group,
    callback = function()
      on_cursor(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd('ModeChanged', {
    group = group,
    callback = function()
      on_cursor(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd({ 'WinScrolled', 'WinResized' }, {
    group = group,
    callback = function()
      for win_id in pairs(vim.v.event or {}) do
        local win = tonumber(win_id)
        if win then
          on_scroll(win)
        end
      end
    end,
  })
  vim.api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    callback = function()
      on_scroll(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(args)
      on_focus(args.buf, true)
      on_cursor(vim.api.nvim_get_current_win())
      on_scroll(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd('BufLeave', {
    group = group,
    callback = function(args)
      on_focus(args.buf, false)
    end,
  })
  vim.api.nvim_create_autocmd('FocusGained', {
    group = group,
    callback = function()
      on_window_focus(true)
    end,
  })
  vim.api.nvim_create_autocmd('FocusLost', {
    group = group,
    callback = function()
      on_window_focus(false)
    end,
  })
  vim.api.nvim_create_autocmd('LspAttach', {
    group = group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if not client or not M.is_wrapped(client) or args.buf ~= vim.api.nvim_get_current_buf() then
        return
      end
      -- The buffer was entered before the server attached: send its initial state.
      send_now(client, 'focus', { textDocument = text_document(args.buf), focused = true })
      on_cursor(vim.api.nvim_get_current_win())
      on_scroll(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd('LspDetach', {
    group = group,
    callback = function(args)
      forget(args.data.client_id)
    end,
  })
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = group,
    callback = function()
      M.flush()
    end,
  })
end

-- ---------------------------------------------------------------------------
-- Wrapping configured servers

--- Wraps the `cmd` of the Neovim 0.11+ config `name` (vim.lsp.config).
local function wrap_lsp_config(name)
  local resolved = vim.lsp.config[name]
  if not resolved then
    vim.notify(('nextedit: no vim.lsp.config named %q'):format(name), vim.log.levels.WARN)
    return
  end
  local cmd = resolved.cmd
  if type(cmd) ~= 'table' then
    vim.notify(('nextedit: %s has no command list to wrap (cmd must be a list)'):format(name),
      vim.log.levels.WARN)
    return
  end
  state.originals[name] = M.unwrap(cmd)
  vim.lsp.config(name, { cmd = M.cmd(state.originals[name]) })
end

--- Wraps lspconfig's `setup{}` for the configured servers (Neovim 0.10 and lspconfig users).
local function hook_lspconfig()
  local ok, util = pcall(require, 'lspconfig.util')
  if not ok or state.lspconfig_hooked then
    return
  end
  state.lspconfig_hooked = true
  util.on_setup = util.add_hook_before(util.on_setup, function(config)
    if vim.tbl_contains(M.options.servers, config.name) and type(config.cmd) == 'table' then
      state.originals[config.name] = M.unwrap(config.cmd)
      config.cmd = M.cmd(state.originals[config.name])
    end
  end)
end

--- Configures the plugin.
---@param opts nextedit.Options?
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.servers then
    M.options.servers = opts.servers
  end
  if opts and opts.exclude then
    M.options.exclude = opts.exclude
  end
  if has_011 and vim.lsp.config then
    for _, name in ipairs(M.options.servers) do
      wrap_lsp_config(name)
    end
  end
  hook_lspconfig()
  create_autocmds()
  state.setup_done = true
end

-- ---------------------------------------------------------------------------
-- Pause / resume: restart the wrapped clients without (or with) the proxy, so that
-- nothing at all is recorded while paused.

--- Restarts the clients `select` picks with the command `to_cmd` gives.
local function restart_clients(select, to_cmd)
  for _, client in ipairs(vim.lsp.get_clients()) do
    if not client:is_stopped() and select(client) then
      local config = vim.deepcopy(client.config)
      config.cmd = to_cmd(config.cmd)
      local bufs = vim.tbl_keys(client.attached_buffers or {})
      forget(client.id)
      if has_011 then
        client:stop()
      else
        client.stop()
      end
      for _, buf in ipairs(bufs) do
        if vim.api.nvim_buf_is_loaded(buf) then
          -- Never reuse the client that is stopping (same name and root).
          vim.lsp.start(config, {
            bufnr = buf,
            reuse_client = function(other)
              return not other:is_stopped() and other.id ~= client.id
                and other.name == config.name and vim.deep_equal(other.config.cmd, config.cmd)
            end,
          })
        end
      end
    end
  end
end

--- Stops recording: restarts the wrapped servers without the proxy and stops signals.
function M.pause()
  if state.paused then
    return
  end
  M.flush()
  state.paused = true
  if has_011 and vim.lsp.config then
    for name, original in pairs(state.originals) do
      vim.lsp.config(name, { cmd = original })
    end
  end
  state.paused_names = {}
  restart_clients(function(client)
    if M.is_wrapped(client) then
      state.paused_names[client.name] = true
      return true
    end
    return false
  end, M.unwrap)
end

--- Resumes recording: restarts the servers behind the proxy again.
function M.resume()
  if not state.paused then
    return
  end
  state.paused = false
  if has_011 and vim.lsp.config then
    for name, original in pairs(state.originals) do
      vim.lsp.config(name, { cmd = M.cmd(original) })
    end
  end
  local names = state.paused_names or {}
  state.paused_names = nil
  restart_clients(function(client)
    return (names[client.name] or state.originals[client.name] ~= nil) and not M.is_wrapped(client)
  end, M.cmd)
end

--- Whether recording is paused.
---@return boolean
function M.is_paused()
  return state.paused
end

--- Lines describing the plugin's state (for :NexteditStatus).
---@return string[]
function M.status_lines()
  local lines = {}
  local bin = vim.fn.exepath(M.options.bin)
  table.insert(lines, ('nextedit: %s'):format(state.paused and 'paused' or 'recording'))
  table.insert(lines, ('binary: %s'):format(bin ~= '' and bin or (M.options.bin .. ' (not found)')))
  table.insert(lines, ('database: %s'):format(M.options.db or '(proxy default)'))
  local names = vim.tbl_keys(state.originals)
  table.sort(names)
  table.insert(lines, ('wrapped configs: %s'):format(#names > 0 and table.concat(names, ', ') or 'none'))
  for _, client in ipairs(vim.lsp.get_clients()) do
    table.insert(lines, ('client %d %s: %s'):format(client.id, client.name,
      M.is_wrapped(client) and 'through the proxy' or 'direct (not recorded)'))
  end
  local kinds = vim.tbl_keys(state.sent)
  table.sort(kinds)
  local counts = {}
  for _, kind in ipairs(kinds) do
    table.insert(counts, ('%s %d'):format(kind, state.sent[kind]))
  end
  table.insert(lines, ('signals sent: %s'):format(#counts > 0 and table.concat(counts, ', ') or 'none'))
  return lines
end

--- Prints the plugin's state.
function M.status()
  vim.api.nvim_echo({ { table.concat(M.status_lines(), '\n') } }, false, {})
end

return M
