-- User commands; the module loads on first use. Call require("filescout").setup() to start
-- servers automatically and pass settings.
if vim.g.loaded_filescout then
  return
end
vim.g.loaded_filescout = true

vim.api.nvim_create_user_command("FilescoutFind", function(args)
  if args.args == "" then
    vim.notify("usage: :FilescoutFind {question}", vim.log.levels.WARN)
    return
  end
  if args.bang then
    require("filescout").find_select(args.args)
  else
    require("filescout").find_to_quickfix(args.args)
  end
end, { nargs = "*", bang = true, desc = "filescout: files relevant to a question (! to pick one)" })

vim.api.nvim_create_user_command("FilescoutReindex", function()
  require("filescout").reindex()
end, { desc = "filescout: rescan the workspace" })

vim.api.nvim_create_user_command("FilescoutStatus", function()
  require("filescout").status()
end, { desc = "filescout: what the index holds" })

vim.api.nvim_create_user_command("FilescoutStart", function(args)
  local filescout = require("filescout")
  filescout.start(args.args ~= "" and vim.fn.fnamemodify(args.args, ":p"):gsub("/$", "") or vim.uv.cwd())
end, { nargs = "?", complete = "dir", desc = "filescout: start the server for a directory" })
