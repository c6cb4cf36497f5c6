--- :checkhealth nextedit
local M = {}

local health = vim.health

--- Runs the checks.
function M.check()
  local nextedit = require('nextedit')
  local o = nextedit.options

  health.start('nextedit binary')
  local bin = vim.fn.exepath(o.bin)
  if bin == '' then
    health.error(('%s not found on PATH'):format(o.bin), {
      'Build it (cargo install --path .) and put it on PATH, or pass bin = "/abs/path/nextedit" to setup()',
    })
  else
    local result = vim.system({ bin, '--version' }, { text = true }):wait()
    if result.code == 0 then
      health.ok(('%s (%s)'):format(vim.trim(result.stdout), bin))
    else
      health.error(('%s --version failed: %s'):format(bin, vim.trim(result.stderr or '')))
    end
  end

  health.start('nextedit database')
  if bin ~= '' then
    local argv = { bin, 'doctor', '--only', 'database' }
    if o.db then
      vim.list_extend(argv, { '--db', vim.fn.expand(o.db) })
    end
    local result = vim.system(argv, { text = true }):wait()
    for line in vim.gsplit(vim.trim(result.stdout or ''), '\n') do
      local status, rest = line:match('^(%a+)%s+(.*)$')
      if status == 'ok' then
        health.ok(rest)
      elseif status == 'warn' then
        health.warn(rest)
      elseif status == 'error' then
        health.error(rest)
      elseif line ~= '' and not vim.startswith(line, 'doctor:') then
        health.info(line)
      end
    end
  end

  health.start('nextedit servers')
  if nextedit.is_paused() then
    health.warn('recording is paused (:NexteditResume)')
  end
  local wrapped = 0
  for _, name in ipairs(o.servers or {}) do
    local cmd = vim.lsp.config and vim.lsp.config[name] and vim.lsp.config[name].cmd
    if type(cmd) ~= 'table' then
      health.warn(('%s: no command list configured yet (call setup() after vim.lsp.config)'):format(name))
    elseif not nextedit.is_wrapped_cmd(cmd) and not nextedit.is_paused() then
      health.error(('%s: not wrapped (%s)'):format(name, table.concat(cmd, ' ')))
    else
      local server = nextedit.unwrap(cmd)[1]
      if vim.fn.executable(server) == 1 then
        health.ok(('%s: %s through the proxy'):format(name, vim.fn.exepath(server)))
        wrapped = wrapped + 1
      else
        health.error(('%s: %s is not executable'):format(name, server))
      end
    end
  end
  if #(o.servers or {}) == 0 then
    health.warn('no servers configured: require("nextedit").setup{ servers = { "pyright" } }')
  end
  for _, client in ipairs(vim.lsp.get_clients()) do
    if nextedit.is_wrapped(client) then
      health.ok(('client %d %s is recording'):format(client.id, client.name))
    end
  end
  return wrapped
end

return M
