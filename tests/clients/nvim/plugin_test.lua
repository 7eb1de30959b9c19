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

-- The prompt-ready block, through the callback.
local answered, block, block_err, block_result = false, nil, nil, nil
filescout.prompt("refund a stripe charge", function(text, err, result)
  answered, block, block_err, block_result = true, text, err, result
end, { limit = 5 })
wait(function() return answered end, "the prompt block")
check(block_err == nil and type(block) == "string", "a block, no error: " .. tostring(block_err))
check(vim.startswith(block, "<filescout-files"), "the block opens with its tag: " .. block)
check(vim.endswith(vim.trim(block), "</filescout-files>"), "the block closes with its tag: " .. block)
check(block:find("1. src/shop/payments/stripe_gateway.py", 1, true), "stripe gateway ranked first: " .. block)
check(block_result.items[1].filename == root .. "/src/shop/payments/stripe_gateway.py",
  "the result comes with the block: " .. vim.inspect(block_result.items[1]))

-- Waiting for it, with the default budget and with one the whole answer does not fit in
-- (four characters a token).
local function entries(text)
  local count = 0
  for _ in text:gmatch("\n%d+%. ") do count = count + 1 end
  return count
end
-- A question many files answer, so that 200 tokens cannot hold them all.
local question = "shopping cart discount totals, checkout address, stripe refunds"
local whole, whole_err = filescout.prompt_sync(question, { limit = 10 })
check(whole and whole:find("1. src/shop/cart.py", 1, true), "the cart first: " .. tostring(whole or whole_err))
local small, small_err = filescout.prompt_sync(question, { limit = 10, tokens = 200 })
check(small ~= nil, "a block within 200 tokens: " .. tostring(small_err))
check(vim.fn.strchars(small) <= 200 * 4,
  "the block stays within 200 tokens: " .. vim.fn.strchars(small) .. " characters")
check(vim.startswith(small, "<filescout-files") and small:find("1. src/shop/cart.py", 1, true),
  "the small block still leads with the cart: " .. small)
check(entries(small) >= 1 and entries(small) < entries(whole), "the small block shows fewer files: " .. small)
check(small:find("did not fit in 200 tokens", 1, true), "the small block names what it left out: " .. small)

-- Errors: the server's message for a bad parameter; a request that does not answer in time
-- is cancelled, and the client stays usable.
local none, none_err = filescout.prompt_sync("cart", { tokens = 50 })
check(none == nil and vim.startswith(none_err or "", "invalid params for files/findRelevant: prompt.tokens"),
  "a bad budget is the server's error: " .. tostring(none_err))
local late, late_err = filescout.prompt_sync("cart", { timeout = 0 })
check(late == nil and late_err == "no answer from filescout within 0 ms", "a timeout: " .. tostring(late_err))
local after = filescout.prompt_sync("checkout address validation", { limit = 1 })
check(after and after:find("1. web/checkoutForm.ts", 1, true), "a block after a timeout: " .. tostring(after))

-- The workspace overview: the annotated tree as one block, through the callback and waiting.
local overview_done, tree, tree_err, tree_result = false, nil, nil, nil
filescout.overview(function(text, err, result)
  overview_done, tree, tree_err, tree_result = true, text, err, result
end)
wait(function() return overview_done end, "the overview block")
check(tree_err == nil and type(tree) == "string", "an overview, no error: " .. tostring(tree_err))
check(vim.startswith(tree, "<filescout-overview"), "the overview opens with its tag: " .. tree)
check(vim.endswith(tree, "</filescout-overview>"), "the overview closes with its tag: " .. tree)
check(tree:find("  src/shop/ — ", 1, true), "directories carry their rolled-up line: " .. tree)
check(tree_result.entries[1].path == "." and tree_result.files == tree_result.entries[1].files,
  "the result comes with the block: " .. vim.inspect(tree_result.entries[1]))
local focused, focused_err = filescout.overview_sync({ tokens = 300, query = "refund a stripe charge" })
check(focused and focused:find("stripe_gateway.py", 1, true),
  "a focused overview opens the question's branch: " .. tostring(focused or focused_err))
local scoped = filescout.overview_sync({ paths = { "web" } })
check(scoped and scoped:find("checkoutForm.ts", 1, true) and not scoped:find("cart.py", 1, true),
  "a scoped overview: " .. tostring(scoped))
local bad, bad_err = filescout.overview_sync({ tokens = 50 })
check(bad == nil and vim.startswith(bad_err or "", "invalid params for files/getOverview: tokens"),
  "a bad budget is the server's error: " .. tostring(bad_err))

-- A command in a terminal beside the editor asks the editor's server, through its door.
local asked = vim.system({ python, "-m", "filescout", "--log-level", "info", "find", root,
  "refund a stripe charge", "--json", "--limit", "1" }, { text = true }):wait(60000)
check(asked.code == 0, "the terminal's find answers: " .. tostring(asked.stderr))
check(asked.stderr:find("answered by the process that keeps this index", 1, true),
  "the editor's server answered the terminal: " .. asked.stderr)
local answer = vim.json.decode(asked.stdout)
check(answer.items[1].path == "src/shop/payments/stripe_gateway.py", "the terminal's answer: " .. asked.stdout)

client:stop()
wait(function() return client:is_stopped() end, "the server to stop", 10000)
wait(function() return filescout.client(root) == nil end, "the client to go", 10000)
local stopped, stopped_err = filescout.prompt_sync("cart")
check(stopped == nil and stopped_err:find("not running"), "no server, a clear error: " .. tostring(stopped_err))
print("neovim plugin: all checks passed")
vim.cmd("qa!")
