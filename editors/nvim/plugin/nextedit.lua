-- nextedit user commands; the plugin does nothing else until require('nextedit').setup{}.
if vim.g.loaded_nextedit then
  return
end
vim.g.loaded_nextedit = true

vim.api.nvim_create_user_command('NexteditStatus', function()
  require('nextedit').status()
end, { desc = 'nextedit: recording state, wrapped servers, signals sent' })

vim.api.nvim_create_user_command('NexteditPause', function()
  require('nextedit').pause()
end, { desc = 'nextedit: restart wrapped servers without the proxy (record nothing)' })

vim.api.nvim_create_user_command('NexteditResume', function()
  require('nextedit').resume()
end, { desc = 'nextedit: restart wrapped servers behind the proxy again' })
