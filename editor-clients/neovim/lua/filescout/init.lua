-- filescout for Neovim: starts the filescout server per project root through the built-in LSP
-- client, and asks it which files matter for a question.
--
--   require("filescout").setup({ settings = { model = { model = "qwen2.5-coder:7b",
--     baseUrl = "http://127.0.0.1:11434/v1" } } })
--
-- Commands: :FilescoutFind {question}, :FilescoutReindex, :FilescoutStatus.
-- Lua API for chat plugins:
--   require("filescout").find(question, on_result, opts)   -- ranked items, streamed by stage
--   require("filescout").prompt(question, on_block, opts)  -- one prompt-ready block of text;
--     on_block(block, err, result); opts.tokens (budget), opts.limit, opts.scope
--   require("filescout").prompt_sync(question, opts)       -- the same, waiting (opts.timeout,
--     ms); returns the block, or nil and a message
--   require("filescout").overview(on_block, opts)          -- the workspace as an annotated
--     tree, one block; opts.tokens (default 2000), opts.query, opts.globs, opts.paths
--   require("filescout").overview_sync(opts)               -- the same, waiting; returns the
--     block, or nil and a message

local M = {}

local defaults = {
  cmd = { "filescout", "serve" },
  root_markers = { ".git", "filescout.toml", ".hg", "pyproject.toml", "package.json" },
  settings = {}, -- sent as initializationOptions (see protocol/PROTOCOL.md, "Configuration")
  autostart = true, -- start for the root of every file buffer opened
  limit = 20,
}

M.config = vim.deepcopy(defaults)

local partial_handlers = {} -- partialResultToken -> function(items)
local token_counter = 0

local function new_token(kind)
  token_counter = token_counter + 1
  return string.format("filescout-nvim-%s-%d-%d", kind, vim.uv.hrtime() % 1000000, token_counter)
end

-- Partial results arrive as $/progress notifications whose value is a list; work-done progress
-- (indexing) goes on to Neovim's own handler, which feeds the LspProgress event.
local function on_progress(err, result, ctx, config)
  local handler = result and partial_handlers[result.token]
  if handler and vim.islist(result.value) then
    handler(result.value)
    return
  end
  return vim.lsp.handlers["$/progress"](err, result, ctx, config)
end

local function request(client, method, params, handler)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler)
end

local function root_for(path)
  local found = vim.fs.find(M.config.root_markers, { path = path, upward = true })[1]
  return found and vim.fs.dirname(found) or nil
end

--- The running filescout client for a buffer or root (nil if none).
function M.client(root)
  local clients = vim.lsp.get_clients({ name = "filescout" })
  local name = vim.api.nvim_buf_get_name(0)
  root = root or (name ~= "" and root_for(name)) or nil
  for _, client in ipairs(clients) do
    if client.config.root_dir == (root or vim.uv.cwd()) then
      return client
    end
  end
  if root == nil and #clients == 1 then -- a scratch or quickfix buffer: the one server there is
    return clients[1]
  end
  return nil
end

--- Start (or reuse) the server for `root`; returns the client id.
function M.start(root, bufnr)
  root = root or vim.uv.cwd()
  local config = {
    name = "filescout",
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = M.config.settings,
    handlers = { ["$/progress"] = on_progress },
  }
  if bufnr then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  if vim.fn.has("nvim-0.11") == 1 then
    return vim.lsp.start(config, { attach = false })
  end
  return vim.lsp.start_client(config) -- 0.10: start without attaching a buffer
end

local function with_client(callback)
  local client = M.client()
  if not client then
    vim.notify("filescout is not running for this project (:FilescoutStart starts it)", vim.log.levels.WARN)
    return
  end
  callback(client)
end

--- Ask which files matter for `question`. `on_result(items, info)` runs for every streamed
--- stage and once more at the end (`info.done`); items are filescout RelevantItems with an
--- added `filename` (absolute path). opts: limit, scope, options (see PROTOCOL.md), client.
function M.find(question, on_result, opts)
  opts = opts or {}
  local client = opts.client or M.client()
  if not client then
    on_result({}, { done = true, degraded = true, message = "filescout is not running for this project" })
    return
  end
  local root = client.config.root_dir
  local view = { stage = nil, items = {} }
  local order = { prefilter = 0, judge = 1, final = 2 }
  local function with_filenames(items)
    for _, item in ipairs(items) do
      item.filename = root .. "/" .. item.path
    end
    return items
  end
  local function merge(batch)
    if #batch == 0 then
      return
    end
    local stage = batch[1].stage
    if view.stage == "judge" and stage == "judge" then
      vim.list_extend(view.items, batch)
      table.sort(view.items, function(a, b) return a.score > b.score end)
    elseif view.stage == nil or order[stage] >= order[view.stage] then
      view.items = batch
    else
      return
    end
    view.stage = stage
    on_result(with_filenames(view.items), { stage = stage, done = false })
  end
  local token = new_token("find")
  partial_handlers[token] = vim.schedule_wrap(merge)
  local params = {
    query = question,
    limit = opts.limit or M.config.limit,
    scope = opts.scope,
    options = opts.options,
    partialResultToken = token,
  }
  local _, request_id = request(client, "files/findRelevant", params, function(err, result)
    partial_handlers[token] = nil
    vim.schedule(function()
      if err then
        on_result(with_filenames(view.items), { done = true, degraded = true, message = err.message, error = err })
        return
      end
      if result.items and #result.items > 0 then
        view.items = result.items
        view.stage = result.items[1].stage
      end
      on_result(with_filenames(view.items), {
        stage = view.stage, done = true, stages = result.stages, degraded = result.degraded,
        message = result.message ~= vim.NIL and result.message or nil,
      })
    end)
  end)
  return function() -- cancel
    partial_handlers[token] = nil
    if request_id then
      if vim.fn.has("nvim-0.11") == 1 then client:cancel_request(request_id) else client.cancel_request(request_id) end
    end
  end
end

--- Asks `method` for a block of text (`result.prompt`): `on_block(block, err, result)` runs once.
--- `shape(result)` turns the result into the block, or nil when the server sent none (`missing`
--- says so). Returns a function that cancels the request; on_block is not called after that.
local function request_block(method, params, on_block, opts, missing, shape)
  local finished = false
  local function finish(block, err, result)
    if not finished then
      finished = true
      on_block(block, err, result)
    end
  end
  local client = opts.client or M.client()
  if not client then
    vim.schedule(function()
      finish(nil, "filescout is not running for this project (:FilescoutStart starts it)")
    end)
    return function() finished = true end
  end
  local sent, request_id = request(client, method, params, function(err, result)
    vim.schedule(function()
      if err then
        finish(nil, err.message)
      elseif type(result) ~= "table" or type(result.prompt) ~= "string" then
        finish(nil, missing)
      else
        finish(shape(client, result), nil, result)
      end
    end)
  end)
  if not sent then
    vim.schedule(function() finish(nil, "the filescout server has stopped") end)
  end
  return function() -- cancel
    if not finished then
      finished = true
      if request_id and vim.fn.has("nvim-0.11") == 1 then
        client:cancel_request(request_id)
      elseif request_id then
        client.cancel_request(request_id)
      end
    end
  end
end

--- Waits for the block `start(on_block)` asks for: returns it, or nil and a message. Past
--- `timeout` milliseconds (default 10000) the request is cancelled.
local function wait_for_block(start, timeout)
  timeout = timeout or 10000
  local answer
  local cancel = start(function(block, err)
    answer = { block = block, err = err }
  end)
  local _, status = vim.wait(timeout, function() return answer ~= nil end, 10)
  if not answer then
    cancel()
    return nil, status == -2 and "interrupted while waiting for filescout"
      or string.format("no answer from filescout within %d ms", timeout)
  end
  return answer.block, answer.err
end

--- The answer to `question` as one prompt-ready block of text (see PROTOCOL.md, "Prompt-ready
--- blocks"): `on_block(block, err, result)` runs once, with the block (a string that starts
--- with `<filescout-files`) and the FindRelevantResult it renders (items with `filename`, as
--- in M.find), or with nil and a message (no server for this project, or the server's error,
--- e.g. for a bad parameter).
--- opts: tokens (the block's budget, 200–200000, four characters a token; default the
--- server's, 4000), limit, scope, options, client. Returns a function that cancels the request;
--- on_block is not called after that.
function M.prompt(question, on_block, opts)
  opts = opts or {}
  local params = {
    query = question,
    limit = opts.limit or M.config.limit,
    scope = opts.scope,
    options = opts.options,
    prompt = opts.tokens and { tokens = opts.tokens } or vim.empty_dict(),
  }
  return request_block("files/findRelevant", params, on_block, opts,
    "the filescout server sent no prompt block (it predates prompt-ready blocks)",
    function(client, result)
      for _, item in ipairs(result.items) do
        item.filename = client.config.root_dir .. "/" .. item.path
      end
      return result.prompt
    end)
end

--- M.prompt, waiting for the block: returns it, or nil and a message. opts as for M.prompt,
--- plus timeout (milliseconds, default 10000; past it the request is cancelled). It blocks
--- the editor while it waits, and cannot run in a fast event (a luv callback).
function M.prompt_sync(question, opts)
  opts = opts or {}
  return wait_for_block(function(on_block) return M.prompt(question, on_block, opts) end, opts.timeout)
end

--- The workspace as an annotated tree within a token budget, one block of text (see PROTOCOL.md,
--- `files/getOverview`): `on_block(block, err, result)` runs once, with the block (a string that
--- starts with `<filescout-overview`) and the OverviewResult it comes from (its `entries`, the
--- tree's lines as records), or with nil and a message.
--- opts: tokens (200–200000, default the server's, 2000), query (open the branches that matter
--- for it first), globs, paths, client. Returns a function that cancels the request; on_block is
--- not called after that.
function M.overview(on_block, opts)
  opts = opts or {}
  local params = vim.empty_dict()
  for _, name in ipairs({ "tokens", "query", "globs", "paths" }) do
    if opts[name] ~= nil then params[name] = opts[name] end
  end
  return request_block("files/getOverview", params, on_block, opts,
    "the filescout server sent no overview (it predates files/getOverview)",
    function(_, result) return result.prompt end)
end

--- M.overview, waiting for the block: returns it, or nil and a message. opts as for M.overview,
--- plus timeout (milliseconds, default 10000; past it the request is cancelled).
function M.overview_sync(opts)
  opts = opts or {}
  return wait_for_block(function(on_block) return M.overview(on_block, opts) end, opts.timeout)
end

local function quickfix_items(items)
  local entries = {}
  for _, item in ipairs(items) do
    table.insert(entries, {
      filename = item.filename,
      lnum = 1,
      col = 1,
      text = string.format("[%s %.2f] %s — %s", item.stage, item.score, item.reason, item.summary),
    })
  end
  return entries
end

--- :FilescoutFind — results into the quickfix list, refreshed as stages stream in.
function M.find_to_quickfix(question)
  local title = "filescout: " .. question
  local client = M.client()
  vim.fn.setqflist({}, " ", { title = title, items = {} })
  vim.cmd("botright copen")
  M.find(question, function(items, info)
    vim.fn.setqflist({}, "r", { title = title .. (info.done and "" or " …"), items = quickfix_items(items) })
    if info.done and info.message then
      vim.notify("filescout: " .. info.message, info.degraded and vim.log.levels.WARN or vim.log.levels.INFO)
    end
  end, { client = client })
end

--- The same, with vim.ui.select once the answer is complete.
function M.find_select(question)
  M.find(question, function(items, info)
    if not info.done then
      return
    end
    vim.ui.select(items, {
      prompt = "filescout: " .. question,
      format_item = function(item) return item.path .. " — " .. item.reason end,
    }, function(choice)
      if choice then
        vim.cmd.edit(vim.fn.fnameescape(choice.filename))
      end
    end)
  end)
end

local function command(name, arguments, callback)
  with_client(function(client)
    request(client, "workspace/executeCommand", { command = name, arguments = arguments }, function(err, result)
      vim.schedule(function()
        if err then
          vim.notify("filescout: " .. err.message, vim.log.levels.ERROR)
        elseif callback then
          callback(result)
        end
      end)
    end)
  end)
end

function M.reindex(callback)
  command("filescout.reindex", nil, function(result)
    vim.notify(string.format("filescout: %d files (%d new, %d changed, %d removed) in %d ms",
      result.files, result.added, result.changed, result.removed, result.elapsedMs))
    if callback then callback(result) end
  end)
end

function M.status(callback)
  command("filescout.status", nil, function(result)
    local counts = {}
    for name, count in pairs(result.byStatus) do
      table.insert(counts, count .. " " .. name)
    end
    table.sort(counts)
    local lines = {
      string.format("filescout %s (%s) — %s", result.serverVersion, result.role, result.root),
      string.format("%d files: %s; phase %s; last scan %s", result.files, table.concat(counts, ", "),
        result.phase, result.lastScan ~= vim.NIL and result.lastScan or "never"),
      "index: " .. result.dbPath,
    }
    if result.model ~= vim.NIL and result.model.state ~= "off" then
      table.insert(lines, string.format("model %s: %s, %d tokens today, ~%d to finish", result.model.annotator,
        result.model.state, result.model.tokensToday, result.model.estimatedTokensToFinish))
    end
    vim.notify(table.concat(lines, "\n"))
    if callback then callback(result) end
  end)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  local group = vim.api.nvim_create_augroup("filescout", { clear = true })
  if M.config.autostart then
    vim.api.nvim_create_autocmd("BufReadPost", {
      group = group,
      callback = function(args)
        local name = vim.api.nvim_buf_get_name(args.buf)
        if name ~= "" and vim.bo[args.buf].buftype == "" then
          local root = root_for(name)
          if root then
            M.start(root, args.buf)
          end
        end
      end,
    })
  end
end

return M
