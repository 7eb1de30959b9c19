-- Headless test of :checkhealth filescout against the real server and against wrong commands.
--   nvim --headless --clean -l health_test.lua PLUGIN_DIR WORKSPACE PYTHON CACHE
-- Any failed check raises, which makes nvim exit non-zero.

local plugin_dir, root, python, cache = unpack(arg)
vim.opt.rtp:prepend(plugin_dir)
vim.cmd("runtime plugin/filescout.lua")
vim.env.FILESCOUT_CACHE_DIR = cache
vim.cmd.cd(root)

local function check(condition, message)
  if not condition then
    error("check failed: " .. message, 2)
  end
end

local function wait(condition, what, timeout)
  check(vim.wait(timeout or 30000, condition, 20), "timed out waiting for " .. what)
end

-- The health report as the user reads it (the health buffer's text); the buffer is closed after.
local function checkhealth()
  vim.cmd("checkhealth filescout")
  check(vim.api.nvim_buf_get_name(0) == "health://", "the health buffer is shown")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

local function has(text, wanted)
  check(text:find(wanted, 1, true), "the report says " .. vim.inspect(wanted) .. ":\n" .. text)
end

local function lacks(text, unwanted)
  check(not text:find(unwanted, 1, true), "the report does not say " .. vim.inspect(unwanted) .. ":\n" .. text)
end

local filescout = require("filescout")
vim.notify = function() end

-- A command that is not installed: an error naming it, and what to do.
filescout.setup({ cmd = { "filescout-not-installed", "serve" }, autostart = false })
local report = checkhealth()
has(report, "ERROR server command not found: `filescout-not-installed`")
has(report, "ADVICE:")
has(report, "Neovim looked for it on its PATH: ")
has(report, "Install filescout (Python 3.10 or newer)")
has(report, "setup({ cmd = {")
lacks(report, "OK ")

-- A Python without filescout: the version check fails, and says to install it there.
filescout.setup({ cmd = { python, "-m", "filescout_not_installed", "serve" }, autostart = false })
report = checkhealth()
has(report, "OK server command: `" .. python .. " -m filescout_not_installed serve`")
has(report, "ERROR `" .. python .. " -m filescout_not_installed --version` failed (exit 1:")
has(report, "filescout is not installed in that Python: install it there")
has(report, "the index is checked once the server command works")
check(select(2, report:gsub("ERROR", "")) == 1, "one error, for the command:\n" .. report)

-- The real server, not running, and a workspace never indexed: found, its version, and a warning
-- with the way to index.
local version = vim.system({ python, "-m", "filescout", "--version" }, { text = true }):wait().stdout
version = vim.trim(version)
check(version:match("^filescout %S+$"), "filescout --version: " .. version)
filescout.setup({ cmd = { python, "-m", "filescout", "serve" }, settings = { logLevel = "warning" },
                  autostart = false })
report = checkhealth()
has(report, "OK server command: `" .. python .. " -m filescout serve` (" .. python .. ")")
has(report, "OK version: " .. version)
has(report, "workspace: " .. root .. " (Neovim's working directory)")
has(report, "no server running for it (autostart is off): :FilescoutStart starts one")
has(report, "WARNING index: not built yet (0 files)")
has(report, "index it from a terminal: `" .. python .. " -m filescout index " .. root .. "`")
lacks(report, "ERROR")

-- Started by opening a file, indexed: the report comes from the running server, all OK.
local ended = false
vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(event)
    local value = event.data.params.value
    if type(value) == "table" and value.kind == "end" then ended = true end
  end,
})
filescout.setup({ cmd = { python, "-m", "filescout", "serve" }, settings = { logLevel = "warning" },
                  autostart = true })
vim.cmd.edit(root .. "/src/shop/cart.py")
wait(function() return filescout.client(root) ~= nil end, "the client to start")
wait(function() return ended end, "indexing progress to end (LspProgress)")
local client = filescout.client(root)
report = checkhealth()
has(report, "OK version: " .. version)
has(report, "workspace: " .. root .. " (the project of src/shop/cart.py)")
has(report, string.format("OK server running for it (client %d, %s)", client.id, version))
check(report:find("OK index: 5 files %(.*%), last scan %d%d%d%d%-"), "the index is reported:\n" .. report)
has(report, "index file: " .. cache)
lacks(report, "WARNING")
lacks(report, "ERROR")

-- The server stopped, the command broken: an error for the command, the workspace still named.
client:stop()
wait(function() return client:is_stopped() end, "the server to stop", 10000)
wait(function() return filescout.client(root) == nil end, "the client to go", 10000)
filescout.setup({ cmd = { root .. "/no/such/filescout", "serve" }, autostart = false })
report = checkhealth()
has(report, "ERROR server command not found: `" .. root .. "/no/such/filescout`")
has(report, "No executable file has that path.")
has(report, "workspace: " .. root)
print("neovim checkhealth: all checks passed")
vim.cmd("qa!")
