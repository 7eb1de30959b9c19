-- Headless test of the Neovim plugin against the real server.
--   nvim --headless --clean -l plugin_test.lua PLUGIN_DIR WORKSPACE PYTHON CACHE
-- Any failed check raises, which makes nvim exit non-zero.

local plugin_dir, root, python, cache = unpack(arg)
vim.opt.rtp:prepend(plugin_dir)
vim.cmd("runtime plugin/filescout.lua")
vim.env.FILESCOUT_CACHE_DIR = cache

local function check(condition, message)
  if not condition then
    error("check failed: " .. message, 2)
  end
end

local function wait(condition, what, timeout)
  check(vim.wait(timeout or 30000, condition, 20), "timed out waiting for " .. what)
end

local ended = {}
vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(event)
    local value = event.data.params.value
    if type(value) == "table" and value.kind == "end" then
      ended[event.data.params.token] = value.message or ""
    end
  end,
})
local notes = {}
vim.notify = function(message) table.insert(notes, message) end

local filescout = require("filescout")
filescout.setup({ cmd = { python, "-m", "filescout", "serve" }, settings = { logLevel = "warning" },
                  autostart = true })

-- Opening a file starts the server for its project root and attaches the buffer.
vim.cmd.edit(root .. "/src/shop/cart.py")
wait(function() return filescout.client(root) ~= nil end, "the client to start")
local client = filescout.client(root)
wait(function() return next(ended) ~= nil end, "indexing progress to end (LspProgress)")
local _, message = next(ended)
check(message:find("indexed"), "the indexing progress ends with a summary: " .. message)
check(vim.lsp.buf_is_attached(0, client.id), "the opened buffer is attached")

-- The Lua API streams stages and ends with the answer.
local updates, final = {}, nil
filescout.find("refund a stripe charge", function(items, info)
  table.insert(updates, info)
  if info.done then final = { items = items, info = info } end
end, { limit = 3 })
wait(function() return final ~= nil end, "the find answer")
check(#updates >= 2, "a streamed stage before the answer")
check(updates[1].stage == "prefilter" and not updates[1].done, "the first update is the prefilter stage")
check(final.items[1].path == "src/shop/payments/stripe_gateway.py", "stripe gateway first: " .. vim.inspect(final.items[1]))
check(final.items[1].filename == root .. "/src/shop/payments/stripe_gateway.py", "items carry absolute filenames")
check(final.info.stages[1] == "prefilter" and not final.info.degraded, "answer from the prefilter stage")

-- :FilescoutFind fills the quickfix list.
vim.cmd("FilescoutFind shopping cart discount totals")
wait(function()
  local list = vim.fn.getqflist({ title = 1, items = 1 })
  return #list.items > 0 and not list.title:find("…")
end, "the quickfix list")
local list = vim.fn.getqflist({ title = 1, items = 1 })
check(list.title == "filescout: shopping cart discount totals", "quickfix title: " .. list.title)
check(vim.api.nvim_buf_get_name(list.items[1].bufnr):find("src/shop/cart.py$"), "cart.py first in quickfix")
check(list.items[1].text:find("^%[prefilter"), "quickfix text shows the stage: " .. list.items[1].text)

-- Reindex and status through workspace/executeCommand.
local reindexed
filescout.reindex(function(result) reindexed = result end)
wait(function() return reindexed ~= nil end, "reindex")
check(reindexed.files == 5, "reindex counts the workspace: " .. vim.inspect(reindexed))
local status
filescout.status(function(result) status = result end)
wait(function() return status ~= nil end, "status")
check(status.role == "writer" and status.files == 5, "status: " .. vim.inspect(status))
check(notes[#notes]:find("5 files"), "status is shown to the user: " .. tostring(notes[#notes]))

-- Cancelling a request leaves the client usable.
local cancelled = filescout.find("checkout address", function() end)
cancelled()
local again
filescout.find("checkout address validation", function(items, info) if info.done then again = items end end)
wait(function() return again ~= nil end, "a request after a cancelled one")
check(again[1].path == "web/checkoutForm.ts", "checkout form found: " .. vim.inspect(again[1]))

client:stop()
wait(function() return client:is_stopped() end, "the server to stop", 10000)
print("neovim plugin: all checks passed")
vim.cmd("qa!")
